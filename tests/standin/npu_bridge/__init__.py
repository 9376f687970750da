"""TEST DOUBLE of the Ascend TensorFlow adapter's npu_bridge package (tests only, never shipped).

``from npu_bridge.npu_init import *`` gives the names migrated TF 1.x code uses, mapped onto
TensorFlow on the CPU; options are validated and sessions must carry the NpuOptimizer entry
(see msft_tf_standin.py next to this package).
"""

"""TEST DOUBLE of ``npu_device.compat.v1.npu_init``: ``from npu_device.compat.v1.npu_init import
*`` gives TF 2.x code running through tf.compat.v1 the names ``npu_bridge.npu_init`` gives TF 1.x
code (npu_config_proto, NPURunConfig, ...), with the same session gate."""

from __future__ import annotations

from npu_bridge.npu_init import *  # noqa: F403 - the same names, as the adapter exports them
from npu_bridge.npu_init import __all__  # noqa: F401

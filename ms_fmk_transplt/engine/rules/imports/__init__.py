"""imports.*: `import torch_npu` once per changed file, and imports from torch.cuda."""

"""cuda_only.*: code that only runs on a CUDA device (guards, dispatch keys, skip decorators):
kept, guarded or reported."""

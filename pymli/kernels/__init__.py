"""MLI kernels as pure NumPy functions over arrays and keyword scalars (no Tensor, no cfg)."""

"""Pure NumPy kernels: no I/O, no state beyond their arguments."""

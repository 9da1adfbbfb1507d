"""mnemonist: long-term memory for AI agents."""

import os

# One BLAS thread: on a busy 2-core machine a threaded 10k×384 matrix-vector product took
# 16 ms against 0.8 ms single-threaded (measured by `mnemonist bench scale`). Set before NumPy
# loads; a user's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

__version__ = "0.1.0"

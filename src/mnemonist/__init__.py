"""mnemonist: long-term memory for AI agents."""

import os

# One BLAS thread: on a busy 2-core machine a threaded 10k×384 matrix-vector product took
# 16 ms against 0.8 ms single-threaded (measured by `mnemonist bench scale`). Set before NumPy
# loads; a user's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

# onnxruntime's telemetry off, set before it can load: its import alone otherwise wrote a device
# id and an event queue to ~/.cache/Microsoft/DeveloperTools/.onnxruntime/ and a session file to
# the temporary folder, and queued events for upload (docs/security.md). Not a default: forced.
os.environ["ORT_DISABLE_TELEMETRY"] = "1"


def _fewer_malloc_arenas() -> None:
    """glibc gives each thread that allocates its own heap arena; with request threads, the
    embedder and ONNX buffers that fragments into hundreds of MiB that are never returned.
    Two arenas (the daemon has two busy threads at most) keep the resident size flat."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(-8, 2)  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass


_fewer_malloc_arenas()

__version__ = "0.1.0"

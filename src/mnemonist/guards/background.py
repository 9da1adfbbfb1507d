"""Background threads yield the CPU to requests.

On two cores a request competes with every background thread for a CPU, not only for the
interpreter lock: the embedder's model, the sparse encoder, the consolidation pass's vector
searches. Each such thread lowers its own scheduling priority once, when it starts (Linux
`setpriority` on the thread id; elsewhere, or where it is refused, nothing changes), so a
request that becomes runnable is scheduled first and background work catches up when the
daemon is idle. A priority once lowered is never raised again (that needs privileges), so
only a thread that does background work and nothing else calls this.
"""

from __future__ import annotations

import contextlib
import os
import threading

#: the nice value background threads take (requests run at the process's own, usually 0)
LOW_PRIORITY = 10


def lower_thread_priority() -> None:
    """Lower the calling thread's priority to `LOW_PRIORITY` (a no-op where not possible)."""
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), LOW_PRIORITY)

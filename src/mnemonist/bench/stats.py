"""Latency statistics, process memory readers and a small progress reporter (stderr)."""

from __future__ import annotations

import math
import os
import resource
import sys
import time
from array import array
from collections.abc import Sequence
from typing import Any, TextIO

# --- latency ------------------------------------------------------------------------------


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0-100) with linear interpolation between closest ranks (NumPy's
    default method). NaN for an empty sequence."""
    if not 0.0 <= p <= 100.0:
        raise ValueError(f"percentile {p} is outside 0..100")
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100.0
    lo = math.floor(rank)
    hi = math.ceil(rank)
    if lo == hi:
        return float(ordered[lo])
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (rank - lo)


def summarize_ms(seconds: Sequence[float]) -> dict[str, float | int]:
    """count, mean, min, p50, p95, p99 and max of durations given in seconds, in ms."""
    if not seconds:
        return {"count": 0}
    ms = sorted(s * 1000.0 for s in seconds)
    return {
        "count": len(ms),
        "mean": round(sum(ms) / len(ms), 3),
        "min": round(ms[0], 3),
        "p50": round(percentile(ms, 50), 3),
        "p95": round(percentile(ms, 95), 3),
        "p99": round(percentile(ms, 99), 3),
        "max": round(ms[-1], 3),
    }


# --- memory -------------------------------------------------------------------------------


def _proc_status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])  # "VmRSS:   123456 kB"
    except (OSError, ValueError, IndexError):
        return None
    return None


def _maxrss_mib() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # kilobytes on Linux, bytes on macOS
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def rss_mib() -> float:
    """Resident set size now (VmRSS), MiB; the peak from getrusage where /proc is missing."""
    kb = _proc_status_kb("VmRSS")
    return kb / 1024 if kb is not None else _maxrss_mib()


def peak_rss_mib() -> float:
    """Peak resident set size (VmHWM; since the last `reset_peak_rss()`), MiB."""
    kb = _proc_status_kb("VmHWM")
    return kb / 1024 if kb is not None else _maxrss_mib()


def rss_breakdown_mib() -> dict[str, float]:
    """RssAnon (heap, arenas), RssFile (mapped files: libraries, model) and RssShmem, MiB;
    empty where /proc is missing."""
    out: dict[str, float] = {}
    for field in ("RssAnon", "RssFile", "RssShmem"):
        kb = _proc_status_kb(field)
        if kb is not None:
            out[field.lower().replace("rss", "")] = round(kb / 1024, 1)
    return out


def rss_source() -> str:
    return "/proc/self/status" if _proc_status_kb("VmRSS") is not None else "getrusage"


def reset_peak_rss() -> bool:
    """Reset VmHWM to the current RSS (Linux: write 5 to /proc/self/clear_refs), so that the
    peak of one phase is not the peak of an earlier one. False where that is not possible
    (the getrusage peak cannot be reset)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
    except OSError:
        return False
    return True


# --- scheduling -----------------------------------------------------------------------


def thread_sched() -> tuple[float, float] | None:
    """(seconds on a CPU, seconds runnable but waiting for a CPU) of the calling thread so
    far, from Linux schedstat; None where unavailable. On a shared machine the difference
    between wall time and time on a CPU is mostly the wait for a CPU."""
    try:
        with open("/proc/thread-self/schedstat", encoding="ascii") as fh:
            on_cpu, waiting, _ = fh.read().split()
        return int(on_cpu) / 1e9, int(waiting) / 1e9
    except (OSError, ValueError):
        return None


# --- progress -----------------------------------------------------------------------------


def _clock(seconds: float) -> str:
    if not math.isfinite(seconds) or seconds < 0:
        return "--:--"
    seconds = int(seconds + 0.5)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """One progress line on stderr: a `\\r` bar on a terminal, plain lines (every 10% or 15 s)
    otherwise. Disabled: does nothing. The rate counts from `initial` (work done before)."""

    WIDTH = 24

    def __init__(
        self,
        label: str,
        total: int,
        *,
        enabled: bool = True,
        unit: str = "",
        stream: TextIO | None = None,
        initial: int = 0,
    ) -> None:
        self.label = label
        self.total = max(0, total)
        self.enabled = enabled
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.started = time.monotonic()
        self.initial = initial  # done before this bar started: not in its rate
        self.count = initial
        self._last_draw = 0.0
        self._last_step = -1
        self._done = False

    def update(self, count: int, *, force: bool = False) -> None:
        self.count = count
        if not self.enabled or self._done:
            return
        now = time.monotonic()
        if self.tty:
            if force or now - self._last_draw >= 0.1:
                self._last_draw = now
                self.stream.write("\r" + self.line(now) + "\x1b[K")
                self.stream.flush()
            return
        step = int(10 * count / self.total) if self.total else 0
        if force or step > self._last_step or now - self._last_draw >= 15.0:
            self._last_step = step
            self._last_draw = now
            self.stream.write(self.line(now) + "\n")
            self.stream.flush()

    def advance(self, n: int = 1) -> None:
        self.update(self.count + n)

    def finish(self, note: str = "") -> None:
        if not self.enabled or self._done:
            return
        self._done = True
        line = self.line(time.monotonic(), final=True) + (f"  {note}" if note else "")
        self.stream.write(("\r" + line + "\x1b[K\n") if self.tty else (line + "\n"))
        self.stream.flush()

    def line(self, now: float, *, final: bool = False) -> str:
        elapsed = max(now - self.started, 1e-9)
        rate = (self.count - self.initial) / elapsed
        frac = min(1.0, self.count / self.total) if self.total else 1.0
        filled = int(self.WIDTH * frac)
        bar = "#" * filled + "." * (self.WIDTH - filled)
        if final:
            tail = f"in {_clock(elapsed)}"
        else:
            eta = (self.total - self.count) / rate if rate > 0 else math.inf
            tail = f"ETA {_clock(eta)}"
        unit = f" {self.unit}" if self.unit else ""
        return f"{self.label} [{bar}] {self.count:,}/{self.total:,}{unit}  {rate:,.0f}/s  {tail}"


def machine() -> dict[str, object]:
    """What the numbers were measured on."""
    import platform

    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            names = (ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name"))
            model = next(names, "")
    except OSError:
        pass
    return {
        "cpu_model": model or platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


class PhaseClock:
    """Where the run's time goes: `run["phase_s"]`, wall seconds per phase in order (the
    open and model load first), each lap measured from the previous one."""

    def __init__(self, run: dict[str, Any], startup_s: float) -> None:
        self.run = run
        run["phase_s"] = {"open and model load": round(startup_s, 1)}
        self.last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.run["phase_s"][name] = round(now - self.last, 1)
        self.last = now


class SchedSample:
    """Per call: the caller thread's time on a CPU and time waiting for one (schedstat)."""

    def __init__(self) -> None:
        self.on_cpu, self.waiting = array("d"), array("d")
        self._start: tuple[float, float] | None = None

    def before(self) -> None:
        self._start = thread_sched()

    def after(self) -> None:
        end = thread_sched()
        if self._start is not None and end is not None:
            self.on_cpu.append(end[0] - self._start[0])
            self.waiting.append(end[1] - self._start[1])

    def report(self) -> dict[str, Any]:
        if not self.on_cpu:
            return {}
        return {
            "on_cpu_ms": summarize_ms(self.on_cpu),
            "waiting_for_cpu_ms": summarize_ms(self.waiting),
        }


def load_average_1m() -> float | None:
    """The machine's 1-minute load average (how busy it was: other processes slow every
    measured phase down), or None where the system does not say."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None

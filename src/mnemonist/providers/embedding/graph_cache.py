"""The local model's optimised graph, saved once and loaded as is afterwards.

Building the session from the shipped file makes onnxruntime optimise the graph (fusing the
attention and layer-norm nodes, folding constants): that pass briefly holds several copies of
the weights, and it was the largest peak of the daemon's memory (measured on the development
machine: 310 MiB high-water mark against 188 MiB resident once loaded). So the first load saves
the optimised graph into the home's cache folder (`<home>/cache/onnx/`: nothing the daemon writes
lives outside its home), and later loads read that file with
optimisation off: 210 MiB high-water mark, the same vectors bit for bit and the same speed.

The graph is saved at the "extended" level, the last level whose output is not specific to the
CPU it ran on (onnxruntime warns that the "all" level's may be); the "all" level adds only
layout changes for convolutions, which this model has none of (measured: same texts/s).
The file's name is a key over everything the graph depends on (the model's checksum, which
products stay float, the source of the rewrite that makes them integer, onnxruntime's version,
the machine), and a checksum written beside it is
verified before it is read, like the shipped model. A cache that cannot be written is no error:
the model then loads as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CACHE_ENV = "MNEMONIST_CACHE_DIR"
STALE_DAYS = 30  # a saved graph no load has read for this long is removed when one is saved


def cache_dir(home: str | os.PathLike[str] | None = None) -> Path:
    """`$MNEMONIST_CACHE_DIR`, else `<home>/cache` (the home: `home`, else `$MNEMONIST_HOME`,
    else `~/.agents`). Never `~/.cache` or `$XDG_CACHE_HOME`: everything the daemon writes
    stays under its home."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    from mnemonist.settings import home_dir

    return home_dir(home) / "cache"


def _cpu_flags() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return line.split(":", 1)[1].strip()
    return ""


def rewrite_source() -> str:
    """A digest of the code that builds the graph before onnxruntime optimises it (the
    integer-products rewrite): a change there must never load a graph saved by the old code."""
    from mnemonist.providers.embedding import int8_graph

    return hashlib.sha256(Path(int8_graph.__file__).read_bytes()).hexdigest()


def graph_key(ort: Any, model_sha256: str, variant: str, code: str = "") -> str:
    """The saved graph's name: everything the optimised graph depends on."""
    parts = [model_sha256, variant, code, ort.__version__, platform.machine(), _cpu_flags()]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:20]


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _load_saved(ort: Any, path: Path, opts: Any) -> Any | None:
    """The session from a saved graph, or None when there is none or it fails its check."""
    sums = path.with_suffix(".sha256")
    try:
        expected = sums.read_text().strip()
        if _sha256_file(path) != expected:
            return None
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        session = ort.InferenceSession(str(path), sess_options=opts,
                                       providers=["CPUExecutionProvider"])
    except Exception:  # missing, unreadable or refused by onnxruntime: build it again
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # in use: `_drop_stale` keeps it
    return session


def _drop_stale(folder: Path, keep: Path) -> None:
    """Remove the graphs no load has used for `STALE_DAYS` (saved under a key that no longer
    applies: another onnxruntime, a changed rewrite), so that they do not pile up."""
    limit = time.time() - STALE_DAYS * 86400
    for old in folder.glob("minilm-*.onnx"):
        with contextlib.suppress(OSError):
            if old != keep and old.stat().st_mtime < limit:
                old.unlink()
                old.with_suffix(".sha256").unlink(missing_ok=True)


def optimised_session(
    ort: Any, opts: Any, key: str, build: Callable[[], str | bytes],
    create: Callable[[Any, str | bytes, Any], Any], cache: Path | None = None,
) -> Any:
    """A session for the model `build()` returns: from the saved graph under `key` when there
    is a valid one, else optimised now (and saved for next time where the cache is writable).
    `create(ort, model, opts)` makes a session and reports failure in the caller's terms;
    `cache`: the cache folder (default `cache_dir()`), the graph goes to its `onnx/`."""
    folder = (cache if cache is not None else cache_dir()) / "onnx"
    path = folder / f"minilm-{key}.onnx"
    session = _load_saved(ort, path, opts)
    if session is not None:
        return session
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    partial = path.with_name(f"{path.stem}.{os.getpid()}.partial")
    saving = False
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        saving = os.access(folder, os.W_OK)
    if saving:
        opts.optimized_model_filepath = str(partial)
    model = build()
    session = create(ort, model, opts)
    del model
    if saving:
        with contextlib.suppress(OSError):
            digest = _sha256_file(partial)
            os.replace(partial, path)
            sums_partial = partial.with_suffix(".sha256")
            sums_partial.write_text(digest + "\n")
            os.replace(sums_partial, path.with_suffix(".sha256"))
        with contextlib.suppress(OSError):
            partial.unlink()
        _drop_stale(folder, path)
    return session

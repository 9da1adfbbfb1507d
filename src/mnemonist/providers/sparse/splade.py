"""SPLADE-tiny in NumPy: a 2-layer BERT masked-LM whose vocabulary logits, through
log(1 + relu(·)) and a max over the text's tokens, give each vocabulary term a weight.

No torch and no ONNX export: the model is 4.4 M parameters, and the forward pass is a few
small matrix products plus one large one (the tied decoder, 128 × 30,522), which NumPy does
as fast as a runtime would. Because log(1 + relu(x)) is monotone, the max over tokens is
taken on the raw logits and the non-linearity applied once per term (the same result, a
fraction of the work). The decoder product runs over at most `decoder_rows` token rows at a
time, which bounds its buffer (rows × 30,522 float32: 62 MB at 512) whatever the batch.
"""

from __future__ import annotations

import json
import math
import struct
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mnemonist.providers.sparse.model_files import MODEL_ID, SparseModelError, verify

LAYERS = 2
HEADS = 2
EPS = 1e-12


@dataclass(frozen=True)
class SparseVector:
    """Vocabulary term ids (ascending) and their positive weights."""

    terms: np.ndarray  # int32
    weights: np.ndarray  # float32

    def as_dict(self) -> dict[int, float]:
        return dict(zip(self.terms.tolist(), self.weights.tolist(), strict=True))


def load_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The float32 tensors of a safetensors file (its format: u64 header length, JSON header,
    raw little-endian data)."""
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    data = memoryview(raw)[8 + n :]
    out: dict[str, np.ndarray] = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        if spec["dtype"] != "F32":
            raise SparseModelError(f"{path}: tensor {name} is {spec['dtype']}, expected F32")
        a, b = spec["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype="<f4").reshape(spec["shape"]).copy()
    return out


def _layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + EPS) * gamma + beta


def _erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz–Stegun 7.1.26 (absolute error ≤ 1.5e-7): NumPy has no erf."""
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t
            + 0.254829592) * t
    return (np.sign(x) * (1.0 - poly * np.exp(-a * a))).astype(np.float32)


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / np.float32(math.sqrt(2.0))))


class SpladeEncoder:
    """Loads lazily (first encode) from `folder`, verified against the pinned hashes."""

    model_id = MODEL_ID

    def __init__(self, folder: Path, *, max_tokens: int = 256, decoder_rows: int = 512) -> None:
        self.folder = Path(folder)
        self.max_tokens = max_tokens
        self.decoder_rows = decoder_rows
        self._w: dict[str, np.ndarray] | None = None
        self._tok: Any = None
        self._decoder: np.ndarray | None = None
        self._lock = threading.Lock()

    def load(self) -> None:
        with self._lock:
            if self._w is not None:
                return
            from tokenizers import Tokenizer

            verify(self.folder)
            w = load_safetensors(self.folder / "model.safetensors")
            tok = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
            tok.enable_truncation(self.max_tokens)
            tok.enable_padding(pad_id=0, pad_token="[PAD]")
            self._decoder = np.ascontiguousarray(w["bert.embeddings.word_embeddings.weight"].T)
            self._tok = tok
            self._w = w

    @property
    def vocab_size(self) -> int:
        self.load()
        assert self._decoder is not None
        return int(self._decoder.shape[1])

    def token_ids(self, text: str) -> list[int]:
        """The word-piece ids of `text` without [CLS]/[SEP] (tests, diagnostics)."""
        self.load()
        return list(self._tok.encode(text, add_special_tokens=False).ids)

    def term_of(self, term_id: int) -> str:
        self.load()
        return str(self._tok.id_to_token(term_id))

    def encode(self, texts: list[str]) -> list[SparseVector]:
        """One sparse vector per text (an empty text gets the [CLS]/[SEP] expansion)."""
        if not texts:
            return []
        self.load()
        encs = self._tok.encode_batch(texts)
        ids = np.array([e.ids for e in encs], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encs], dtype=np.float32)
        hidden = self._encoder(ids, mask)
        return self._expand(hidden, mask)

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        w = self._w
        assert w is not None
        return x @ w[name + ".weight"].T + w[name + ".bias"]

    def _encoder(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w = self._w
        assert w is not None
        b, n = ids.shape
        x = (w["bert.embeddings.word_embeddings.weight"][ids]
             + w["bert.embeddings.position_embeddings.weight"][:n]
             + w["bert.embeddings.token_type_embeddings.weight"][0])
        x = _layer_norm(x, w["bert.embeddings.LayerNorm.gamma"],
                        w["bert.embeddings.LayerNorm.beta"])
        d = x.shape[-1] // HEADS
        neg = ((1.0 - mask)[:, None, None, :] * np.float32(-1e9)).astype(np.float32)
        scale = np.float32(1.0 / math.sqrt(d))
        for layer in range(LAYERS):
            p = f"bert.encoder.layer.{layer}."

            q, k, v = (self._linear(x, p + f"attention.self.{name}")
                       .reshape(b, n, HEADS, d).transpose(0, 2, 1, 3)
                       for name in ("query", "key", "value"))
            s = q @ k.transpose(0, 1, 3, 2) * scale + neg
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            c = (s @ v).transpose(0, 2, 1, 3).reshape(b, n, HEADS * d)
            x = _layer_norm(self._linear(c, p + "attention.output.dense") + x,
                            w[p + "attention.output.LayerNorm.gamma"],
                            w[p + "attention.output.LayerNorm.beta"])
            h = _gelu(self._linear(x, p + "intermediate.dense"))
            x = _layer_norm(self._linear(h, p + "output.dense") + x,
                            w[p + "output.LayerNorm.gamma"], w[p + "output.LayerNorm.beta"])
        t = _gelu(self._linear(x, "cls.predictions.transform.dense"))
        return _layer_norm(t, w["cls.predictions.transform.LayerNorm.gamma"],
                           w["cls.predictions.transform.LayerNorm.beta"])

    def _expand(self, hidden: np.ndarray, mask: np.ndarray) -> list[SparseVector]:
        """Max over each text's real tokens of the vocabulary logits, then log1p(relu). The
        real tokens of all texts go through the decoder together, `decoder_rows` at a time."""
        w, dec = self._w, self._decoder
        assert w is not None and dec is not None
        lengths = mask.sum(1).astype(np.int64)
        rows = hidden[mask > 0]  # (sum of lengths, hidden), text after text
        owner = np.repeat(np.arange(len(lengths)), lengths)
        best = np.full((len(lengths), dec.shape[1]), -np.inf, dtype=np.float32)
        for start in range(0, len(rows), self.decoder_rows):
            logits = rows[start : start + self.decoder_rows] @ dec
            who = owner[start : start + self.decoder_rows]
            cuts = np.flatnonzero(np.r_[True, who[1:] != who[:-1]])
            seg = np.maximum.reduceat(logits, cuts, axis=0)
            best[who[cuts]] = np.maximum(best[who[cuts]], seg)
        values = np.log1p(np.maximum(best + w["cls.predictions.bias"], 0.0))
        out: list[SparseVector] = []
        for row in values:
            terms = np.flatnonzero(row > 0).astype(np.int32)
            out.append(SparseVector(terms, row[terms].astype(np.float32)))
        return out

"""Pseudo-relevance feedback without an LLM: the first round's best candidates reshape the
query for a second look.

- **Dense (Rocchio)**: the query vector plus `weight` × the mean vector of the top `depth`
  fused candidates, normalised. The vector leg then ranks with a query that leans towards
  what both legs agreed on first, which pulls in turns phrased like the evidence rather than
  like the question.
- **Term expansion (RM3-style)**: the words the top candidates share that the query does not
  say, weighted by the candidates' fused scores; the keyword leg runs again with them added.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import numpy as np

from mnemonist.search.fusion import Fused
from mnemonist.search.vector_index import VectorIndex
from mnemonist.store import recall_reads
from mnemonist.text.tokens import content_tokens

MIN_TERM_LENGTH = 3


def top_seqs(fused: Sequence[Fused], depth: int) -> list[int]:
    """The `depth` best candidates (ties: the later memory first, as recall orders them)."""
    ranked = sorted(fused, key=lambda f: (-f.score, -f.seq))
    return [f.seq for f in ranked[:depth]]


def rocchio(
    index: VectorIndex, qvec: np.ndarray, seqs: Sequence[int], weight: float
) -> np.ndarray | None:
    """normalise(q + weight · mean(vectors of seqs)); None when none of them is indexed."""
    vectors = [v for v in (index.vector(s) for s in seqs) if v is not None]
    if not vectors or weight <= 0:
        return None
    q = np.asarray(qvec, dtype=np.float32)
    moved = q + weight * np.mean(np.stack(vectors), axis=0)
    norm = float(np.linalg.norm(moved))
    return (moved / norm).astype(np.float32) if norm > 0 else None


def expansion_terms(
    conn: sqlite3.Connection, query: str, fused: Sequence[Fused], depth: int, count: int
) -> list[str]:
    """Up to `count` words of the top `depth` candidates that the query lacks: each word
    scores the sum, over the candidates holding it, of the candidate's fused score; a word
    in one candidate only needs the best candidate to hold it (a name the answer turn says
    once is the usual second hop)."""
    if count <= 0 or depth <= 0:
        return []
    ranked = sorted(fused, key=lambda f: (-f.score, -f.seq))[:depth]
    if not ranked:
        return []
    weight = {f.seq: f.score for f in ranked}
    rows = recall_reads.contents(conn, list(weight))
    asked = set(content_tokens(query))
    score: dict[str, float] = {}
    seen_in: dict[str, int] = {}
    for seq, content in rows:
        for term in content_tokens(content or ""):
            if term in asked or len(term) < MIN_TERM_LENGTH or term.isdigit():
                continue
            score[term] = score.get(term, 0.0) + weight[seq]
            seen_in[term] = seen_in.get(term, 0) + 1
    best = ranked[0].seq
    best_terms = {t for s, c in rows if s == best for t in content_tokens(c or "")}
    kept = [t for t in score if seen_in[t] > 1 or t in best_terms]
    kept.sort(key=lambda t: (-score[t], t))
    return kept[:count]

"""The learned ranker's training pairs and the home's adapted model (migration 26).

A pair says: for this query, this memory helped (label 1) or did not (0), learned from
`source` — an explicit rating (`explicit`), a recall followed by reading the memory
(`opened`), a memory the session went on to use (`used`) or one it was handed and left
(`ignored`). It keeps the ranker's features of the memory for that query, so the home's own
ranker can be fitted on it, and the query's vector, so a later query in other words finds it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mnemonist.model.memory import utcnow
from mnemonist.store.row_ids import time_ordered_id

SOURCES = ("explicit", "opened", "used", "ignored")
#: how much a pair of each source counts when the home's ranker is fitted: a rating is the
#: clearest word; a memory handed over and never come back to may still have been right
WEIGHTS = {"explicit": 1.0, "opened": 0.5, "used": 0.5, "ignored": 0.2}
#: one pair in this many is held back (by its query's key): the adapted ranker is judged on
#: those and never fitted on them
HELD_OUT_EVERY = 4


@dataclass(frozen=True)
class Pair:
    memory_id: str
    query: str
    query_key: str
    label: float
    source: str
    features: Sequence[float]
    feature_set: str
    query_vector: np.ndarray | None
    project: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    session_key: str | None = None


def held_out(query_key: str) -> bool:
    """Whether the pairs of this query are held back (the same answer for every pair of it)."""
    return int(hashlib.sha256(query_key.encode()).hexdigest()[:8], 16) % HELD_OUT_EVERY == 0


def add(conn: sqlite3.Connection, pair: Pair) -> str:
    if pair.source not in SOURCES:
        raise ValueError(f"unknown pair source {pair.source!r}")
    pid = time_ordered_id()
    vector = (None if pair.query_vector is None
              else np.asarray(pair.query_vector, dtype=np.float32).tobytes())
    conn.execute(
        "INSERT INTO predictor_pairs (id, created_at, memory_id, query, query_key, label,"
        " source, features, feature_set, query_vector, held_out, project, user_id, agent_id,"
        " session_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (pid, utcnow(), pair.memory_id, pair.query, pair.query_key, float(pair.label),
         pair.source, json.dumps([round(float(v), 6) for v in pair.features]),
         pair.feature_set, vector, int(held_out(pair.query_key)), pair.project,
         pair.user_id, pair.agent_id, pair.session_key))
    return pid


@dataclass(frozen=True)
class Labelled:
    x: np.ndarray  # (pairs, features)
    y: np.ndarray  # (pairs,) labels
    held: np.ndarray  # (pairs,) bool: held back
    weight: np.ndarray  # (pairs,) the weight of each pair's source (`WEIGHTS`)
    sources: list[str]
    queries: list[str]  # each pair's query key: pairs of one query are ranked together


def training(conn: sqlite3.Connection, feature_set: str, n_features: int) -> Labelled:
    """Every pair of this feature set, oldest first."""
    rows = conn.execute(
        "SELECT features, label, held_out, source, query_key FROM predictor_pairs"
        " WHERE feature_set = ? ORDER BY created_at, id", (feature_set,)).fetchall()
    xs, ys, held, sources, keys = [], [], [], [], []
    for features, label, hold, source, key in rows:
        values = json.loads(features)
        if len(values) != n_features:
            continue
        xs.append(values)
        ys.append(float(label))
        held.append(bool(hold))
        sources.append(source)
        keys.append(key)
    x = np.asarray(xs, dtype=np.float64).reshape(len(xs), n_features)
    weight = np.asarray([WEIGHTS.get(s, 1.0) for s in sources])
    return Labelled(x, np.asarray(ys), np.asarray(held, dtype=bool), weight, sources, keys)


def for_memories(conn: sqlite3.Connection, memory_ids: Sequence[str], dimensions: int
                 ) -> list[tuple[str, float, float, np.ndarray]]:
    """(memory id, label, weight of its source, query vector) of the pairs of these memories
    that have a vector of the index's dimensions."""
    out: list[tuple[str, float, float, np.ndarray]] = []
    ids = list(dict.fromkeys(memory_ids))
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ", ".join("?" for _ in chunk)
        for mid, label, source, blob in conn.execute(
                f"SELECT memory_id, label, source, query_vector FROM predictor_pairs"
                f" WHERE memory_id IN ({marks}) AND query_vector IS NOT NULL", chunk):
            vec = np.frombuffer(bytes(blob), dtype=np.float32)
            if vec.shape == (dimensions,):
                out.append((mid, float(label), WEIGHTS.get(source, 1.0), vec))
    return out


def counts(conn: sqlite3.Connection) -> dict[str, int]:
    """Pairs by source, and how many are held back."""
    out = {s: 0 for s in SOURCES}
    for source, n in conn.execute(
            "SELECT source, COUNT(*) FROM predictor_pairs GROUP BY source"):
        out[source] = int(n)
    out["held_out"] = int(conn.execute(
        "SELECT COUNT(*) FROM predictor_pairs WHERE held_out = 1").fetchone()[0])
    return out


def read_state(conn: sqlite3.Connection, name: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT body FROM predictor_state WHERE name = ?", (name,)).fetchone()
    return json.loads(row[0]) if row else None


def write_state(conn: sqlite3.Connection, name: str, body: dict[str, Any]) -> None:
    conn.execute(
        "INSERT INTO predictor_state (name, body, updated_at) VALUES (?, ?, ?)"
        " ON CONFLICT (name) DO UPDATE SET body = excluded.body,"
        " updated_at = excluded.updated_at", (name, json.dumps(body), utcnow()))

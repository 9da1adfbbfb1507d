"""The ranker recall uses in this home: the shipped one, or the shipped one with the home's own
trees when the guard says they beat it (search/adaptation.py), and the feedback paths.

Kept in the database (`predictor_state`, name `local`), so a restart, and every daemon of one
PostgreSQL store, uses the same adapted ranker. Refitted in the background once
`predictor.retrain_every` new pairs arrived, or on demand (`POST /api/predictor/train`).
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import numpy as np

from mnemonist.model.answers_graph import PredictorStatus, PredictorTrained
from mnemonist.model.config_predictor import PredictorConfig
from mnemonist.search import adaptation
from mnemonist.search.relevance import FEATURES, RelevanceModel
from mnemonist.search.trees import TreeEnsemble, TreeError
from mnemonist.store import predictor_pairs
from mnemonist.store.db import Database

log = logging.getLogger(__name__)

#: names the feature list a pair was recorded with: pairs of another list are not fitted on
FEATURE_SET = hashlib.sha256(",".join(FEATURES).encode()).hexdigest()[:16]
STATE = "local"


class HomeRanker:
    def __init__(self, db: Database, config: Callable[[], PredictorConfig],
                 shipped: Callable[[], RelevanceModel | None]) -> None:
        self.db = db
        self.config = config
        self.shipped = shipped
        self._lock = threading.Lock()
        self._training = threading.Lock()
        self._local: TreeEnsemble | None = None
        self._check: adaptation.Check | None = None
        self._combined: RelevanceModel | None = None
        self._combined_of: int | None = None
        self.new_pairs = 0
        self._load()

    # -- what recall reads ---------------------------------------------------------------
    def model(self) -> RelevanceModel | None:
        """The ranker recall uses now."""
        shipped = self.shipped()
        if shipped is None:
            return None
        with self._lock:
            local, check = self._local, self._check
        cfg = self.config()
        if local is None or check is None or not (check.active and check.trusted
                                                  and cfg.adapt):
            return shipped
        if self._combined is None or self._combined_of != id(local):
            try:
                combined = shipped.with_hit(shipped.hit.extended(local))
            except TreeError as exc:  # a local model of another shape: the shipped one
                log.warning("home ranker unusable: %s", exc)
                return shipped
            self._combined, self._combined_of = combined, id(local)
        return self._combined

    def paths(self, conn: sqlite3.Connection, memory_ids: list[str],
              query_vector: np.ndarray | None) -> dict[str, float]:
        """The feedback paths of these memories for this query ({} when off or untrusted)."""
        cfg = self.config()
        if query_vector is None or not cfg.adapt or cfg.feedback_weight <= 0 or not memory_ids:
            return {}
        with self._lock:
            check = self._check
        if check is not None and not check.trusted:
            return {}
        rated = predictor_pairs.for_memories(conn, memory_ids, int(query_vector.shape[0]))
        return adaptation.feedback_paths(query_vector, rated, cfg.feedback_similarity)

    # -- learning --------------------------------------------------------------------------
    def added(self) -> None:
        """A pair was recorded: refit in the background once enough new ones arrived."""
        self.new_pairs += 1
        if self.new_pairs >= self.config().retrain_every and not self._training.locked():
            threading.Thread(target=self.train, name="mnemonist-ranker-fit",
                             daemon=True).start()

    def train(self) -> PredictorTrained:
        """Fit the home's trees on its pairs, judge them, keep the result."""
        shipped = self.shipped()
        if shipped is None:
            return {"trained": False, "reason": "the shipped ranker is unavailable"}
        with self._training:
            self.new_pairs = 0
            cfg = self.config()
            data = predictor_pairs.training(self.db.reader(), FEATURE_SET, len(FEATURES))
            local, check = adaptation.adapt(shipped, data, cfg)
            body: dict[str, Any] = {
                "feature_set": FEATURE_SET, "check": check.to_json(),
                "trees": local.to_json() if local is not None else None,
                "trained_at": datetime.now(UTC).isoformat(timespec="seconds")}
            with self.db.write_tx() as conn:
                predictor_pairs.write_state(conn, STATE, body)
            with self._lock:
                self._local, self._check = local, check
            return {"trained": True, "check": body["check"],
                    "trained_at": body["trained_at"]}

    def forget(self) -> None:
        """Drop the adapted ranker held in memory (after its pairs and state were removed)."""
        with self._lock:
            self._local, self._check = None, None
            self._combined, self._combined_of = None, None
        self.new_pairs = 0

    def status(self) -> PredictorStatus:
        self._load()
        with self._lock:
            check = self._check
        counts = predictor_pairs.counts(self.db.reader())
        state = predictor_pairs.read_state(self.db.reader(), STATE) or {}
        model = self.model()
        return {
            "ranker": ("home" if model is not None and model is not self.shipped() else
                       "shipped" if model is not None else "unavailable"),
            "pairs": counts,
            "new_pairs": self.new_pairs,
            "check": check.to_json() if check is not None else None,
            "trained_at": state.get("trained_at"),
            "feature_set": FEATURE_SET,
        }

    def _load(self) -> None:
        """The adapted ranker the database holds (another daemon may have refitted it)."""
        try:
            state = predictor_pairs.read_state(self.db.reader(), STATE)
        except sqlite3.Error:  # a store not migrated yet
            return
        if not state or state.get("feature_set") != FEATURE_SET:
            return
        try:
            check = adaptation.Check(**state["check"])
            trees = state.get("trees")
            local = TreeEnsemble.from_json(trees, len(FEATURES)) if trees else None
        except (KeyError, TypeError, ValueError) as exc:
            log.warning("stored home ranker unreadable, using the shipped one: %s", exc)
            return
        with self._lock:
            self._local, self._check = local, check

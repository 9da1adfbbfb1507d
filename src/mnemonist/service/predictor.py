"""The learned ranker's faces: training pairs from feedback and use, its status, a refit now.

A pair is recorded where the service learns whether a memory helped for a query:
- `explicit`: a rating (`memory_feedback`, with the query it was shown for);
- `opened`: a recall that returned the memory, followed within `OPENED_WITHIN` by reading
  that memory by id (the reader wanted it);
- `used` / `ignored`: at session end, a memory the prompt hook handed the session that the
  session's later prompts surfaced again, or that it never came back to.

Each pair keeps the ranker's features of the memory as recall ranks it for that query now
(a memory recall no longer ranks among its best `predictor.depth` gives no pair: the ranker
never sees it there), the query scrubbed like any stored text and its vector.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict

from mnemonist.model.answers_graph import PredictorStatus, PredictorTrainAnswer
from mnemonist.model.memory import Memory
from mnemonist.model.requests import Caller, RecallFilters
from mnemonist.service.home_ranker import FEATURE_SET
from mnemonist.service.part import Part
from mnemonist.store import memories, predictor_pairs
from mnemonist.text.normalize import collapse_whitespace
from mnemonist.text.scrub import scrub_optional

#: a read of a memory this soon after a recall returned it counts as opening that result
OPENED_WITHIN = 600.0
#: recent recalls remembered for `opened` (the oldest are forgotten first)
RECENT_RECALLS = 256
MAX_QUERY_CHARS = 2000
#: a memory rated before its vector was written is embedded first, within this time: the
#: ranker's features of a memory without one would not be what recall sees later
EMBED_BUDGET_S = 2.0
#: what the prompt hook handed over is remembered for this many open sessions, this many
#: prompts each (a restart forgets it: those sessions give no `used` / `ignored` pairs)
MAX_SESSIONS = 500
MAX_PROMPTS_PER_SESSION = 20


def prompt_key(text: str) -> str:
    """The identity of a prompt for feedback: case and whitespace do not matter."""
    norm = collapse_whitespace(text).lower()[:2000]
    return hashlib.sha256(norm.encode()).hexdigest()[:32]


class PredictorOps(Part):
    _recent_lock = threading.Lock()

    def record_pair(self, memory: Memory, query: str, label: float, source: str,
                    caller: Caller | None = None, session_key: str | None = None
                    ) -> str | None:
        """Record one training pair; None when recall does not rank the memory among its best
        candidates for the query (or cannot rank at all)."""
        return self.record_pairs(query, [(memory, label, source)], caller, session_key)[0]

    def record_pairs(self, query: str, labelled: list[tuple[Memory, float, str]],
                     caller: Caller | None = None, session_key: str | None = None
                     ) -> list[str | None]:
        """Training pairs of several memories for one query: one search per project."""
        cfg = self.core.config.predictor
        identity = (caller or Caller()).identity().model_dump()
        waiting = [m.seq for m, _, _ in labelled if m.embedding_model is None]
        if waiting and self.core.embedder is not None:  # rated right after it was remembered
            self.core.embedder.embed_now(waiting, EMBED_BUDGET_S)
        conn = self.core.db.reader()
        rows: dict[str, list[float]] = {}
        vector = None  # as recall searched with it (names and times taken out), for paths
        for project in dict.fromkeys(m.project for m, _, _ in labelled):
            out = self.core.searcher.search(conn, query, RecallFilters(project=project, **identity),
                                       cfg.depth, 0.0)
            if out.features is not None:
                vector = out.query_vector
                for i, h in enumerate(out.hits):
                    rows.setdefault(h.memory.id, [float(v) for v in out.features[i]])
        text = (scrub_optional(query) or "")[:MAX_QUERY_CHARS]
        ids: list[str | None] = []
        with self.core.db.write_tx() as w:
            for m, label, source in labelled:
                row = rows.get(m.id)
                ids.append(None if row is None else predictor_pairs.add(w, predictor_pairs.Pair(
                    m.id, text, prompt_key(query), label, source, row, FEATURE_SET, vector,
                    m.project, m.user_id, m.agent_id, session_key)))
        for pid in ids:
            if pid is not None:
                self.core.ranker.added()
        return ids

    # -- implicit: what a session was handed, and what it came back to --------------------
    def note_injected(self, session_key: str, prompt: str, ids: list[str],
                      caller: Caller | None = None) -> None:
        """The prompt hook handed these memories over for this prompt, to this reader (for
        `learn_from_session`)."""
        if not ids or not self.core.config.predictor.adapt:
            return
        identity = (caller or Caller()).identity()
        with self._recent_lock:
            shown = self._shown()
            shown.setdefault(session_key, []).append((prompt, list(ids), identity))
            shown.move_to_end(session_key)
            del shown[session_key][:-MAX_PROMPTS_PER_SESSION]
            while len(shown) > MAX_SESSIONS:
                shown.popitem(last=False)

    def learn_from_session(self, session_key: str, used: set[str]) -> int:
        """At session end: a `used` pair for each memory handed over that the session came
        back to (`used`), an `ignored` pair for the others. Returns the pairs recorded."""
        with self._recent_lock:
            prompts = self._shown().pop(session_key, [])
        recorded = 0
        conn = self.core.db.reader()
        for prompt, ids, caller in prompts:
            found = [m for m in (memories.get(conn, mid) for mid in ids)
                     if m is not None and not m.is_deleted]
            labelled = [(m, 1.0 if m.id in used else 0.0, "used" if m.id in used else "ignored")
                        for m in found]
            if labelled:
                recorded += sum(pid is not None for pid in self.record_pairs(
                    prompt, labelled, caller, session_key))
        return recorded

    def _shown(self) -> OrderedDict[str, list[tuple[str, list[str], Caller]]]:
        shown = getattr(self, "_shown_by_session", None)
        if shown is None:
            shown = OrderedDict()
            self._shown_by_session = shown
        return shown

    # -- implicit: a recall, then a read of one of its results ---------------------------
    def note_recall(self, query: str, ids: list[str], caller: Caller) -> None:
        """Remember which memories a recall returned (for `note_read`)."""
        if not ids:
            return
        recent = self._recent()
        with self._recent_lock:
            recent[prompt_key(query)] = (time.monotonic(), query, set(ids), caller.identity())
            recent.move_to_end(prompt_key(query))
            while len(recent) > RECENT_RECALLS:
                recent.popitem(last=False)

    def note_read(self, memory_id: str) -> str | None:
        """A memory read by id: an `opened` pair for the latest recall that returned it within
        `OPENED_WITHIN` (once per recall and memory)."""
        now = time.monotonic()
        found = None
        with self._recent_lock:
            for key, (at, query, ids, caller) in reversed(self._recent().items()):
                if now - at <= OPENED_WITHIN and memory_id in ids:
                    ids.discard(memory_id)
                    found = (key, query, caller)
                    break
        if found is None:
            return None
        m = memories.get(self.core.db.reader(), memory_id)
        if m is None or m.is_deleted:
            return None
        return self.record_pair(m, found[1], 1.0, "opened", found[2])

    def _recent(self) -> OrderedDict[str, tuple[float, str, set[str], Caller]]:
        recent = getattr(self, "_recent_recalls", None)
        if recent is None:
            recent = OrderedDict()
            self._recent_recalls = recent
        return recent

    # -- status and refit -----------------------------------------------------------------
    def predictor_status(self) -> PredictorStatus:
        return self.core.ranker.status()

    def predictor_train(self) -> PredictorTrainAnswer:
        return {**self.core.ranker.train(), "status": self.core.ranker.status()}

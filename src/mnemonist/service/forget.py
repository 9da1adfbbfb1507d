"""forget: preview candidates with a confirmation token, then execute (soft delete or purge).

By query, forget selects only memories that clearly match: the recall score at least
`memory.forget_min_score`, and the memory's own text holding at least
`memory.forget_min_coverage` of the query's words (keyword evidence: a memory that is merely
*about* something similar is not selected). The preview shows each candidate's score and the
words it matched, and what the search found but did not select. Execute by query always needs
the preview's token; by ids or filters, above `memory.forget_confirm_threshold`. A token is
bound to the exact selection and to soft delete versus purge.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from mnemonist.model.answers import ForgetAnswer, ForgetCandidate, with_legacy_keys
from mnemonist.model.memory import Memory
from mnemonist.model.requests import ForgetRequest
from mnemonist.search.filters import where_clause
from mnemonist.search.keyword import query_terms, terms_in
from mnemonist.service.errors import BadRequest, Conflict
from mnemonist.service.mutations import file_managed_error
from mnemonist.service.purge import PurgeOps
from mnemonist.store import files, memories, memory_reads
from mnemonist.text.scrub import scrub_optional

TOKEN_TTL_S = 600
EXCLUDED_SHOWN = 10
_SECRET = secrets.token_bytes(32)  # per process: a token never outlives the daemon


def make_token(ids: list[str], now: float | None = None, *, purge: bool = False) -> str:
    expires = int((now or time.time()) + TOKEN_TTL_S)
    what = "purge" if purge else "delete"
    sig = hmac.new(_SECRET, f"{expires}|{what}|{'|'.join(sorted(ids))}".encode(), hashlib.sha256)
    return f"{expires}.{base64.urlsafe_b64encode(sig.digest()).decode().rstrip('=')}"


def check_token(token: str, ids: list[str], *, purge: bool = False) -> str | None:
    """None when valid, else the reason it is not."""
    try:
        expires_s, _sig = token.split(".", 1)
        expires = int(expires_s)
    except ValueError:
        return "malformed"
    if expires < time.time():
        return "expired"
    expected = make_token(ids, now=expires - TOKEN_TTL_S, purge=purge)
    return None if hmac.compare_digest(expected, token) else "mismatch"


@dataclass
class Selection:
    memories: list[Memory]
    scores: dict[str, float] = field(default_factory=dict)
    matched: dict[str, list[str]] = field(default_factory=dict)
    terms: list[str] = field(default_factory=list)
    excluded: list[dict[str, Any]] = field(default_factory=list)


class ForgetOps(PurgeOps):
    def forget(self, req: ForgetRequest) -> ForgetAnswer:
        if not req.has_selector():
            raise BadRequest("say what to forget: query, ids or at least one filter",
                             code="no_selector")
        if req.ids:  # prefixes name their memory; a chunk of a memory file is an error
            ids = self.core.resolve_ids(list(req.ids), caller=req, missing_ok=True)
            req = req.model_copy(update={"ids": ids})
            managed = file_managed_error(self.core.db.reader(), list(ids))
            if managed is not None:
                raise managed
        by_query = bool(req.query and req.query.strip())
        sel = self._forget_candidates(req)
        ids = [m.id for m in sel.memories]
        threshold = self.core.config.memory.forget_confirm_threshold
        needs_token = by_query or len(ids) > threshold
        if req.mode == "preview":
            return self._preview(req, sel, needs_token, by_query)
        if not (req.reason and req.reason.strip()):
            raise BadRequest("reason is required to execute a forget", field="reason")
        if needs_token and not req.confirm_token:
            raise BadRequest(
                "forget by query executes only what its preview showed: run a preview and pass"
                " its confirm_token" if by_query else
                f"{len(ids)} memories exceed the confirmation threshold ({threshold}):"
                " run a preview and pass its confirm_token",
                code="confirm_token_required",
            )
        if req.confirm_token:  # a token given is always checked, even below the threshold
            problem = check_token(req.confirm_token, ids, purge=req.force)
            if problem:
                raise Conflict(
                    "confirm_token is mismatch: the candidates (or force) changed since the"
                    " preview" if problem == "mismatch" else f"confirm_token is {problem}",
                    code="confirm_token_invalid",
                )
        return self._execute(req, sel)

    def _preview(self, req: ForgetRequest, sel: Selection, needs_token: bool,
                 by_query: bool) -> ForgetAnswer:
        candidates = []
        for m in sel.memories:
            cand: ForgetCandidate = {"id": m.id, "content": m.content[:300], "type": m.type,
                                    "pinned": m.pinned, "created_at": m.created_at}
            if by_query:
                cand["score"] = round(sel.scores[m.id], 4)
                cand["matched_terms"] = sel.matched[m.id]
            candidates.append(cand)
        out: ForgetAnswer = {
            "mode": "preview", "count": len(candidates), "candidates": candidates,
            "requires_confirm": needs_token,
            "confirm_token": make_token([m.id for m in sel.memories], purge=req.force),
            "purge": req.force,
        }
        if by_query:
            cfg = self.core.config.memory
            out["query_terms"] = sel.terms
            out["selection"] = {"min_score": cfg.forget_min_score,
                                "min_coverage": cfg.forget_min_coverage}
            out["excluded"] = sel.excluded[:EXCLUDED_SHOWN]
        return with_legacy_keys(out)

    def _execute(self, req: ForgetRequest, sel: Selection) -> ForgetAnswer:
        reason = scrub_optional(req.reason) or ""
        by = scrub_optional(req.changed_by)
        done: list[str] = []
        with self.core.db.write_tx() as conn:
            for cand in sel.memories:
                m = memories.get(conn, cand.id)
                if m is None or (m.is_deleted and not req.force):
                    continue
                if req.force:
                    self.purge_in_tx(conn, m.id, m, reason, by or "api")
                else:
                    meta = {"forget": True, "query": scrub_optional(req.query)}
                    self.soft_delete(conn, m, reason, by, meta)
                done.append(m.id)
        out: ForgetAnswer = {"mode": "execute", "deleted": len(done), "ids": done,
                               "hard": req.force}
        if req.force and done:
            out["wal_truncated"] = self.finish_purge()
        return with_legacy_keys(out)

    def _forget_candidates(self, req: ForgetRequest) -> Selection:
        filters = req.filters()
        conn = self.core.db.reader()
        cap = self.core.config.memory.forget_batch_limit
        if req.query and req.query.strip():
            sel = self._by_query(req, cap)
        else:
            # force with explicit ids may purge tombstones too (the execute loop expects them)
            where, args = where_clause(filters, include_deleted=bool(req.force and req.ids))
            seqs = memory_reads.oldest_matching(conn, where, args, list(req.ids or []), cap)
            by_seq = memories.get_many_by_seq(conn, seqs)
            sel = Selection([by_seq[s] for s in seqs if s in by_seq])
        managed = files.lines_of(conn, [m.id for m in sel.memories])  # the file is the truth
        sel.memories = [m for m in sel.memories
                        if (req.include_pinned or not m.pinned) and m.id not in managed]
        return sel

    def _by_query(self, req: ForgetRequest, cap: int) -> Selection:
        """The search's hits that clearly match (see the module docstring), best first."""
        cfg = self.core.config.memory
        conn = self.core.db.reader()
        query = (req.query or "").strip()
        pool = min(cap, max(req.limit * 5, 50))
        outcome = self.core.searcher.search(conn, query, req.filters(), pool, min_score=0.0)
        hits = outcome.hits
        if req.ids:
            wanted = set(req.ids)
            hits = [h for h in hits if h.memory.id in wanted]
        managed = files.lines_of(conn, [h.memory.id for h in hits])  # never a file's chunk
        hits = [h for h in hits if h.memory.id not in managed]
        terms = query_terms(query)
        found = terms_in(conn, terms, [h.memory.seq for h in hits])
        sel = Selection([], terms=terms)
        for h in hits:
            matched = found[h.memory.seq]
            coverage = len(matched) / len(terms) if terms else 0.0
            why = None
            if not matched:
                why = "no word of the query in its text"
            elif coverage < cfg.forget_min_coverage:
                why = f"holds {len(matched)} of the query's {len(terms)} words"
            elif h.score < cfg.forget_min_score:
                why = f"score below {cfg.forget_min_score}"
            if why is None and len(sel.memories) < min(req.limit, cap):
                sel.memories.append(h.memory)
                sel.scores[h.memory.id] = h.score
                sel.matched[h.memory.id] = matched
            elif why is not None:
                sel.excluded.append({"id": h.memory.id, "content": h.memory.content[:120],
                                     "score": round(h.score, 4), "matched_terms": matched,
                                     "why": why})
        return sel

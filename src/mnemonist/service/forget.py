"""forget: preview candidates with a confirmation token, then execute (soft or hard delete)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from typing import Any

from mnemonist.model.memory import Memory
from mnemonist.model.requests import ForgetRequest
from mnemonist.search.filters import where_clause
from mnemonist.service.errors import BadRequest, Conflict
from mnemonist.service.mutations import MutationOps, file_managed_error
from mnemonist.store import files, memories

TOKEN_TTL_S = 600
_SECRET = secrets.token_bytes(32)  # per process: a token never outlives the daemon


def make_token(ids: list[str], now: float | None = None) -> str:
    expires = int((now or time.time()) + TOKEN_TTL_S)
    sig = hmac.new(_SECRET, f"{expires}|{'|'.join(sorted(ids))}".encode(), hashlib.sha256)
    return f"{expires}.{base64.urlsafe_b64encode(sig.digest()).decode().rstrip('=')}"


def check_token(token: str, ids: list[str]) -> str | None:
    """None when valid, else the reason it is not."""
    try:
        expires_s, _sig = token.split(".", 1)
        expires = int(expires_s)
    except ValueError:
        return "malformed"
    if expires < time.time():
        return "expired"
    expected = make_token(ids, now=expires - TOKEN_TTL_S)
    return None if hmac.compare_digest(expected, token) else "mismatch"


class ForgetOps(MutationOps):
    def forget(self, req: ForgetRequest) -> dict[str, Any]:
        if not req.has_selector():
            raise BadRequest("say what to forget: query, ids or at least one filter",
                             code="no_selector")
        if req.ids:  # naming a chunk of a memory file is an error; a query skips them
            managed = file_managed_error(self.db.reader(), list(req.ids))
            if managed is not None:
                raise managed
        candidates = self._forget_candidates(req)
        ids = [m.id for m in candidates]
        threshold = self.config.memory.forget_confirm_threshold
        needs_token = len(ids) > threshold
        if req.mode == "preview":
            return {
                "mode": "preview",
                "count": len(ids),
                "candidates": [
                    {"id": m.id, "content": m.content[:300], "type": m.type,
                     "pinned": m.pinned, "created_at": m.created_at}
                    for m in candidates
                ],
                "requiresConfirm": needs_token,
                "confirmToken": make_token(ids),
            }
        if not (req.reason and req.reason.strip()):
            raise BadRequest("reason is required to execute a forget", field="reason")
        if needs_token and not req.confirm_token:
            raise BadRequest(
                f"{len(ids)} memories exceed the confirmation threshold ({threshold}):"
                " run a preview and pass its confirm_token",
                code="confirm_token_required",
            )
        if req.confirm_token:  # a token given is always checked, even below the threshold
            problem = check_token(req.confirm_token, ids)
            if problem:
                raise Conflict(
                    f"confirm_token is {problem}: the candidates changed since the preview"
                    if problem == "mismatch" else f"confirm_token is {problem}",
                    code="confirm_token_invalid",
                )
        with self.db.write_tx() as conn:
            done: list[str] = []
            for cand in candidates:
                m = memories.get(conn, cand.id)
                if m is None or (m.is_deleted and not req.force):
                    continue
                meta = {"forget": True, "query": req.query}
                if req.force:
                    self._hard_delete(conn, m, req.reason, req.changed_by, meta)
                else:
                    self._soft_delete(conn, m, req.reason, req.changed_by, meta)
                done.append(m.id)
        return {"mode": "execute", "deleted": len(done), "ids": done, "hard": req.force}

    def _forget_candidates(self, req: ForgetRequest) -> list[Memory]:
        filters = req.filters()
        conn = self.db.reader()
        cap = self.config.memory.forget_batch_limit
        if req.query and req.query.strip():
            outcome = self.searcher.search(conn, req.query, filters, min(req.limit, cap))
            found = [h.memory for h in outcome.hits]
        else:
            # force with explicit ids may purge tombstones too (the execute loop expects them)
            where, args = where_clause(filters, include_deleted=bool(req.force and req.ids))
            if req.ids:
                where += f" AND m.id IN ({','.join('?' * len(req.ids))})"
                args += list(req.ids)
            rows = conn.execute(
                f"SELECT m.seq FROM memories m WHERE {where} ORDER BY m.created_at LIMIT ?",
                [*args, cap],
            ).fetchall()
            by_seq = memories.get_many_by_seq(conn, [r[0] for r in rows])
            found = [by_seq[r[0]] for r in rows if r[0] in by_seq]
        if req.ids and req.query:
            wanted = set(req.ids)
            found = [m for m in found if m.id in wanted]
        managed = files.lines_of(conn, [m.id for m in found])
        return [m for m in found
                if (req.include_pinned or not m.pinned) and m.id not in managed]

"""Named API tokens (migration 27): one per person or agent, in the store every daemon shares.

A token is `mn_` and 43 random URL-safe characters (`secrets.token_urlsafe(32)`). It is shown
once, when it is made; the table keeps only its SHA-256, so a copy of the database (a backup,
`pg_dump`) lets nobody in. A lookup finds the row by that hash and compares it again with
`hmac.compare_digest`. Revoking keeps the row with `revoked_at` set: the name stays what
history says, and is never handed out again.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import asdict, dataclass
from typing import Any, NoReturn

from mnemonist.model.memory import utcnow
from mnemonist.text.scrub import scrub_optional

PREFIX = "mn_"
#: what a token's name may be: history records `token:NAME via DAEMON`
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
#: the name `server.token` goes by: no named token may take it
SERVER_NAME = "server"
_COLUMNS = "name, token_hash, user_id, agent_id, owner, created_at, revoked_at"


class TokenError(ValueError):
    """A token command that cannot be done (a bad or taken name, an unknown token)."""


@dataclass(frozen=True)
class TokenRecord:
    name: str
    user_id: str | None
    agent_id: str | None
    owner: bool
    created_at: str
    revoked_at: str | None
    token_hash: str = ""

    @property
    def live(self) -> bool:
        return self.revoked_at is None

    def public(self) -> dict[str, Any]:
        """The row as `token list` shows it: never the hash."""
        out = asdict(self)
        out.pop("token_hash")
        return out


def new_secret() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def digest(secret: str) -> str:
    """The SHA-256 (hex) the table keeps in place of the token."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def check_name(name: str) -> str:
    if not NAME_PATTERN.fullmatch(name or ""):
        raise TokenError(f"token name {name!r}: 1-64 letters, digits, '.', '_' or '-',"
                         " starting with a letter or digit")
    if name.lower() == SERVER_NAME:
        raise TokenError(f"token name {name!r} is taken by server.token")
    actor = f"token:{name} via mnemonist"  # as history records it (service/principal.py)
    if scrub_optional(actor) != actor:  # the scrubber would hide it in history
        raise TokenError(f"token name {name!r} looks like a credential: choose a plain name")
    return name


def _record(row: Any) -> TokenRecord:
    name, token_hash, user_id, agent_id, owner, created_at, revoked_at = tuple(row)
    return TokenRecord(name=name, user_id=user_id, agent_id=agent_id, owner=bool(owner),
                       created_at=created_at, revoked_at=revoked_at, token_hash=token_hash)


def add(conn: Any, name: str, *, user_id: str | None = None, agent_id: str | None = None,
        owner: bool = False) -> tuple[TokenRecord, str]:
    """A new token (in the caller's write transaction): its row and the token itself, which
    exists nowhere else once the caller has shown it."""
    check_name(name)
    if by_name(conn, name) is not None:
        raise TokenError(f"a token named {name!r} exists already (a revoked name is not"
                         " reused: choose another, or `mnemonist token rotate` a live one)")
    secret = new_secret()
    now = utcnow()
    conn.execute(f"INSERT INTO api_tokens ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, NULL)",
                 (name, digest(secret), user_id, agent_id, 1 if owner else 0, now))
    return by_name(conn, name) or _missing(name), secret


def rotate(conn: Any, name: str) -> tuple[TokenRecord, str]:
    """A new secret for a live token, same name and identity: the old one stops working."""
    record = live_by_name(conn, name)
    secret = new_secret()
    conn.execute("UPDATE api_tokens SET token_hash = ?, created_at = ? WHERE name = ?",
                 (digest(secret), utcnow(), record.name))
    return by_name(conn, name) or _missing(name), secret


def revoke(conn: Any, name: str) -> TokenRecord:
    record = live_by_name(conn, name)
    conn.execute("UPDATE api_tokens SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL",
                 (utcnow(), record.name))
    return by_name(conn, name) or _missing(name)


def live_by_name(conn: Any, name: str) -> TokenRecord:
    record = by_name(conn, name)
    if record is None:
        raise TokenError(f"no token named {name!r} (`mnemonist token list` shows them)")
    if not record.live:
        raise TokenError(f"the token {name!r} was revoked at {record.revoked_at}")
    return record


def _missing(name: str) -> NoReturn:
    raise TokenError(f"the token {name!r} vanished while it was written")


def by_name(conn: Any, name: str) -> TokenRecord | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM api_tokens WHERE name = ?", (name,)).fetchone()
    return None if row is None else _record(row)


def find(conn: Any, secret: str) -> TokenRecord | None:
    """The token `secret` is, revoked or not; None for one that was never made."""
    wanted = digest(secret)
    row = conn.execute(f"SELECT {_COLUMNS} FROM api_tokens WHERE token_hash = ?",
                       (wanted,)).fetchone()
    if row is None:
        return None
    record = _record(row)
    return record if hmac.compare_digest(record.token_hash, wanted) else None


def all_tokens(conn: Any) -> list[TokenRecord]:
    rows = conn.execute(f"SELECT {_COLUMNS} FROM api_tokens ORDER BY created_at, name")
    return [_record(r) for r in rows.fetchall()]


def any_made(conn: Any) -> bool:
    """Whether a token was ever made here. Revoked ones count: revoking the last token must
    not switch authentication off (docs/security.md#tokens)."""
    return conn.execute("SELECT 1 FROM api_tokens LIMIT 1").fetchone() is not None

"""A request's token, checked at the boundary: valid or not, and whose (docs/security.md#tokens).

Tokens come as `Authorization: Bearer …`, `X-Mnemonist-Token: …` or the dashboard's cookie.
Two kinds are accepted:

- `server.token` (or `MNEMONIST_TOKEN`), the daemon's own: an owner;
- the named tokens of `mnemonist token add`, looked up by their SHA-256 in the store on every
  request, so that a token made or revoked by the CLI (or on another daemon of a PostgreSQL
  store) counts from the next request on, without a restart.

Once a named token exists (revoked ones count), every request but the open paths needs a
token, and each request gets a `Principal` (`service/principal.py`) that the routes, the MCP
tools and the dashboard apply to every identity claim. Before that there is no principal and
nothing changes: `server.token` alone, or no token at all, work as they always did.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import anyio.to_thread
from pydantic import ValidationError

from mnemonist.api.boundary import (
    PRINCIPAL_KEY,
    TOKEN_COOKIE,
    BoundaryPolicy,
    Refused,
    cookie_value,
)
from mnemonist.api.errors import STORAGE_ANSWERS
from mnemonist.model.requests import Caller
from mnemonist.service.errors import STORAGE_UNAVAILABLE, StorageUnavailable
from mnemonist.service.principal import Principal
from mnemonist.service.tokens import SERVER_NAME, TokenRecord, TokenRegistry

log = logging.getLogger(__name__)

#: the identity headers, and the field each names (the same limits as the body's field)
IDENTITY_HEADERS = {"x-mnemonist-agent": ("X-Mnemonist-Agent", "agent_id"),
                    "x-mnemonist-user": ("X-Mnemonist-User", "user_id")}
#: a named token's cookie: `t.NAME.MAC` (server.token's is the bare MAC, as before)
NAMED_COOKIE = "t."
REQUIRED = "a valid bearer token is required"


def principal_of(scope: Mapping[str, Any]) -> Principal | None:
    """The principal the boundary found for this request (None: no named tokens here)."""
    state = scope.get("state") or {}
    return state.get(PRINCIPAL_KEY)


def presented_token(headers: Mapping[str, str]) -> str:
    header = headers.get("authorization", "")
    given = header[7:] if header.lower().startswith("bearer ") else ""
    return given.strip() or headers.get("x-mnemonist-token", "").strip()


def identity_header_problem(headers: Mapping[str, str]) -> Refused | None:
    """An identity header the body's field would refuse (too long, empty, `*`, a control
    character, a credential): 400 naming the header, whatever route it was sent to."""
    for key, (header, field) in IDENTITY_HEADERS.items():
        value = headers.get(key)
        if value is None:
            continue
        try:
            Caller.model_validate({field: value})
        except ValidationError as exc:
            why = "; ".join(str(e.get("msg", "invalid")) for e in exc.errors())
            return Refused(400, "invalid_request", f"{header} header ({field}): {why}",
                           field=header)
    return None


@dataclass(frozen=True)
class Authentication:
    """What the boundary learnt of a request's token."""

    valid: bool  # a token (or cookie) this daemon accepts came with the request
    required: bool  # this daemon needs one (server.token is set, or named tokens exist)
    principal: Principal | None = None  # whose it is (only once named tokens exist)
    problem: str = REQUIRED

    @property
    def allowed(self) -> bool:
        return self.valid or not self.required


class TokenAuthority:
    """Checks tokens against `server.token` and the store's named tokens."""

    def __init__(self, db: Any, policy: BoundaryPolicy, daemon: str) -> None:
        self.db = db
        self.tokens = TokenRegistry(db) if db is not None else None
        self.policy = policy
        self.daemon = daemon
        self._named = False  # once a named token exists, it stays so (none is ever deleted)

    @property
    def server_token(self) -> str:
        return self.policy.token

    @staticmethod
    def header_problem(headers: Mapping[str, str]) -> Refused | None:
        return identity_header_problem(headers)

    # -- the store ---------------------------------------------------------------------------
    def named_mode(self) -> bool:
        """Whether named tokens decide identity here (a token was ever made in the store)."""
        if not self._named and self.tokens is not None:
            self._named = self.tokens.any_made()
        return self._named

    def required(self) -> bool:
        return bool(self.server_token) or self.named_mode()

    def _tokens(self) -> TokenRegistry:
        """The store's tokens (named mode implies a store)."""
        assert self.tokens is not None
        return self.tokens

    def principal(self, record: TokenRecord) -> Principal:
        return Principal(name=record.name, owner=record.owner, user_id=record.user_id,
                         agent_id=record.agent_id, daemon=self.daemon)

    def server_principal(self) -> Principal | None:
        """server.token's principal: an owner bound to nobody (none without named tokens)."""
        return (Principal(name=SERVER_NAME, owner=True, daemon=self.daemon)
                if self.named_mode() else None)

    # -- checking a request --------------------------------------------------------------------
    def check_secret(self, given: str) -> Authentication:
        """A token as presented (header, dashboard login)."""
        if self.server_token and hmac.compare_digest(given.encode(), self.server_token.encode()):
            return Authentication(True, True, self.server_principal())
        if self.named_mode():
            record = self._tokens().find(given)
            if record is not None and record.live:
                return Authentication(True, True, self.principal(record))
            if record is not None:
                return Authentication(False, True, problem=f"the token {record.name!r} was"
                                      f" revoked at {record.revoked_at}")
        return Authentication(False, self.required())

    def check_cookie(self, value: str) -> Authentication:
        if value.startswith(NAMED_COOKIE) and self.named_mode():
            name, _, mac = value[len(NAMED_COOKIE):].rpartition(".")
            record = self._tokens().by_name(name) if name else None
            if record is not None and record.live and hmac.compare_digest(
                    mac.encode(), self._mac(record).encode()):
                return Authentication(True, True, self.principal(record))
        elif self.server_token and hmac.compare_digest(
                value.encode(), self.policy.session_cookie().encode()):
            return Authentication(True, True, self.server_principal())
        return Authentication(False, self.required())

    def authenticate(self, headers: Mapping[str, str]) -> Authentication:
        given = presented_token(headers)
        if given:
            return self.check_secret(given)
        cookie = unquote(cookie_value(headers.get("cookie", ""), TOKEN_COOKIE))
        if cookie:
            return self.check_cookie(cookie)
        return Authentication(False, self.required())

    async def authenticate_async(self, headers: Mapping[str, str]) -> Authentication:
        """`authenticate` without stalling the event loop on a PostgreSQL round trip; a store
        that cannot be read refuses the request (503) rather than letting it in."""
        try:
            if self.tokens is not None and self.tokens.remote:
                return await anyio.to_thread.run_sync(self.authenticate, headers)
            return self.authenticate(headers)
        except StorageUnavailable as exc:  # an outage: said once by the store, not per request
            raise Refused(503, STORAGE_UNAVAILABLE, STORAGE_ANSWERS[STORAGE_UNAVAILABLE][1]
                          ) from exc
        except Exception as exc:
            log.exception("the tokens could not be read")
            raise Refused(503, "unavailable", "the tokens could not be read (see the daemon's"
                          " log)") from exc

    # -- the dashboard's cookie ---------------------------------------------------------------
    def _mac(self, record: TokenRecord) -> str:
        """A named token's cookie MAC: of its name and hash under this daemon's secret, so a
        rotated or revoked token's cookie stops working with it."""
        message = f"{record.name}\x1f{record.token_hash}".encode()
        return hmac.new(self.policy.cookie_secret, message, hashlib.sha256).hexdigest()

    def session_cookie(self, given: str) -> str | None:
        """The cookie value for a token a person typed into /login, None when it is not
        one this daemon accepts."""
        if self.server_token and hmac.compare_digest(given.encode(), self.server_token.encode()):
            return self.policy.session_cookie()
        if self.named_mode():
            record = self._tokens().find(given)
            if record is not None and record.live:
                return f"{NAMED_COOKIE}{record.name}.{self._mac(record)}"
        return None

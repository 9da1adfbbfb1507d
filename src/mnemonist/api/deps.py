"""What route handlers share: the service, and the caller's identity (who reads).

Identity is settled here, once per request: the fields a request names (its body, query
string and identity headers; the same field twice with different values is a 400
`identity_conflict`), then, where named tokens are in use, the request's token
(`principal`): a claim it may not make is a 403, and where it claims nothing the token's
identity applies (`service/principal.py`). A change it makes is recorded in history as the
token and the daemon (`actor`)."""

from __future__ import annotations

from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel

from mnemonist.api.tokens import principal_of
from mnemonist.model.requests import IDENTITY_FIELDS, Caller
from mnemonist.service import BadRequest, MemoryService
from mnemonist.service.principal import Principal

#: headers that name the caller, for clients that set them once (an MCP config, a proxy)
IDENTITY_HEADERS = {"agent_id": "x-mnemonist-agent", "user_id": "x-mnemonist-user"}

M = TypeVar("M", bound=BaseModel)


def svc(request: Request) -> MemoryService:
    """The daemon's MemoryService (the one door): `svc(request).memories.remember(...)`.
    Every route, page and tool reaches the service through this (or, for MCP, through
    `ServiceBackend.service`), typed, so that a call can be followed to its part."""
    service: MemoryService = request.app.state.service
    return service


def principal(request: Request) -> Principal | None:
    """The request's token, where named tokens are in use (None: they are not)."""
    return principal_of(request.scope)


def actor(request: Request) -> str | None:
    """Who history records for this request's changes: `token:NAME via DAEMON` with named
    tokens, else None (the request's own `changed_by`, or the route's default)."""
    who = principal(request)
    return who.actor if who is not None else None


def require_owner(request: Request, what: str) -> None:
    who = principal(request)
    if who is not None:
        who.require_owner(what)


def _given(request: Request, body: BaseModel | None) -> tuple[dict[str, Any], dict[str, str]]:
    """The identity fields the request names, from its body, query string and headers, and
    where each came from. The same field named twice with different values is a 400
    `identity_conflict`."""
    sources: list[tuple[str, dict[str, Any]]] = []
    if body is not None:
        sources.append(("body", {k: getattr(body, k, None) for k in IDENTITY_FIELDS}))
    query = request.query_params
    sources.append(("query string", {k: query.get(k) for k in IDENTITY_FIELDS}))
    sources.append(("header", {k: request.headers.get(h)
                               for k, h in IDENTITY_HEADERS.items()}))
    merged: dict[str, Any] = {}
    named: dict[str, str] = {}
    for where, fields in sources:
        for key, value in fields.items():
            if value is None:
                continue
            if where != "body":  # validate what the body did not already validate
                value = getattr(Caller.model_validate({key: value}), key)
            if key in merged and merged[key] != value:
                raise BadRequest(f"{key}: the {named[key]} says {merged[key]!r} but the {where}"
                                 f" says {value!r}", code="identity_conflict", field=key)
            merged.setdefault(key, value)
            named.setdefault(key, where)
    return merged, named


def identity(request: Request, body: BaseModel | None = None) -> dict[str, Any]:
    """Who the request reads as: what it names, held against its token (see module doc)."""
    merged, named = _given(request, body)
    who = principal(request)
    return merged if who is None else who.bind(merged, named)


def caller_of(request: Request) -> Caller:
    """The caller of a route without a body model: query string and headers."""
    return Caller(**identity(request))


def with_caller(request: Request, body: M) -> M:
    """`body` (a request model with the identity fields) completed from the query string,
    the headers and the token; with a token its `changed_by` is the token's."""
    fields = type(body).model_fields
    update = {k: v for k, v in identity(request, body).items() if k in fields}
    by = actor(request)
    if by is not None and "changed_by" in fields:
        update["changed_by"] = by
    return body.model_copy(update=update)


def check_claims(request: Request, body: BaseModel | None = None) -> None:
    """A route that does not read as anyone still may not claim another identity than its
    token's (without named tokens: nothing to check)."""
    if principal(request) is not None:
        identity(request, body)


def check_owners(request: Request, owners: BaseModel | dict[str, Any], where: str = "body"
                 ) -> None:
    """A write's owner fields (agent_id / user_id make it private): a non-owner token makes
    memories private to itself only."""
    who = principal(request)
    if who is None:
        return
    if isinstance(owners, BaseModel):
        owners = {k: getattr(owners, k, None) for k in ("agent_id", "user_id")}
    who.check_owners(owners, where)

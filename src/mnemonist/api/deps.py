"""What route handlers share: the service, and the caller's identity (who reads)."""

from __future__ import annotations

from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel

from mnemonist.model.requests import IDENTITY_FIELDS, Caller
from mnemonist.service import BadRequest

#: headers that name the caller, for clients that set them once (an MCP config, a proxy)
IDENTITY_HEADERS = {"agent_id": "x-mnemonist-agent", "user_id": "x-mnemonist-user"}

M = TypeVar("M", bound=BaseModel)


def svc(request: Request) -> Any:
    """The daemon's MemoryService (the one door)."""
    return request.app.state.service


def _given(request: Request, body: BaseModel | None) -> dict[str, Any]:
    """The identity fields the request names, from its body, query string and headers. The
    same field named twice with different values is a 400 `identity_conflict`."""
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
    return merged


def caller_of(request: Request) -> Caller:
    """The caller of a route without a body model: query string and headers."""
    return Caller(**_given(request, None))


def with_caller(request: Request, body: M) -> M:
    """`body` (a request model with the identity fields) completed from the query string
    and the headers."""
    fields = type(body).model_fields
    return body.model_copy(update={k: v for k, v in _given(request, body).items()
                                   if k in fields})

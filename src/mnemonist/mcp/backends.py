"""Where the MCP tools send their calls: the daemon over HTTP (stdio server) or the service in
the daemon's own process (streamable HTTP at /mcp). Both take the same plain bodies, validate
them with the same request models and fail with the same `ToolError(code, message)`.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote

import anyio.to_thread
import httpx
from pydantic import Field, ValidationError

from mnemonist.client import Client, DaemonError
from mnemonist.model.graph import (
    ExpandRequest,
    ExpandSessionRequest,
    FeedbackRequest,
    ImpactRequest,
    RelateRequest,
)
from mnemonist.model.requests import (
    MAX_OFFSET,
    Caller,
    DismissDuplicateRequest,
    ForgetRequest,
    ListRequest,
    MemoryPatch,
    RecallRequest,
    RecoverRequest,
    RememberRequest,
    ResolveDuplicateRequest,
)
from mnemonist.service.errors import ServiceError, StorageFault

if TYPE_CHECKING:
    from mnemonist.service import MemoryService

log = logging.getLogger(__name__)

Body = dict[str, Any]


class DuplicatesQuery(Caller):
    """The query of GET /api/repair/duplicates (its route's bounds), for the in-process
    backend: the review queue's pairs of one status and kind, a page at a time."""

    status: Literal["open", "dismissed", "resolved"] = "open"
    kind: Literal["duplicate", "contradiction", "restated", "replaced"] | None = None
    limit: int = Field(default=50, ge=1, le=500)
    offset: int = Field(default=0, ge=0, le=MAX_OFFSET)


class ToolError(Exception):
    """A failed tool call: the daemon's error code and message (and any details it gave)."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        return {"error": self.code, "message": self.message, **self.details}


class Backend(ABC):
    """The daemon operations the tools need. Bodies use the HTTP API's snake_case fields."""

    @abstractmethod
    async def recall(self, body: Body) -> Body: ...

    @abstractmethod
    async def remember(self, body: Body) -> Body: ...

    @abstractmethod
    async def get(self, memory_id: str, caller: Body | None = None) -> Body: ...

    @abstractmethod
    async def list(self, params: Body) -> Body: ...

    @abstractmethod
    async def patch(self, memory_id: str, body: Body, caller: Body | None = None) -> Body: ...

    @abstractmethod
    async def forget(self, body: Body) -> Body: ...

    @abstractmethod
    async def history(self, memory_id: str, caller: Body | None = None) -> Body: ...

    @abstractmethod
    async def expand(self, body: Body) -> Body: ...

    @abstractmethod
    async def expand_session(self, body: Body) -> Body: ...

    @abstractmethod
    async def impact(self, body: Body) -> Body: ...

    @abstractmethod
    async def feedback(self, memory_id: str, body: Body) -> Body: ...

    @abstractmethod
    async def relate(self, body: Body) -> Body: ...

    @abstractmethod
    async def duplicates(self, params: Body) -> Body: ...

    @abstractmethod
    async def dismiss_duplicate(self, pair_id: str, body: Body,
                                caller: Body | None = None) -> Body: ...

    @abstractmethod
    async def resolve_duplicate(self, pair_id: str, body: Body,
                                caller: Body | None = None) -> Body: ...

    @abstractmethod
    async def restore(self, memory_id: str, body: Body) -> Body: ...


def _path_id(memory_id: str) -> str:
    return quote(memory_id, safe="")


def _query_value(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return value


def _params(caller: Body | None) -> Body:
    return {k: _query_value(v) for k, v in (caller or {}).items() if v is not None}


class HttpBackend(Backend):
    """The running daemon over HTTP, as the CLI talks to it: every write goes through it."""

    def __init__(self, client: Client) -> None:
        self.client = client

    @property
    def url(self) -> str:
        return self.client.base_url

    def _request(self, method: str, path: str, **kwargs: Any) -> Body:
        try:
            return self.client.request(method, path, **kwargs)
        except DaemonError as exc:
            if exc.status is None:  # connection refused or timed out: nothing answered
                code = ("daemon_timeout" if isinstance(exc.__cause__, httpx.TimeoutException)
                        else "daemon_unavailable")
                raise ToolError(code, str(exc)) from exc
            body = exc.body if isinstance(exc.body, dict) else {}
            details = {k: v for k, v in body.items() if k not in ("error", "message")}
            raise ToolError(
                str(body.get("error") or f"http_{exc.status}"),
                str(body.get("message") or exc),
                **details,
            ) from exc
        except httpx.HTTPError as exc:
            raise ToolError(
                "daemon_unavailable", f"cannot talk to the daemon at {self.url}: {exc}"
            ) from exc

    async def _call(self, method: str, path: str, **kwargs: Any) -> Body:
        return await anyio.to_thread.run_sync(partial(self._request, method, path, **kwargs))

    async def recall(self, body: Body) -> Body:
        return await self._call("POST", "/api/memory/recall", json=body, idempotent=True)

    async def remember(self, body: Body) -> Body:
        body = {k: v for k, v in body.items() if k != "changed_by"}  # the daemon records it
        return await self._call("POST", "/api/memory/remember", json=body)

    async def get(self, memory_id: str, caller: Body | None = None) -> Body:
        return await self._call("GET", f"/api/memory/{_path_id(memory_id)}",
                                params=_params(caller))

    async def list(self, params: Body) -> Body:
        query = {k: _query_value(v) for k, v in params.items() if v is not None}
        return await self._call("GET", "/api/memories", params=query)

    async def patch(self, memory_id: str, body: Body, caller: Body | None = None) -> Body:
        return await self._call("PATCH", f"/api/memory/{_path_id(memory_id)}", json=body,
                                params=_params(caller))

    async def forget(self, body: Body) -> Body:
        return await self._call("POST", "/api/memory/forget", json=body)

    async def history(self, memory_id: str, caller: Body | None = None) -> Body:
        return await self._call("GET", f"/api/memory/{_path_id(memory_id)}/history",
                                params=_params(caller))

    async def expand(self, body: Body) -> Body:
        return await self._call("POST", "/api/knowledge/expand", json=body, idempotent=True)

    async def expand_session(self, body: Body) -> Body:
        return await self._call("POST", "/api/knowledge/expand-session", json=body,
                                idempotent=True)

    async def impact(self, body: Body) -> Body:
        return await self._call("POST", "/api/graph/impact", json=body, idempotent=True)

    async def feedback(self, memory_id: str, body: Body) -> Body:
        return await self._call("POST", f"/api/memory/{_path_id(memory_id)}/feedback",
                                json=body)

    async def relate(self, body: Body) -> Body:
        return await self._call("POST", "/api/graph/relations", json=body)

    async def duplicates(self, params: Body) -> Body:
        return await self._call("GET", "/api/repair/duplicates", params=_params(params))

    async def dismiss_duplicate(self, pair_id: str, body: Body,
                                caller: Body | None = None) -> Body:
        return await self._call("POST", f"/api/repair/duplicates/{_path_id(pair_id)}/dismiss",
                                json=body, params=_params(caller))

    async def resolve_duplicate(self, pair_id: str, body: Body,
                                caller: Body | None = None) -> Body:
        return await self._call("POST", f"/api/repair/duplicates/{_path_id(pair_id)}/resolve",
                                json=body, params=_params(caller))

    async def restore(self, memory_id: str, body: Body) -> Body:
        return await self._call("POST", f"/api/memory/{_path_id(memory_id)}/restore",
                                json=body)


class ServiceBackend(Backend):
    """The in-process `MemoryService` (the daemon's own /mcp endpoint): no HTTP hop."""

    def __init__(self, service: MemoryService) -> None:
        self.service = service

    async def _run(self, fn: Callable[[], Mapping[str, Any]]) -> Body:
        return await anyio.to_thread.run_sync(partial(self._guarded, fn))

    @staticmethod
    def _guarded(fn: Callable[[], Mapping[str, Any]]) -> Body:
        try:
            return dict(fn())  # a typed answer (service/answers.py) as a plain body
        except ServiceError as exc:
            raise ToolError(exc.code, exc.message, **exc.details) from exc
        except StorageFault as exc:  # the disk is full or the database read-only
            raise ToolError(exc.kind, f"nothing was written: {exc.detail}") from exc
        except ValidationError as exc:
            from mnemonist.api.errors import describe_validation

            raise ToolError("invalid_request", describe_validation(list(exc.errors()))) from exc
        except Exception as exc:  # the HTTP face answers 500 internal_error for the same
            log.exception("MCP tool call failed")
            raise ToolError("internal_error", f"{type(exc).__name__}: {exc}") from exc

    async def recall(self, body: Body) -> Body:
        return await self._run(
            lambda: self.service.reads.recall(RecallRequest.model_validate(body)))

    async def remember(self, body: Body) -> Body:
        body = dict(body)
        by = body.pop("changed_by", None)  # who history records (a token's name, on /mcp)
        return await self._run(
            lambda: self.service.memories.remember(RememberRequest.model_validate(body),
                                                   changed_by=by)
        )

    async def get(self, memory_id: str, caller: Body | None = None) -> Body:
        return await self._run(
            lambda: self.service.reads.get(memory_id, caller=Caller.model_validate(caller or {})))

    async def list(self, params: Body) -> Body:
        return await self._run(lambda: self.service.reads.list(ListRequest.model_validate(params)))

    async def patch(self, memory_id: str, body: Body, caller: Body | None = None) -> Body:
        def run() -> Mapping[str, Any]:
            patch = MemoryPatch.model_validate(body)
            return self.service.memories.patch(memory_id, patch, changed_by=patch.changed_by,
                                               caller=Caller.model_validate(caller or {}))
        return await self._run(run)

    async def forget(self, body: Body) -> Body:
        return await self._run(
            lambda: self.service.memories.forget(ForgetRequest.model_validate(body)))

    async def history(self, memory_id: str, caller: Body | None = None) -> Body:
        return await self._run(
            lambda: self.service.reads.history(memory_id, Caller.model_validate(caller or {})))

    async def expand(self, body: Body) -> Body:
        return await self._run(
            lambda: self.service.graph.knowledge_expand(ExpandRequest.model_validate(body)))

    async def expand_session(self, body: Body) -> Body:
        return await self._run(lambda: self.service.graph.knowledge_expand_session(
            ExpandSessionRequest.model_validate(body)))

    async def impact(self, body: Body) -> Body:
        return await self._run(
            lambda: self.service.graph.graph_impact(ImpactRequest.model_validate(body)))

    async def feedback(self, memory_id: str, body: Body) -> Body:
        return await self._run(lambda: self.service.feedback.memory_feedback(
            memory_id, FeedbackRequest.model_validate(body)))

    async def relate(self, body: Body) -> Body:
        return await self._run(
            lambda: self.service.graph.relate(RelateRequest.model_validate(body)))

    async def duplicates(self, params: Body) -> Body:
        def run() -> Mapping[str, Any]:
            q = DuplicatesQuery.model_validate(params)
            return self.service.curation.list_duplicates(q.status, q.limit, q.offset, q.identity(),
                                                         q.kind)
        return await self._run(run)

    async def dismiss_duplicate(self, pair_id: str, body: Body,
                                caller: Body | None = None) -> Body:
        def run() -> Mapping[str, Any]:
            req = DismissDuplicateRequest.model_validate(body)
            return self.service.curation.dismiss_duplicate(pair_id, req.reason,
                                                           Caller.model_validate(caller or {}))
        return await self._run(run)

    async def resolve_duplicate(self, pair_id: str, body: Body,
                                caller: Body | None = None) -> Body:
        def run() -> Mapping[str, Any]:
            req = ResolveDuplicateRequest.model_validate(body)
            return self.service.curation.resolve_duplicate(pair_id, req.keep, req.reason,
                                                           req.changed_by,
                                                           Caller.model_validate(caller or {}))
        return await self._run(run)

    async def restore(self, memory_id: str, body: Body) -> Body:
        return await self._run(lambda: self.service.pipeline.restore_superseded(
            memory_id, RecoverRequest.model_validate(body)))

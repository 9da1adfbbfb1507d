"""The OpenAPI document as the API really answers: errors are `{"error", "message"}` with the
statuses of the trust boundary and the service (FastAPI's default 422 never happens: bad input
is a 400), the bodies that routes parse themselves (import, DELETE) are declared too, and so is
each route's answer: the keys of the service's typed answer (model/answers*.py), the
deprecated camelCase twins marked `deprecated` (`ANSWERS`). The answers are declared only:
FastAPI neither validates nor filters them (no `response_model`), so a route answers exactly
what the service returned."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, TypeAdapter

from mnemonist.model import answers as memory
from mnemonist.model import answers_admin as admin
from mnemonist.model import answers_curation as curation
from mnemonist.model import answers_files as files
from mnemonist.model import answers_graph as graph
from mnemonist.model import answers_reads as reads
from mnemonist.model import answers_sessions as sessions
from mnemonist.model.carry import BackupRequest
from mnemonist.model.documents import DocumentDeleteRequest
from mnemonist.model.requests import DeleteRequest, ImportRequest

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "Error",
    "required": ["error", "message"],
    "properties": {
        "error": {"type": "string", "description": "a stable code, e.g. invalid_request"},
        "message": {"type": "string", "description": "what is wrong, naming the field"},
    },
    "additionalProperties": True,
}

DESCRIPTIONS = {
    400: "bad input (`invalid_request`, `invalid_json`, `json_too_deep`, ...), naming the field",
    401: "a valid bearer token is required (`server.token` is set, or named tokens exist)",
    403: "a web page's request (`forbidden_origin`): foreign Origin or Sec-Fetch-Site; or,"
         " with named tokens, a claim of another identity than the token's"
         " (`identity_mismatch`) or an owner's action (`owner_only`)",
    404: "no such memory, document, checkpoint, action, entity or session (`not_found`)",
    409: "the state does not allow it (`version_conflict`, `already_deleted`, `pinned`,"
         " `immutable`, ...), or an id prefix matches several memories (`ambiguous_id`)",
    413: "the body is larger than `server.max_body_bytes` (`body_too_large`)",
    415: "the body is not sent as application/json (`unsupported_media_type`)",
    421: "the Host header names something other than this daemon (`forbidden_host`)",
    503: "mutations are frozen, a worker is missing, or the database is read-only",
    507: "the disk holding the database is full (`storage_full`)",
}

#: (method, path) -> statuses the service itself may answer beyond the common ones
SERVICE_STATUSES: dict[tuple[str, str], tuple[int, ...]] = {
    ("patch", "/api/memory/{memory_id}"): (404, 409, 503),
    ("delete", "/api/memory/{memory_id}"): (404, 409, 503),
    ("post", "/api/memory/{memory_id}/recover"): (404, 409, 503),
    ("post", "/api/memory/{memory_id}/restore"): (404, 409, 503),
    ("post", "/api/memory/modify"): (409, 503),
    ("get", "/api/memory/{memory_id}"): (409,),  # an ambiguous id prefix
    ("get", "/api/memory/{memory_id}/history"): (409,),
    ("get", "/api/memory/{memory_id}/neighbours"): (409,),
    ("post", "/api/memory/forget"): (409, 503),
    ("delete", "/api/documents/{doc_id}"): (404, 409),
    ("get", "/api/checkpoints/latest"): (404,),
    ("get", "/api/diagnostics"): (503,),
    ("post", "/api/repair/{name}"): (404, 503),
    ("post", "/api/repair/sleep-replay"): (503,),
    ("post", "/api/backup"): (409,),
    ("post", "/api/repair/backfill-skipped"): (409,),  # no LLM to write the summaries
    ("get", "/api/entities/{entity_id}"): (404,),
    ("get", "/api/graph/neighbourhood"): (404,),
    ("post", "/api/knowledge/expand"): (404, 409),
    ("post", "/api/knowledge/expand-session"): (404,),
    ("post", "/api/graph/impact"): (404,),
    ("post", "/api/memory/{memory_id}/feedback"): (404, 409),
    ("post", "/api/graph/relations"): (404, 409),
    ("delete", "/api/graph/relations/{relation_id}"): (404, 409),
    ("post", "/api/principles/{principle_id}/confirm"): (404, 409),
    ("post", "/api/principles/{principle_id}/reject"): (404,),
}

#: (method, path) -> success statuses other than 200
SUCCESS_STATUSES: dict[tuple[str, str], dict[int, str]] = {
    ("post", "/api/memory/remember"): {201: "stored (200: a duplicate, a replay or a"
                                             " restatement the write gate kept out)"},
    ("post", "/api/documents"): {202: "accepted for background ingest"},
    ("post", "/api/checkpoints"): {201: "written now (explicit)", 202: "queued (agent)"},
    ("post", "/api/graph/relations"): {
        201: "stated now (200: already stated, a stated edge promoted, or a retract)"},
}

#: routes that parse their own body: what they accept
OWN_BODIES: dict[tuple[str, str], tuple[type, bool]] = {
    ("post", "/api/memory/import"): (ImportRequest, True),
    ("delete", "/api/memory/{memory_id}"): (DeleteRequest, False),
    ("delete", "/api/documents/{doc_id}"): (DocumentDeleteRequest, False),
    ("post", "/api/backup"): (BackupRequest, False),
}

#: (method, path) -> the service's answer its 2xx responses hold: a TypedDict, or (name, a
#: union of TypedDicts). Not here: /api/diagnostics and /api/repair/* (the maintenance and
#: sleep-replay workers' reports, composed outside the service), /api/export (a stream of
#: JSON lines), the bytes of POST /api/backup with `download`, and /mcp (not in the document)
ANSWERS: dict[tuple[str, str], Any] = {
    # memories
    ("post", "/api/memory/remember"): memory.RememberAnswer,
    ("post", "/api/memory/recall"): memory.RecallAnswer,
    ("post", "/api/memory/modify"): memory.ModifyAnswer,
    ("post", "/api/memory/forget"): memory.ForgetAnswer,
    ("post", "/api/memory/import"): memory.ImportAnswer,
    ("get", "/api/memories"): reads.MemoryListAnswer,
    ("get", "/api/memory/{memory_id}"): reads.MemoryAnswer,
    ("patch", "/api/memory/{memory_id}"): memory.PatchResult,
    ("delete", "/api/memory/{memory_id}"): memory.DeleteAnswer,
    ("post", "/api/memory/{memory_id}/recover"): memory.RecoverAnswer,
    ("post", "/api/memory/{memory_id}/restore"): memory.RestoreAnswer,
    ("get", "/api/memory/{memory_id}/history"): reads.HistoryAnswer,
    ("get", "/api/memory/{memory_id}/chain"): reads.ChainAnswer,
    ("get", "/api/memory/{memory_id}/neighbours"): reads.NeighboursAnswer,
    ("get", "/api/memory/{memory_id}/archive"): admin.ArchivedVersions,
    ("get", "/memory/search"): reads.KeywordSearchAnswer,
    ("get", "/api/embeddings"): reads.EmbeddingsAnswer,
    # documents and memory files
    ("post", "/api/documents"): files.DocumentAccepted,
    ("get", "/api/documents"): files.DocumentListAnswer,
    ("get", "/api/documents/{doc_id}"): files.DocumentAnswer,
    ("get", "/api/documents/{doc_id}/chunks"): files.DocumentChunksAnswer,
    ("delete", "/api/documents/{doc_id}"): files.DocumentDeleted,
    ("post", "/api/files/sync"): files.FileSyncAnswer,
    ("get", "/api/files"): files.FilesAnswer,
    # sessions, checkpoints and hooks
    ("get", "/api/sessions"): sessions.SessionListAnswer,
    ("get", "/api/sessions/{session_key}"): sessions.SessionAnswer,
    ("get", "/api/checkpoints"): sessions.CheckpointListAnswer,
    ("get", "/api/checkpoints/latest"): sessions.LatestCheckpoint,
    ("post", "/api/checkpoints"): sessions.CheckpointCreated,
    ("post", "/api/hooks/session-start"): sessions.SessionStartAnswer,
    ("post", "/api/hooks/user-prompt-submit"): sessions.PromptAnswer,
    ("post", "/api/hooks/pre-compaction"): sessions.PreCompactionAnswer,
    ("post", "/api/hooks/compaction-complete"): sessions.CompactionCompleteAnswer,
    ("post", "/api/hooks/session-end"): sessions.SessionEndAnswer,
    # the knowledge graph and feedback
    ("get", "/api/entities"): graph.EntityListAnswer,
    ("get", "/api/entities/{entity_id}"): graph.EntityAnswer,
    ("get", "/api/graph/neighbourhood"): graph.NeighbourhoodAnswer,
    ("post", "/api/knowledge/expand"): graph.ExpandAnswer,
    ("post", "/api/knowledge/expand-session"): graph.ExpandSessionAnswer,
    ("post", "/api/graph/impact"): graph.ImpactAnswer,
    ("get", "/api/diagnostics/graph"): graph.GraphDiagnostics,
    ("post", "/api/graph/relations"): (
        "RelateAnswer", graph.RelationStated | graph.RelationRetracted),
    ("delete", "/api/graph/relations/{relation_id}"): graph.RelationRetracted,
    ("post", "/api/memory/{memory_id}/feedback"): graph.FeedbackAnswer,
    ("get", "/api/predictor/status"): graph.PredictorStatus,
    ("post", "/api/predictor/train"): graph.PredictorTrainAnswer,
    # curation
    ("get", "/api/repair/duplicates"): curation.DuplicateListAnswer,
    ("post", "/api/repair/duplicates/{candidate_id}/dismiss"): curation.DuplicateDismissed,
    ("post", "/api/repair/duplicates/{candidate_id}/resolve"): curation.DuplicateResolved,
    ("post", "/api/consolidation/run"): curation.ConsolidationRun,
    ("get", "/api/consolidation/status"): curation.ConsolidationStatus,
    ("get", "/api/principles"): curation.PrincipleListAnswer,
    ("post", "/api/principles/{principle_id}/confirm"): curation.PrincipleView,
    ("post", "/api/principles/{principle_id}/reject"): curation.PrincipleView,
    # the pipeline, the gates, what moves in and out, health
    ("get", "/api/pipeline/status"): admin.PipelineStatus,
    ("get", "/api/gates/log"): admin.GateLogAnswer,
    ("get", "/api/gates/significance/{session_key}"): admin.SignificanceVerdict,
    ("post", "/api/repair/backfill-skipped"): admin.BackfillAnswer,
    ("post", "/api/import/bundle"): admin.BundleImportAnswer,
    ("post", "/api/backup"): admin.BackupAnswer,
    ("get", "/health"): admin.HealthAnswer,
    ("get", "/api/status"): admin.StatusAnswer,
}

#: the deprecated camelCase twins of snake_case answer keys (docs/api.md#key-style)
DEPRECATED_KEYS = frozenset(memory.LEGACY_KEYS.values())

UNSAFE = ("post", "put", "patch", "delete")

#: who reads (docs/scopes.md): headers any route takes, and the query parameters of the routes
#: that read them from the query string (list and DELETE declare them through their models)
IDENTITY_HEADERS = (("X-Mnemonist-Agent", "read as this agent (global memories and its own)"),
                    ("X-Mnemonist-User", "read as this user (global memories and theirs)"))
IDENTITY_QUERY = (("agent_id", "read as this agent"), ("user_id", "read as this user"),
                  ("agents", "also these agents' private memories: ids, comma-separated, or *"),
                  ("users", "also these users' private memories: ids, comma-separated, or *"))
NO_IDENTITY = frozenset({"/health", "/api/status", "/api/diagnostics", "/api/pipeline/status"})


def _declare_identity(op: dict[str, Any], method: str, path: str) -> None:
    params = op.setdefault("parameters", [])
    have = {(p.get("in"), p.get("name")) for p in params}
    for name, what in IDENTITY_HEADERS:
        params.append({"name": name, "in": "header", "required": False,
                       "description": what, "schema": {"type": "string", "maxLength": 200}})
    if method in ("get", "patch") and ("{memory_id}" in path or path in (
            "/memory/search", "/api/embeddings", "/api/export")):
        for name, what in IDENTITY_QUERY:
            if ("query", name) not in have:
                params.append({"name": name, "in": "query", "required": False,
                               "description": what, "schema": {"type": "string"}})


def statuses(method: str, path: str, open_paths: frozenset[str]) -> list[int]:
    out = {400, 421}
    if path not in open_paths:
        # a route that writes (even access counts) meets a full disk; a named token may not
        # claim another identity (403)
        out |= {401, 403, 503, 507}
    if method in UNSAFE:
        out |= {403, 413, 415}
    if "{" in path:
        out.add(404)
    out |= set(SERVICE_STATUSES.get((method, path), ()))
    return sorted(out)


def _declare_body(op: dict[str, Any], schemas: dict[str, Any], model: type[BaseModel],
                  required: bool) -> None:
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    for name, sub in schema.pop("$defs", {}).items():
        schemas.setdefault(name, sub)
    schemas.setdefault(model.__name__, schema)
    op["requestBody"] = {
        "required": required,
        "content": {"application/json": {
            "schema": {"$ref": f"#/components/schemas/{model.__name__}"}}},
    }


def _answer_schema(schemas: dict[str, Any], answer: Any) -> dict[str, Any]:
    """The `$ref` to the answer's schema, added (with every shape it uses) to `schemas`; the
    deprecated twins' properties say so."""
    name, shape = answer if isinstance(answer, tuple) else (answer.__name__, answer)
    if name not in schemas:
        schema = TypeAdapter(shape).json_schema(ref_template="#/components/schemas/{model}")
        added = {name: schema, **schema.pop("$defs", {})}
        for key, sub in added.items():
            for prop, spec in sub.get("properties", {}).items():
                if prop in DEPRECATED_KEYS:
                    spec["deprecated"] = True
            old = schemas.setdefault(key, sub)
            if old != sub:  # two shapes of one name: the document would lie about one
                raise ValueError(f"schema {key} is declared twice, differently")
    return {"$ref": f"#/components/schemas/{name}"}


def _declare_answer(op: dict[str, Any], schemas: dict[str, Any], answer: Any) -> None:
    ref = _answer_schema(schemas, answer)
    for status, response in op.get("responses", {}).items():
        content = response.get("content", {})
        if status.startswith("2") and "application/json" in content:
            content["application/json"]["schema"] = ref


def build_openapi(app: FastAPI) -> dict[str, Any]:
    schema = get_openapi(title=app.title, version=app.version, description=app.description,
                         routes=app.routes)
    components = schema.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    schemas["Error"] = ERROR_SCHEMA
    open_paths = app.state.policy.open_paths
    for path, operations in schema.get("paths", {}).items():
        for method, op in operations.items():
            if path not in NO_IDENTITY:
                _declare_identity(op, method, path)
            if (method, path) in OWN_BODIES:
                model, required = OWN_BODIES[(method, path)]
                _declare_body(op, schemas, model, required)
            responses = op.setdefault("responses", {})
            responses.pop("422", None)
            for status, what in SUCCESS_STATUSES.get((method, path), {}).items():
                responses[str(status)] = {"description": what,
                                          "content": {"application/json": {"schema": {}}}}
            if (method, path) in ANSWERS:
                _declare_answer(op, schemas, ANSWERS[(method, path)])
            for status in statuses(method, path, open_paths):
                responses[str(status)] = {
                    "description": DESCRIPTIONS[status],
                    "content": {"application/json": {
                        "schema": {"$ref": "#/components/schemas/Error"}}},
                }
    return schema


def install_openapi(app: FastAPI) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = build_openapi(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

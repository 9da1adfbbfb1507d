"""Import a bundle (docs/export.md): rows back with their ids, times, history and links.

One call imports one batch of records (the header first) in one write transaction: a batch
is all or nothing, and rows already there (same id or other unique key) are skipped, so a
re-run after a failure, or a second import, creates nothing twice. The CLI sends a big bundle
in several batches, each with the header.

Every record is validated before the transaction opens (kind, known columns, base64 vectors);
a constraint the database refuses (a missing NOT NULL column, a CHECK) is a 400 and rolls the
batch back. A row whose foreign key points to something absent (a mention of an entity this
home already had under another id) is skipped and counted as `unresolved`.

Credentials are scrubbed on the way in, as on every write path: every text value except ids,
hashes, keys and times; a memory whose content changed gets its hash and normalised text
computed again. The indexes follow through the store: the FTS triggers, the context index
(`context.refresh_at`), and the background embedder, which embeds what has no vector (a bundle
written with vectors brings them: nothing is embedded again).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from pydantic import TypeAdapter, ValidationError

from mnemonist.model.answers_admin import BundleImportAnswer
from mnemonist.model.requests import ScopeId
from mnemonist.service.errors import BadRequest
from mnemonist.service.export import BUNDLE_KIND, BUNDLE_VERSION, schema_version
from mnemonist.service.part import Part
from mnemonist.store import bundle, context, embedding_work, embeddings, memory_reads
from mnemonist.store.backend import is_postgres
from mnemonist.text.normalize import normalize_and_hash
from mnemonist.text.scrub import scrub_credentials

_SCOPE_ID: TypeAdapter[str] = TypeAdapter(ScopeId)
#: owner columns: an id is validated as the same field of a request body is (not scrubbed:
#: an id with a credential in it is refused, never rewritten into someone else's scope)
_IDENTITY = ("agent_id", "user_id")
#: who said or changed something: a name as a request's `who` / `changed_by` (200 characters)
_ACTORS = ("who", "updated_by", "changed_by")
MAX_ACTOR_CHARS = 200

_NOT_SCRUBBED = {"id", "normalized_content", "content_hash", "text_hash", "vector", "tags"}


def _scrubbed(name: str) -> bool:
    return not (name in _NOT_SCRUBBED or name.endswith(("_id", "_hash", "_at", "_key")))


def check_header(header: Any) -> dict[str, Any]:
    if not isinstance(header, dict) or header.get("kind") != BUNDLE_KIND:
        raise BadRequest(f'line 1 must be the bundle header {{"kind": "{BUNDLE_KIND}", ...}}',
                         code="not_a_bundle")
    if header.get("version") != BUNDLE_VERSION:
        raise BadRequest(f"bundle format version {header.get('version')!r} is not supported"
                         f" (this daemon reads version {BUNDLE_VERSION})",
                         code="unsupported_bundle")
    schema = header.get("schema")
    if not isinstance(schema, int) or isinstance(schema, bool):
        raise BadRequest("bundle header: schema must be an integer", code="unsupported_bundle")
    ours = schema_version()
    if schema > ours:
        raise BadRequest(f"the bundle was written at schema {schema}; this daemon is at schema"
                         f" {ours}: upgrade mnemonist to import it", code="bundle_too_new",
                         bundle_schema=schema, daemon_schema=ours)
    return header


def parse_lines(raw: bytes) -> list[Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest("body is not UTF-8", code="invalid_json") from exc
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except RecursionError as exc:
            raise BadRequest(f"line {n}: JSON is nested too deeply", code="json_too_deep") from exc
        except ValueError as exc:
            raise BadRequest(f"line {n} is not valid JSON: {exc}", code="invalid_json") from exc
    if not out:
        raise BadRequest("body is empty: send the bundle's header line and its records",
                         code="not_a_bundle")
    return out


class BundleImportOps(Part):
    def import_bundle(self, records: list[Any]) -> BundleImportAnswer:
        """Import one batch: `records[0]` is the header. Returns counts per kind."""
        header = check_header(records[0])
        conn = self.core.db.reader()
        cols = {t.table: bundle.columns(conn, t.table)
                for t in [*bundle.TABLES]}
        for table in [*bundle.SESSION_PARTS.values(), bundle.SESSION_MEMORIES]:
            cols[table] = bundle.columns(conn, table)
        prepared = [self._prepare(rec, n, cols) for n, rec in enumerate(records[1:], start=2)]
        counts: dict[str, dict[str, int]] = {}
        created_seqs: list[int] = []
        scrubbed = 0
        with self.core.db.write_tx() as w:
            for n, kind, rows, changed in prepared:
                scrubbed += changed
                made = self._write(w, n, kind, rows, created_seqs)
                c = counts.setdefault(kind, {"created": 0, "skipped": 0, "unresolved": 0})
                c[made] += 1
        self._index(created_seqs)
        return {"schema": header["schema"], "records": len(prepared), "scrubbed": scrubbed,
                "kinds": counts,
                "created": sum(c["created"] for c in counts.values()),
                "skipped": sum(c["skipped"] + c["unresolved"] for c in counts.values())}

    # -- validation (no transaction) ---------------------------------------------------------
    def _prepare(self, rec: Any, n: int, cols: dict[str, dict[str, str]]
                 ) -> tuple[int, str, list[tuple[str, dict[str, Any]]], int]:
        where = f"line {n}"
        if not isinstance(rec, dict) or not isinstance(rec.get("kind"), str):
            raise BadRequest(f"{where}: a record is a JSON object with a `kind`",
                             code="invalid_record")
        kind = rec["kind"]
        body = {k: v for k, v in rec.items() if k != "kind"}
        try:
            if kind == "session":
                rows = self._session_rows(body, where, cols)
            elif kind in bundle.BY_KIND:
                table = bundle.BY_KIND[kind].table
                if kind == "memory":
                    body = self._memory_values(body, where)
                rows = [(table, bundle.decode(body, cols[table], where))]
            else:
                raise ValueError(f"{where}: unknown kind {kind!r} (one of"
                                 f" {', '.join(bundle.KINDS[1:])})")
        except ValueError as exc:
            raise BadRequest(str(exc), code="invalid_record") from exc
        changed = 0
        for table, values in rows:
            _check_identity(values, where)
            _check_actors(values, where)
            changed += _scrub(table, values)
        if kind == "embedding":
            _check_vector(rows[0][1], where)
        return n, kind, rows, int(bool(changed))

    @staticmethod
    def _memory_values(body: dict[str, Any], where: str) -> dict[str, Any]:
        tags = body.get("tags", [])
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise ValueError(f"{where}: tags must be a list of strings")
        if not isinstance(body.get("id"), str) or not isinstance(body.get("content"), str):
            raise ValueError(f"{where}: a memory needs its id and content")
        return {**body, "tags": json.dumps(tags)}

    @staticmethod
    def _session_rows(body: dict[str, Any], where: str, cols: dict[str, dict[str, str]]
                      ) -> list[tuple[str, dict[str, Any]]]:
        key = body.get("session_key")
        if not isinstance(key, str) or not key:
            raise ValueError(f"{where}: a session needs its session_key")
        rows = []
        for part, table in bundle.SESSION_PARTS.items():
            values = body.get(part)
            if values is None:
                continue
            if not isinstance(values, dict):
                raise ValueError(f"{where}: {part} must be an object or null")
            rows.append((table, bundle.decode({**values, "session_key": key}, cols[table],
                                              f"{where} ({part})")))
        received = body.get("memories") or []
        if not isinstance(received, list) or not all(isinstance(r, dict) for r in received):
            raise ValueError(f"{where}: memories must be a list of objects")
        for values in received:
            rows.append((bundle.SESSION_MEMORIES,
                         bundle.decode({**values, "session_key": key},
                                       cols[bundle.SESSION_MEMORIES], f"{where} (memories)")))
        return rows

    # -- the write (inside the transaction) -----------------------------------------------
    def _write(self, w: sqlite3.Connection, n: int, kind: str,
               rows: list[tuple[str, dict[str, Any]]], created_seqs: list[int]) -> str:
        made = "skipped"
        for table, values in rows:
            if kind == "memory" and bundle.exists(w, "memories", "id", values["id"]):
                return "skipped"
            try:
                inserted = bundle.insert(w, table, values)
            except sqlite3.IntegrityError as exc:
                if "foreign key" in str(exc).lower():  # SQLite's words, or PostgreSQL's
                    return "unresolved"
                raise BadRequest(f"line {n} ({kind}): {exc}", code="invalid_record") from exc
            except sqlite3.InterfaceError as exc:
                raise BadRequest(f"line {n} ({kind}): {exc}", code="invalid_record") from exc
            if inserted:
                made = "created"
                if kind == "embedding" and is_postgres(w):  # pgvector's copy of the blob
                    from mnemonist.store.postgres.vectors import index_blob

                    index_blob(w, values["content_hash"])
                if kind == "memory":
                    row = memory_reads.position(w, values["id"])
                    assert row is not None  # inserted just above
                    context.refresh_at(w, row[0], row[1], row[2], row[3])
                    created_seqs.append(row[0])
        return made

    def _index(self, seqs: list[int]) -> None:
        """After the commit: the embedder embeds (or, with a vector already stored, indexes)
        each new memory; stored context vectors go into the context index."""
        if self.core.embedder is None or not seqs:
            return
        for seq in seqs:
            self.core.embedder.notify(seq)
        if not self.core.context_vectors() or self.core.provider is None:
            return
        conn = self.core.db.reader()
        model = self.core.provider.model_id
        for start in range(0, len(seqs), 500):
            chunk = seqs[start : start + 500]
            rows = embedding_work.current_context_vectors(conn, chunk, model)
            items = [(r[0], r[1], embeddings.from_blob(r[2], r[3])) for r in rows]
            if items:
                self.core.get_context_index(len(items[0][2])).add_many(items)


def _scrub(table: str, values: dict[str, Any]) -> int:
    """Scrub the record's text values in place; the number of values changed."""
    changed = 0
    content = values.get("content")
    for name, value in values.items():
        if isinstance(value, str) and _scrubbed(name):
            clean = scrub_credentials(value).text
            if clean != value:
                values[name] = clean
                changed += 1
    if table == "memories":
        tags = json.loads(values.get("tags") or "[]")
        clean_tags = [scrub_credentials(t).text for t in tags]
        if clean_tags != tags:
            values["tags"] = json.dumps(clean_tags)
            changed += 1
        if values.get("content") != content:
            norm = normalize_and_hash(values["content"])
            values["normalized_content"] = norm.normalized
            values["content_hash"] = norm.content_hash
    return changed


def _check_identity(values: dict[str, Any], where: str) -> None:
    """`agent_id` / `user_id` of a record: none (null, or '' where the table spells "no
    owner" so), or an id a request body could name."""
    for name in _IDENTITY:
        value = values.get(name)
        if value is None or value == "":
            continue
        if not isinstance(value, str):
            raise BadRequest(f"{where}: {name} must be a string", code="invalid_record",
                             field=name)
        try:
            clean = _SCOPE_ID.validate_python(value)
        except ValidationError as exc:
            reason = exc.errors()[0]["msg"].removeprefix("Value error, ")
            raise BadRequest(f"{where}: {name} {reason}", code="invalid_record",
                             field=name) from exc
        if clean != value:
            raise BadRequest(f"{where}: {name} has spaces around it",
                             code="invalid_record", field=name)


def _check_actors(values: dict[str, Any], where: str) -> None:
    """`who`, `updated_by`, `changed_by`: none or a name a request could give; `observed_by`:
    the JSON list of such names that corroboration keeps (a text that is not one would fail
    every later read of the memory)."""
    for name in _ACTORS:
        value = values.get(name)
        if value is not None and (not isinstance(value, str) or len(value) > MAX_ACTOR_CHARS):
            raise BadRequest(f"{where}: {name} must be a string of at most {MAX_ACTOR_CHARS}"
                             " characters", code="invalid_record", field=name)
    raw = values.get("observed_by")
    if raw is None:
        return
    try:
        names = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        names = None
    if not isinstance(names, list) or not all(
            isinstance(n, str) and 0 < len(n) <= MAX_ACTOR_CHARS for n in names):
        raise BadRequest(f"{where}: observed_by must be a JSON list of names (text such as"
                         f' \'["agent-a"]\', each at most {MAX_ACTOR_CHARS} characters)',
                         code="invalid_record", field="observed_by")


def _check_vector(values: dict[str, Any], where: str) -> None:
    vector, dims = values.get("vector"), values.get("dimensions")
    if not isinstance(vector, bytes) or not isinstance(dims, int) or len(vector) != 4 * dims:
        raise BadRequest(f"{where}: an embedding needs `dimensions` and a base64 `vector` of"
                         " that many float32 values", code="invalid_record")

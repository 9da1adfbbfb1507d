"""Export and bundle import over real daemons: a populated home exported, imported into an
empty one and exported again gives the same bundle (every field of every record); importing
again creates nothing; bad bundles are refused whole and change nothing."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from conftest import LiveDaemon, run_daemon
from mnemonist.cli.main import cli
from mnemonist.pipeline.repair import check_fts
from mnemonist.service.export import schema_version

FILES = {"interval_minutes": 0}
SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0"


def session_line(kind: str, key: str, n: int, text: str, cwd: Path) -> dict[str, Any]:
    content = text if kind == "user" else [{"type": "text", "text": text}]
    return {"type": kind, "message": {"role": kind, "content": content}, "sessionId": key,
            "timestamp": f"2025-10-01T10:{n:02d}:00.000Z", "cwd": str(cwd), "uuid": f"{key}-{n}"}


def records(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def export_cli(live: LiveDaemon, *args: str) -> str:
    out = CliRunner().invoke(cli, ["--url", live.url, "export", *args])
    assert out.exit_code == 0, out.output
    return out.stdout


def import_cli(live: LiveDaemon, path: Path) -> dict[str, Any]:
    out = CliRunner().invoke(cli, ["--url", live.url, "import", "--json", str(path)])
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


def count(live: LiveDaemon, table: str) -> int:
    return live.service.core.db.reader().execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveDaemon, Path]]:
    """A home with a bit of everything: tagged, pinned, modified, deleted and superseded
    memories, a session ended through the hook with its transcript, a memory file."""
    root = tmp_path_factory.mktemp("carry")
    project = root / "shop"
    (project / "memory").mkdir(parents=True)
    (project / "MEMORY.md").write_text("# Shop\n\n- Production runs PostgreSQL 16 on db-prod-1."
                                       "\n- Deploys happen on Tuesdays.\n")
    transcripts = root / "projects"
    workdir = root / "work"
    workdir.mkdir()
    config = {"hooks": {"transcriptRoots": [str(transcripts)]},
              "files": {**FILES, "roots": [str(project)]}}
    with run_daemon(root / "home", config) as d:
        d.http.post("/api/files/sync", json={}).raise_for_status()
        a = d.remember("Alice Johnson leads the Payments team at Acme Corp",
                       tags=["team", "payments"], who="claude-code", project="shop",
                       occurred_at="2024-03-01")
        d.remember("critical: never deploy on Fridays", project="shop")
        b = d.remember("The staging cluster runs in eu-west-1", project="shop")
        c = d.remember("Temporary note about lunch", who="cli")
        d.remember("Bob Stone prefers tabs over spaces", project="garden")
        assert d.http.patch(f"/api/memory/{b['id']}", json={
            "content": "The staging cluster runs in eu-west-2", "reason": "moved"}
        ).status_code == 200
        assert d.http.request("DELETE", f"/api/memory/{c['id']}",
                              json={"reason": "not worth keeping"}).status_code == 200
        newer = d.remember("Alice Johnson now leads Platform at Acme Corp", project="shop")
        with d.service.core.db.write_tx() as conn:  # what the pipeline's UPDATE leaves behind
            conn.execute("UPDATE memories SET superseded_by = ?, superseded_at = ?"
                         " WHERE id = ?", (newer["id"], "2024-04-01T00:00:00.000Z", a["id"]))
            seq = conn.execute("SELECT seq FROM memories WHERE id = ?", (a["id"],)).fetchone()[0]
            d.service.core.db.on_commit(lambda: d.service.core.unindex(seq))
        key = "sess-carry-1"
        path = transcripts / f"{key}.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text("".join(json.dumps(session_line(k, key, n, t, workdir)) + "\n" for n, (k, t)
                                in enumerate([
            ("user", "Where does the billing service keep its invoices?"),
            ("assistant", "Invoices are stored in the S3 bucket acme-invoices-prod, one folder"
                          " per month."),
            ("user", "Good, and who owns that bucket?"),
            ("assistant", "The Payments team owns the acme-invoices-prod bucket.")])))
        resp = d.http.post("/api/hooks/session-end", json={
            "session_id": key, "transcript_path": str(path), "cwd": str(workdir)})
        assert resp.status_code == 200, resp.text
        assert d.service.sessions.wait_sessions(120)
        d.recall("who leads payments")
        d.flush()
        yield d, root


def test_a_bundle_round_trips_losslessly_into_an_empty_home(source, tmp_path):
    live, _root = source
    first = export_cli(live)
    recs = records(first)
    header = recs[0]
    assert header["kind"] == "mnemonist-bundle" and header["version"] == 1
    assert header["schema"] == schema_version() and header["project"] is None
    kinds = {r["kind"] for r in recs[1:]}
    assert {"memory", "history", "session", "file", "file_chunk", "entity", "relation",
            "mention", "checkpoint"} <= kinds
    mems = {r["content"]: r for r in recs if r["kind"] == "memory"}
    # every column of the row, by name; tags as a list
    table_cols = [r[1] for r in live.service.core.db.reader().execute(
        "PRAGMA table_info(memories)")]
    assert set(next(iter(mems.values()))) == {"kind", *table_cols} - {"seq"}
    alice = mems["Alice Johnson leads the Payments team at Acme Corp"]
    assert alice["tags"] == ["team", "payments"] and alice["who"] == "claude-code"
    assert alice["superseded_by"] and alice["occurred_at"].startswith("2024-03-01")
    assert mems["Temporary note about lunch"]["is_deleted"] == 1
    assert mems["The staging cluster runs in eu-west-2"]["version"] == 2
    session = next(r for r in recs if r["kind"] == "session")
    assert session["state"] and session["ingest"]["status"] == "indexed"
    assert "acme-invoices-prod" in session["transcript"]["content"]
    bundle = tmp_path / "bundle.jsonl"
    bundle.write_text(first)

    with run_daemon(tmp_path / "fresh", {"files": FILES}) as fresh:
        out = import_cli(fresh, bundle)
        assert out["format"] == "bundle" and out["skipped"] == 0
        assert out["created"] == len(recs) - 1
        fresh.flush()
        second = records(export_cli(fresh))
        assert second[0]["exported_at"] >= header["exported_at"]
        assert [{**r, "exported_at": None} for r in second] == [
            {**r, "exported_at": None} for r in recs]
        # idempotent: the same bundle again creates nothing, and changes nothing
        again = import_cli(fresh, bundle)
        assert again["created"] == 0 and again["skipped"] == len(recs) - 1
        assert [{**r, "exported_at": None} for r in records(export_cli(fresh))] == [
            {**r, "exported_at": None} for r in recs]
        # the indexes agree with the table: keyword and vector recall find imported turns
        # (last: a recall moves access counts)
        fts = check_fts(fresh.service.core.db)
        assert fts["consistent"], fts  # every FTS index (memories, context, hints) agrees
        assert fts["tables"]["memories_fts"]["indexed"] == count(fresh, "memories")
        stats = fresh.http.get("/api/status").json()["embeddings"]
        assert stats["missing"] == 0 and stats["embedded"] == stats["live"]
        found = fresh.recall("which S3 bucket holds the invoices")["results"]
        assert any("acme-invoices-prod" in r["content"] for r in found[:5])


def test_import_into_the_home_it_came_from_creates_nothing(source, tmp_path):
    live, _root = source
    bundle = tmp_path / "b.jsonl"
    bundle.write_text(export_cli(live))
    before = count(live, "memories"), count(live, "memory_history")
    out = import_cli(live, bundle)
    assert out["created"] == 0
    assert (count(live, "memories"), count(live, "memory_history")) == before


def test_a_project_export_holds_only_that_project(source):
    live, _root = source
    recs = records(export_cli(live, "--project", "shop"))
    assert recs[0]["project"] == "shop"
    mems = [r for r in recs if r["kind"] == "memory"]
    assert mems and {m["project"] for m in mems} == {"shop"}
    ids = {m["id"] for m in mems}
    assert all(r["memory_id"] in ids for r in recs if r["kind"] in ("history", "mention"))


def test_vectors_travel_and_are_not_computed_again(source, tmp_path):
    live, _root = source
    recs = records(export_cli(live, "--vectors"))
    vectors = [r for r in recs if r["kind"] == "embedding"]
    assert vectors and set(vectors[0]) == {"kind", "content_hash", "model", "dimensions",
                                           "vector", "created_at"}
    bundle = tmp_path / "v.jsonl"
    bundle.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    with run_daemon(tmp_path / "fresh", {"files": FILES}) as fresh:
        import_cli(fresh, bundle)
        fresh.flush()
        assert fresh.service.core.embedder.stats.processed == 0  # every vector came in the bundle
        indexed = live.service.core.db.reader().execute(
            "SELECT COUNT(*) FROM memories WHERE is_deleted = 0 AND superseded_at IS NULL"
        ).fetchone()[0]
        assert len(fresh.service.core.index) == len(live.service.core.index) == indexed
        found = fresh.recall("who owns the invoice storage?")["results"]
        assert any("acme-invoices-prod" in r["content"] for r in found[:5])


def post_bundle(live: LiveDaemon, lines: list[dict[str, Any]]) -> httpx.Response:
    body = "\n".join(json.dumps(x) for x in lines).encode()
    return live.http.post("/api/import/bundle", content=body,
                          headers={"content-type": "application/x-ndjson"})


HEADER = {"kind": "mnemonist-bundle", "version": 1, "schema": 1, "exported_at": "x",
          "project": None}


def memory(mid: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "memory", "id": mid, "content": content, "normalized_content": content.lower(),
            "content_hash": f"hash-{mid}", "occurred_at": "2024-01-01T00:00:00.000Z",
            "created_at": "2024-01-01T00:00:00.000Z", "updated_at": "2024-01-01T00:00:00.000Z",
            "tags": [], **extra}


def test_bad_bundles_are_refused_whole_and_change_nothing(live):
    before = count(live, "memories")
    newer = post_bundle(live, [{**HEADER, "schema": 999}, memory("m-new", "from the future")])
    assert newer.status_code == 400 and newer.json()["error"] == "bundle_too_new"
    assert "999" in newer.json()["message"] and str(schema_version()) in newer.json()["message"]
    cases = [
        [memory("m1", "fine")],  # no header
        [HEADER, memory("m1", "fine"), {"kind": "mystery"}],
        [HEADER, memory("m1", "fine"), {**memory("m2", "x"), "colour": "blue"}],
        [HEADER, memory("m1", "fine"), {**memory("m2", "x"), "occurred_at": None}],
        [HEADER, memory("m1", "fine"), {"kind": "embedding", "content_hash": "h", "model": "m",
                                        "dimensions": 3, "vector": "AAAA",
                                        "created_at": "x"}],
        [HEADER, memory("m1", "fine", tags="not-a-list")],
    ]
    for lines in cases:
        resp = post_bundle(live, lines)
        assert resp.status_code == 400, resp.text
        assert resp.json()["error"] and resp.json()["message"]
    garbage = live.http.post("/api/import/bundle", content=b"{not json",
                             headers={"content-type": "application/x-ndjson"})
    assert garbage.status_code == 400 and garbage.json()["error"] == "invalid_json"
    assert count(live, "memories") == before  # the valid first memory of each was rolled back


def test_credentials_in_a_bundle_are_scrubbed_on_import(live):
    resp = post_bundle(live, [HEADER, memory("m-secret", f"the deploy key is {SECRET}",
                                             who=f"ops {SECRET}", tags=[SECRET])])
    assert resp.status_code == 200, resp.text
    assert resp.json()["scrubbed"] == 1 and resp.json()["created"] == 1
    row = sqlite3.connect(live.daemon.paths.database).execute(
        "SELECT content, who, tags, content_hash FROM memories WHERE id = 'm-secret'").fetchone()
    assert SECRET not in "".join(row) and "[REDACTED:" in row[0]
    assert row[3] != "hash-m-secret"  # the hash is of the scrubbed text


def test_any_project_name_exports(live):
    resp = live.http.get("/api/export", params={"project": "café/ünï\U000c9b92 \"x\""})
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("application/x-ndjson")
    assert records(resp.text)[0]["project"] == "café/ünï\U000c9b92 \"x\""

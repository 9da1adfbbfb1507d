"""`mnemonist export`, `mnemonist import` (items, bundles, ChatGPT and Claude exports) and
`mnemonist backup` (docs/export.md)."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from mnemonist.client import Client, DaemonError
from mnemonist.guards.private_files import open_private

BUNDLE_KIND = "mnemonist-bundle"
#: a bundle goes to the daemon in requests of at most this many bytes (each with the header),
#: well under the default `server.max_body_bytes` (16 MiB)
BATCH_BYTES = 4 * 1024 * 1024
BATCH_RECORDS = 5000
CHUNK_ITEMS = 1000
FORMATS = ("auto", "items", "bundle", "chatgpt", "claude")


def _client(ctx: click.Context) -> Client:
    url = ctx.find_root().obj.get("url") if ctx.find_root().obj else None
    return Client(url, timeout=600.0) if url else Client(timeout=600.0)


def _fail(message: str, code: int = 1) -> None:
    click.echo(f"mnemonist: {message}", err=True)
    sys.exit(code)


@click.command("export")
@click.option("--project", default=None, help="only this project's memories and what hangs on them")
@click.option("--vectors", is_flag=True, help="include the embedding vectors (base64 float32)")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="write to this file (default: standard output)")
@click.option("--agent", default=None,
              help="also this agent's private memories (default: global memories only)")
@click.option("--user", default=None, help="also this user's private memories")
@click.option("--all-scopes", is_flag=True,
              help="every memory, every agent's and user's private ones too (a full export)")
@click.pass_context
def export(ctx: click.Context, project: str | None, vectors: bool, output: Path | None,
           agent: str | None, user: str | None, all_scopes: bool) -> None:
    """Write the memories with their history, links, sessions and files as a JSON-lines
    bundle: global memories (and --agent / --user's own), or all of them with --all-scopes."""
    lines = _client(ctx).stream_lines("/api/export", project=project,
                                      vectors="true" if vectors else None,
                                      agent_id=agent, user_id=user,
                                      all_scopes="true" if all_scopes else None)
    try:  # 0600 whatever the umask: the bundle holds every memory it exports
        out = open_private(output) if output else None
    except OSError as exc:
        _fail(f"cannot write {output}: {exc.strerror or exc}")
    try:
        count = 0
        for line in lines:
            if line:
                (out.write if out else click.echo)(line + ("\n" if out else ""))
                count += 1
    except DaemonError as exc:
        _fail(str(exc))
    finally:
        if out:
            out.close()
    if output:
        click.echo(f"exported {max(count - 1, 0)} records to {output}", err=True)


# -- import -----------------------------------------------------------------------------------
def _first_record(path: Path) -> Any:
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                try:
                    return json.loads(line)
                except ValueError:
                    return None
    return None


def detect_format(path: Path) -> tuple[str, Any]:
    """(format, parsed JSON when the whole file had to be read to tell)."""
    first = _first_record(path)
    if isinstance(first, dict) and first.get("kind") == BUNDLE_KIND:
        return "bundle", None
    from mnemonist.cli.chat_exports import detect

    with path.open(encoding="utf-8") as f:
        head = f.read(1).strip()
    if head == "[" or first is None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            return "items", None
        return detect(data) or "items", data
    return "items", None


def bundle_batches(path: Path) -> Iterator[tuple[str, list[str]]]:
    """(header line, record lines) batches of at most BATCH_BYTES / BATCH_RECORDS."""
    with path.open(encoding="utf-8") as f:
        header = ""
        batch: list[str] = []
        size = 0
        for line in f:
            line = line.strip()
            if not line:
                continue
            if not header:
                header = line
                continue
            if batch and (size + len(line) > BATCH_BYTES or len(batch) >= BATCH_RECORDS):
                yield header, batch
                batch, size = [], 0
            batch.append(line)
            size += len(line) + 1
        if header:
            yield header, batch


def import_bundle(client: Client, path: Path, show_progress: bool) -> dict[str, Any]:
    """Send the bundle in batches; each is one transaction on the daemon, and a batch already
    imported is skipped row by row, so a re-run after a failure is safe."""
    totals: dict[str, Any] = {"records": 0, "created": 0, "skipped": 0, "scrubbed": 0,
                              "kinds": {}}
    with click.progressbar(length=path.stat().st_size, label="importing bundle",
                           hidden=not show_progress, file=sys.stderr) as bar:
        for header, batch in bundle_batches(path):
            body = "\n".join([header, *batch]).encode("utf-8")
            out = client.request("POST", "/api/import/bundle", content=body,
                                 headers={"content-type": "application/x-ndjson"})
            for key in ("records", "created", "skipped", "scrubbed"):
                totals[key] += out[key]
            for kind, counts in out["kinds"].items():
                mine = totals["kinds"].setdefault(kind, dict.fromkeys(counts, 0))
                for k, v in counts.items():
                    mine[k] = mine.get(k, 0) + v
            bar.update(len(body))
    return totals


def post_items(client: Client, items: list[dict[str, Any]], show_progress: bool
               ) -> dict[str, int]:
    totals = {"total": 0, "created": 0, "deduplicated": 0, "replayed": 0}
    with click.progressbar(length=len(items), label="importing", hidden=not show_progress,
                           file=sys.stderr) as bar:
        for start in range(0, len(items), CHUNK_ITEMS):
            chunk = items[start : start + CHUNK_ITEMS]
            out = client.request("POST", "/api/memory/import", json={"items": chunk})
            for key in totals:
                totals[key] += out[key]
            bar.update(len(chunk))
    return totals


@click.command("import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="auto",
              help="what the file is (default: told from its content)")
@click.option("--project", default=None, help="project for items that name none")
@click.option("--json", "as_json", is_flag=True, help="print the JSON answer instead of text")
@click.pass_context
def import_(ctx: click.Context, path: Path, fmt: str, project: str | None,
            as_json: bool) -> None:
    """Import memories: a bundle (mnemonist export), a ChatGPT or Claude conversations.json,
    or remember items (JSON array, JSON lines, a conversation file). Re-runs create nothing."""
    from mnemonist.cli.chat_exports import items_of
    from mnemonist.cli.importing import run_import

    client = _client(ctx)
    try:
        data = None
        if fmt == "auto":
            fmt, data = detect_format(path)
        if fmt == "bundle":
            totals = import_bundle(client, path, not as_json)
        elif fmt in ("chatgpt", "claude"):
            if data is None:
                data = json.loads(path.read_text(encoding="utf-8"))
            totals = post_items(client, items_of(data, fmt, project), not as_json)
        else:
            totals = run_import(client, path, project, not as_json)
    except DaemonError as exc:
        _fail(str(exc))
        return
    except (ValueError, KeyError, TypeError) as exc:
        _fail(f"cannot read {path}: {exc}", 2)
        return
    if as_json:
        click.echo(json.dumps({"format": fmt, **totals}, indent=2))
    elif fmt == "bundle":
        click.echo(f"imported bundle: {totals['created']} rows created, {totals['skipped']}"
                   f" already there ({totals['records']} records)")
        for kind, counts in totals["kinds"].items():
            click.echo(f"  {kind:<16} {counts['created']} new, {counts['skipped']} skipped"
                       + (f", {counts['unresolved']} unresolved" if counts.get("unresolved")
                          else ""))
    else:
        click.echo(f"imported {totals['total']}: {totals['created']} new, "
                   f"{totals['deduplicated']} duplicates, {totals['replayed']} already imported")


@click.command("backup")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="replace PATH when it exists")
@click.option("--json", "as_json", is_flag=True, help="print the JSON answer instead of text")
@click.pass_context
def backup(ctx: click.Context, path: Path, force: bool, as_json: bool) -> None:
    """Copy the live database to PATH while the daemon keeps running (SQLite online backup).

    The daemon makes the copy and sends it; this command writes PATH (the daemon itself only
    ever writes into <home>/backups/)."""
    target = Path(os.path.abspath(path))
    problem = _backup_path_problem(target, force)
    if problem:
        _fail(problem)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as sink:
            headers = _client(ctx).download("/api/backup", {"download": True}, sink)
            sink.flush()
            os.fsync(sink.fileno())
        live = headers.get("x-mnemonist-database")
        if live and _is_live_database(target, Path(live)):
            raise ValueError(f"{target} is the live database itself")
        os.chmod(tmp, 0o600)  # it holds every memory
        os.replace(tmp, target)
    except (DaemonError, OSError, ValueError) as exc:
        Path(tmp).unlink(missing_ok=True)
        _fail(str(exc) if not isinstance(exc, OSError) else
              f"cannot write {target}: {exc.strerror or exc}")
        return
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    out = {"path": str(target), "size": target.stat().st_size,
           "pages": int(headers.get("x-mnemonist-backup-pages", 0)),
           "memories": int(headers.get("x-mnemonist-backup-memories", 0)),
           "took_ms": float(headers.get("x-mnemonist-backup-took-ms", 0.0))}
    if as_json:
        click.echo(json.dumps(out, indent=2))
    else:
        click.echo(f"backed up {out['memories']} memories to {out['path']}"
                   f" ({out['size']} bytes, {out['pages']} pages, {out['took_ms']:.0f} ms)")


def _backup_path_problem(target: Path, force: bool) -> str | None:
    """Why PATH cannot take the backup (None: it can; a missing folder is made, mode 700)."""
    if target.is_symlink():
        return f"{target} is a symbolic link: give the real path"
    if target.is_dir():
        return f"{target} is a folder: give a file path"
    if target.exists() and not force:
        return f"{target} already exists (--force to replace it)"
    if not target.parent.is_dir():
        try:
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            return f"cannot create folder {target.parent}: {exc.strerror or exc}"
    return None


def _is_live_database(target: Path, live: Path) -> bool:
    real, db = Path(os.path.realpath(target)), Path(os.path.realpath(live))
    return real in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm"))


COMMANDS = (export, import_, backup)

"""The memory commands: remember, recall, list, get, history, modify, pin, unpin, forget,
recover. Each is a thin face over one HTTP route; ids may be unique prefixes (the daemon
resolves them)."""

from __future__ import annotations

import shutil
import sys
from typing import Any

import click

from mnemonist.cli.common import call, client, daemon_options, emit, fail, identity
from mnemonist.model.memory import MEMORY_TYPES

#: the id prefix `recall` and `list` print (the daemon accepts any unique prefix of 4 or more)
SHORT_ID = 8


def _one_line(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: max(width - 1, 1)] + "…"


@click.command(short_help="Store a memory.")
@click.argument("content", nargs=-1, required=True)
@click.option("--type", "type_", type=click.Choice(MEMORY_TYPES), default=None,
              help="what kind of memory (default: inferred from the text)")
@click.option("--importance", type=click.FloatRange(0, 1), default=None,
              help="0 to 1; ranks it higher in recall (default: inferred)")
@click.option("--tags", default=None, help="comma-separated tags (or a '[a,b]:' prefix)")
@click.option("--who", default=None, help="who states it (default: --agent, else cli)")
@click.option("--project", default=None, help="the project it belongs to (default: none)")
@click.option("--pinned", is_flag=True, default=None,
              help="pin it: always in session context (or a 'critical:' prefix)")
@click.option("--at", "occurred_at", default=None, help="when it happened (ISO 8601)")
@click.option("--source", "source_id", default=None, help="source id (conversation, file...)")
@click.option("--private", is_flag=True,
              help="private to --agent / --user (MNEMONIST_AGENT / MNEMONIST_USER)")
@click.option("--json", "as_json", is_flag=True, help="print the JSON answer instead of text")
@click.option("-q", "--quiet", is_flag=True,
              help="print only the memory's id (in a script: ID=$(mnemonist remember -q ...))")
@daemon_options
@click.pass_context
def remember(ctx, content, type_, importance, tags, who, project, pinned, occurred_at, source_id,
             private, as_json, quiet) -> None:
    """Store a memory ("critical:" pins it, "[a,b]:" tags it); global unless --private."""
    me = identity(ctx)
    if private and not me:
        fail("--private needs --agent or --user (or MNEMONIST_AGENT / MNEMONIST_USER)")
    body = {"content": " ".join(content), "type": type_, "importance": importance,
            "tags": tags, "who": who or me.get("agent_id") or "cli", "project": project,
            "pinned": pinned, "occurred_at": occurred_at, "source_id": source_id,
            **(me if private else {})}
    out = call(lambda: client(ctx).post("/api/memory/remember", body))
    if as_json:
        return emit(out)
    if quiet:
        return click.echo(out["id"])
    what = "already remembered" if out["deduplicated"] else "remembered"
    if out.get("gated"):  # the write gate: a restatement of this stored memory
        what = "already remembered (restated)"
    click.echo(f"{what}: {out['id']} ({out['type']})")


@click.command(short_help="Find the memories that answer a query.")
@click.argument("query", nargs=-1, required=True)
@click.option("-n", "--limit", type=click.IntRange(1, 200), default=10, show_default=True,
              help="how many results at most")
@click.option("--type", "type_", type=click.Choice(MEMORY_TYPES), default=None,
              help="only memories of this type")
@click.option("--tags", default=None, help="comma-separated: only memories with all of them")
@click.option("--who", default=None, help="only memories stated by this author")
@click.option("--project", default=None, help="only this project's memories")
@click.option("--since", default=None, help="happened at or after (ISO 8601)")
@click.option("--until", default=None, help="happened at or before (ISO 8601)")
@click.option("--min-relevance", type=click.FloatRange(0.0, 1.0), default=None,
              help="only results at least this likely to answer the query (0-1); 0: every"
                   " candidate. Unset: nothing when nothing in scope is likely to answer")
@click.option("--json", "as_json", is_flag=True, help="print the JSON answer instead of text")
@daemon_options
@click.pass_context
def recall(ctx, query, limit, type_, tags, who, project, since, until, min_relevance,
           as_json) -> None:
    """Find the memories that answer QUERY: keyword and vector search together.

    Prints each result's relevance (the probability that it answers the query; "?" for a
    memory not embedded yet), id (its first 8 characters: every command accepts them), type
    and text. When nothing in scope is likely to answer (a code or a name stored nowhere), it
    says so and prints nothing. Memories remembered a moment ago are found at once (a recall
    embeds the few still waiting for their vector); when more are waiting, it says so on
    stderr."""
    body = {"query": " ".join(query), "limit": limit, "type": type_, "tags": tags, "who": who,
            "project": project, "since": since, "until": until, "min_relevance": min_relevance}
    out = call(lambda: client(ctx).post("/api/memory/recall", body, idempotent=True))
    if as_json:
        return emit(out)
    if not out["results"]:
        click.echo("no memories found")
    for r in out["results"]:
        pin = " [pinned]" if r["pinned"] else ""
        rel = "  ?  " if r.get("relevance") is None else f"{r['relevance']:.3f}"
        click.echo(f"{rel}  {r['id'][:SHORT_ID]}  {r['type']}{pin}  {r['content']}")
    waiting = out.get("pending_embeddings")
    if waiting:
        more = "+" if waiting >= 1000 else ""
        click.echo(f"({waiting}{more} memories in scope are not embedded yet: until they are,"
                   " only their words can find them)", err=True)


@click.command("list", short_help="Memories, most recent first (when they happened).")
@click.option("--project", default=None, help="only this project's memories")
@click.option("--type", "type_", type=click.Choice(MEMORY_TYPES), default=None,
              help="only memories of this type")
@click.option("--who", default=None, help="only memories stated by this author")
@click.option("--since", default=None,
              help="happened at or after (ISO 8601 date or time, e.g. 2025-01-01)")
@click.option("--until", default=None, help="happened at or before (ISO 8601)")
@click.option("--order", type=click.Choice(["occurred_at", "created_at", "updated_at",
                                            "importance"]),
              default="occurred_at", show_default=True,
              help="newest first by when it happened, was stored, was changed; or importance")
@click.option("-n", "--limit", type=click.IntRange(1, 1000), default=50, show_default=True,
              help="how many to show")
@click.option("--deleted", is_flag=True, help="soft-deleted memories too")
@click.option("--json", "as_json", is_flag=True, help="print the API's JSON answer")
@daemon_options
@click.pass_context
def list_(ctx, project, type_, who, since, until, order, limit, deleted, as_json) -> None:
    """Memories, most recent first: when it happened, when it was stored, project, type,
    who, id prefix and content. "when" is the event time (a 2024 chat message imported today
    says 2024; `remember --at` sets it), "stored" when the daemon wrote it."""
    out = call(lambda: client(ctx).get(
        "/api/memories", project=project, type=type_, who=who, since=since, until=until,
        order=order, limit=limit, include_deleted=deleted or None))
    if as_json:
        return emit(out)
    if not out["memories"]:
        click.echo("no memories")
        return
    rows = [((m.get("occurred_at") or m["created_at"])[:16].replace("T", " "),
             m["created_at"][:10], m.get("project") or "-", m["type"],
             m.get("who") or "-", m["id"][:SHORT_ID],
             ("[deleted] " if m.get("is_deleted") else "")
             + ("[pinned] " if m.get("pinned") else "") + m["content"]) for m in out["memories"]]
    head = ("when", "stored", "project", "type", "who", "id", "content")
    cols = len(head) - 1
    widths = [min(max(len(r[i]) for r in [head, *rows]), 20) for i in range(cols)]
    room = max(shutil.get_terminal_size((120, 24)).columns - sum(widths) - 2 * cols, 30)
    for r in [head, *rows]:
        cells = [_one_line(r[i], widths[i]).ljust(widths[i]) for i in range(cols)]
        click.echo("  ".join([*cells, _one_line(r[cols], room)]).rstrip())
    if out["has_more"]:
        click.echo(f"... {out['total']} in all (--limit)")


@click.command()
@click.argument("memory_id")
@daemon_options
@click.pass_context
def get(ctx, memory_id) -> None:
    """Show one memory (an id or a unique prefix of it)."""
    emit(call(lambda: client(ctx).get(f"/api/memory/{memory_id}")))


@click.command()
@click.argument("memory_id")
@daemon_options
@click.pass_context
def history(ctx, memory_id) -> None:
    """The audit trail of one memory."""
    out = call(lambda: client(ctx).get(f"/api/memory/{memory_id}/history"))
    for e in out["events"]:
        click.echo(f"{e['created_at']}  {e['event']:<9} by {e['changed_by'] or '-'}:"
                   f" {e['reason'] or ''}")


def _actor(ctx: click.Context) -> str:
    """Who a change made from the CLI is recorded as: --agent (MNEMONIST_AGENT), else cli."""
    return identity(ctx).get("agent_id") or "cli"


def _new_version(out: dict[str, Any]) -> Any:
    """A write's new version: `new_version`, or `newVersion` from an older daemon."""
    return out.get("new_version", out.get("newVersion"))


def _patch(ctx: click.Context, memory_id: str, body: dict[str, Any]) -> dict[str, Any]:
    c = client(ctx)
    body = {**body, "changed_by": _actor(ctx)}
    return call(lambda: c.request("PATCH", f"/api/memory/{memory_id}",
                                  json={k: v for k, v in body.items() if v is not None}))


@click.command(short_help="Change a memory's text, tags, importance or type.")
@click.argument("memory_id")
@click.option("--content", default=None, help="the new text")
@click.option("--tags", default=None, help="comma-separated; replaces the tags")
@click.option("--importance", type=click.FloatRange(0, 1), default=None,
              help="the new importance, 0 to 1")
@click.option("--type", "type_", type=click.Choice(MEMORY_TYPES), default=None,
              help="the new type")
@click.option("--reason", required=True, help="why (kept in the history)")
@click.option("--json", "as_json", is_flag=True, help="print the JSON answer instead of text")
@daemon_options
@click.pass_context
def modify(ctx, memory_id, content, tags, importance, type_, reason, as_json) -> None:
    """Change a memory's content, tags, importance or type."""
    if content is None and tags is None and importance is None and type_ is None:
        fail("say what to change: --content, --tags, --importance or --type")
    tag_list = None if tags is None else [t for t in tags.split(",") if t.strip()]
    out = _patch(ctx, memory_id, {"content": content, "tags": tag_list,
                                  "importance": importance, "type": type_, "reason": reason})
    if as_json:
        return emit(out)
    if out["status"] == "unchanged":
        click.echo(f"unchanged: {out['id']} already holds these values")
    else:
        click.echo(f"modified {out['id']} (version {_new_version(out)})")


def _pin(ctx: click.Context, memory_id: str, pinned: bool, reason: str) -> None:
    out = _patch(ctx, memory_id, {"pinned": pinned, "reason": reason})
    word = "pinned" if pinned else "unpinned"
    if out["status"] == "unchanged":
        click.echo(f"{out['id']} was already {word}")
    else:
        click.echo(f"{word} {out['id']}")


@click.command()
@click.argument("memory_id")
@click.option("--reason", default="pinned from the CLI", show_default=True,
              help="why (kept in the history)")
@daemon_options
@click.pass_context
def pin(ctx, memory_id, reason) -> None:
    """Pin a memory: always in session context, never forgotten by a query."""
    _pin(ctx, memory_id, True, reason)


@click.command()
@click.argument("memory_id")
@click.option("--reason", default="unpinned from the CLI", show_default=True,
              help="why (kept in the history)")
@daemon_options
@click.pass_context
def unpin(ctx, memory_id, reason) -> None:
    """Unpin a memory."""
    _pin(ctx, memory_id, False, reason)


@click.command()
@click.argument("memory_id")
@click.option("--reason", required=True, help="why (kept in the history)")
@daemon_options
@click.pass_context
def recover(ctx, memory_id, reason) -> None:
    """Undo a forget (a soft delete) within the retention window."""
    out = call(lambda: client(ctx).post(f"/api/memory/{memory_id}/recover",
                                        {"reason": reason, "changed_by": _actor(ctx)}))
    click.echo(f"recovered {out['id']} (version {_new_version(out)})")


def _named(candidate_id: str, ref: str) -> bool:
    return candidate_id == ref or candidate_id.startswith(ref.lower())


@click.command(short_help="Forget memories by id or query (asks first; --yes).")
@click.argument("ids", nargs=-1)
@click.option("--query", default=None, help="forget what this query clearly matches")
@click.option("--reason", default=None, help="why (kept in the history; asked when missing)")
@click.option("--project", default=None, help="only this project's memories")
@click.option("--type", "type_", type=click.Choice(MEMORY_TYPES), default=None,
              help="only memories of this type")
@click.option("--include-pinned", is_flag=True, help="pinned memories may be selected too")
@click.option("--purge", "--hard", "purge", is_flag=True,
              help="remove the text for good (history, indexes, file), soft-deleted ones too")
@click.option("--yes", "-y", is_flag=True,
              help="do not ask for confirmation (required when stdin is not a terminal)")
@daemon_options
@click.pass_context
def forget(ctx, ids, query, reason, project, type_, include_pinned, purge, yes) -> None:
    """Preview, confirm and soft-delete memories (recoverable for the retention window).

    A query selects only memories that hold its words and score well; the preview shows each
    one's score and matched words, then it asks "forget N memories? [y/N]" (and for a reason
    when --reason is missing). --yes skips the question: from a script or a pipe, where
    nothing can answer it, --yes is required (without it: one line on stderr, exit 1).
    Execute sends the preview's token, so what runs is exactly what was shown. Exits 1 when
    it forgot nothing, or not every id named."""
    c = client(ctx)
    sel = {"ids": list(ids) or None, "query": query, "project": project, "type": type_,
           "force": purge, "include_pinned": include_pinned or None,
           "changed_by": _actor(ctx)}
    preview = call(lambda: c.post("/api/memory/forget", {**sel, "mode": "preview"}))
    for skipped in preview.get("excluded", []):
        click.echo(f"  not selected  {skipped['id'][:SHORT_ID]}  {skipped['why']}:"
                   f" {skipped['content'][:80]}")
    missing = [ref for ref in ids
               if not any(_named(cand["id"], ref) for cand in preview["candidates"])]
    why = "no such memory" + ("" if include_pinned else ", or pinned (--include-pinned)")
    if missing:
        click.echo(f"mnemonist: not selected ({why}): {', '.join(missing)}", err=True)
    if not preview["count"]:
        fail("nothing to forget")
    for cand in preview["candidates"]:
        score = f"{cand['score']:.3f} [{', '.join(cand['matched_terms'])}]  " if (
            "score" in cand) else ""
        click.echo(f"  {cand['id'][:SHORT_ID]}  {score}{cand['content'][:100]}")
    verb = "purge" if purge else "forget"
    if not yes and not sys.stdin.isatty():
        fail(f"{verb} asks for confirmation ([y/N]) but stdin is not a terminal: run it again"
             f" with --yes (and --reason) to {verb} these {preview['count']} memories")
    if not yes and not click.confirm(f"{verb} {preview['count']} memories?"):
        sys.exit(1)
    reason = reason or ("forgotten from the CLI" if yes else click.prompt("reason"))
    token = preview.get("confirm_token", preview.get("confirmToken"))  # an older daemon
    body = {**sel, "mode": "execute", "reason": reason, "confirm_token": token}
    out = call(lambda: c.post("/api/memory/forget", body))
    click.echo(f"{'purged' if purge else 'forgot'} {out['deleted']} memories")
    if missing or not out["deleted"]:
        sys.exit(1)


COMMANDS = (remember, recall, list_, get, history, modify, pin, unpin, forget, recover)

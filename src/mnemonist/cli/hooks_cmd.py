"""`mnemonist hook <event>`: what harness hooks run. Imports stay light: the hook path loads
neither FastAPI nor the embedding model."""

from __future__ import annotations

import click


@click.command(
    "hook",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
)
@click.argument("event", required=False, default="")
@click.option("--timeout", "timeout_ms", type=int, default=None,
              help="hard deadline in ms (default hooks.timeoutMs, 5000)")
@click.option("--format", "fmt", default="claude-code",
              help="claude-code (JSON hookSpecificOutput) | text | json")
@click.option("--harness", default="claude-code", help="harness name stored with the session")
@click.option("--agent", envvar="MNEMONIST_AGENT", default=None,
              help="read as this agent: global memories and its own (default: MNEMONIST_AGENT;"
                   " none: global memories only)")
@click.option("--user", envvar="MNEMONIST_USER", default=None,
              help="read as this user (default: MNEMONIST_USER)")
@click.pass_context
def hook(ctx: click.Context, event: str, timeout_ms: int | None, fmt: str,
         harness: str, agent: str | None, user: str | None) -> None:
    """Run a harness hook: session-start, user-prompt-submit, pre-compaction (pre-compact),
    compaction-complete, session-end. Reads the hook JSON on stdin; always exits 0."""
    from mnemonist.hooks.runner import emit, load_settings, log_line, run_hook

    url = (ctx.obj or {}).get("url")
    try:
        settings = load_settings(url, timeout_ms)
    except Exception:  # no home to log into (load_settings logs everything else): even a
        return         # broken installation prints nothing and must not block the agent
    try:
        out = run_hook(event, settings, fmt=fmt, harness=harness, agent=agent, user=user)
    except Exception as exc:
        log_line(settings, event, f"hook failed: {type(exc).__name__}: {exc}")
        out = ""
    if out:
        emit(out)


COMMANDS = (hook,)

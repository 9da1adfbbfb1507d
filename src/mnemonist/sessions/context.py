"""The context blocks hooks inject: markdown, sections in priority order, within a budget.

A section is either memories (one line each, cut to `memory_chars`) or a ready text (the
recovery digest). Sections fill in order until the character budget or the memory cap is
reached; a memory appears once even when several sections hold it. No I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mnemonist.model.memory import Memory
from mnemonist.sessions.digest import clip


@dataclass
class Section:
    title: str
    items: list[tuple[str, str]] = field(default_factory=list)  # (memory id, line)
    text: str | None = None  # a ready block instead of items


def origin(m: Memory, where: str | None = None) -> str:
    """Where an injected memory came from: a session turn (its session and time), a memory
    file (`where` = path:lines), or a memory (its id)."""
    if m.source_type == "session":
        who = f", {m.who}" if m.who else ""
        return f"session {(m.source_id or '')[:8]} {m.occurred_at[:16].replace('T', ' ')}{who}"
    if m.source_type == "file":
        return where or (m.source_id or "file").removeprefix("file:")
    return f"id {m.id}"


def memory_line(m: Memory, limit: int, where: str | None = None) -> str:
    tags = [m.type]
    if m.pinned:
        tags.append("pinned")
    if m.source_type not in ("session", "file") and m.occurred_at:
        tags.append(m.occurred_at[:10])
    tags.append(origin(m, where))
    return f"- [{', '.join(tags)}] {clip(m.content, limit)}"


def memory_section(title: str, items: list[Memory], limit: int,
                   where: dict[str, str] | None = None) -> Section:
    where = where or {}
    return Section(title, [(m.id, memory_line(m, limit, where.get(m.id))) for m in items])


def render(
    header: str, sections: list[Section], budget: int, max_items: int
) -> tuple[str, list[str]]:
    """(markdown, ids of the memories it holds); empty when no section contributed."""
    out = header.rstrip()
    ids: list[str] = []
    seen: set[str] = set()
    contributed = False
    for sec in sections:
        if sec.text:
            piece = f"\n\n{sec.text.strip()}"
            if len(out) + len(piece) <= budget:
                out += piece
                contributed = True
            continue
        head_written = False
        for memory_id, line in sec.items:
            if memory_id in seen:
                continue
            if len(ids) >= max_items:
                break
            piece = ("" if head_written else f"\n\n## {sec.title}") + "\n" + line
            if len(out) + len(piece) > budget:
                continue  # a shorter line further down may still fit
            out += piece
            head_written = True
            ids.append(memory_id)
            seen.add(memory_id)
            contributed = True
    return (out + "\n", ids) if contributed else ("", [])


SESSION_HEADER = (
    "# Memory (mnemonist){project}\n"
    "Background from earlier sessions; the user's current instructions win. Search for more"
    " with memory_search; save what is worth keeping with memory_store."
)

PROMPT_HEADER = "# Relevant memories (mnemonist)"

PRE_COMPACTION_INSTRUCTIONS = """\
mnemonist saved a checkpoint of this session{checkpoint} and will restore it after compaction.
When summarising, keep:
- the current task, how far it got and the very next step;
- decisions made in this session, with their reasons;
- files being edited{files};
- errors not yet resolved and open questions;
- constraints and preferences the user stated.
"""


def session_header(project: str | None) -> str:
    return SESSION_HEADER.format(project=f": project {project}" if project else "")


def pre_compaction_instructions(checkpoint_id: str | None, files: list[str]) -> str:
    shown = ", ".join(f.rsplit(" (", 1)[0] for f in files[-8:])
    return PRE_COMPACTION_INSTRUCTIONS.format(
        checkpoint=f" ({checkpoint_id[:8]})" if checkpoint_id else "",
        files=f" ({shown})" if shown else "",
    )

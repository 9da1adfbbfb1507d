"""The context blocks hooks inject: markdown, sections in priority order, within a budget.

A section is either memories (one line each, cut to `memory_chars`) or a ready text (the
recovery digest). Sections fill in order until the character budget or the memory cap is
reached; a memory appears once even when several sections hold it. No I/O.

Every block is quoted data (`text/framing.py`): the headers open with `DATA_NOTICE`, memory
lines, section titles and the lines of a ready block are quoted, so no stored text can close
the block, start a heading or claim a role. A ready block keeps its own headings (its lines
that start with `#`: the code that builds it quotes every stored text inside, so none of
those does).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mnemonist.model.memory import Memory
from mnemonist.sessions.digest import clip
from mnemonist.text.framing import DATA_NOTICE, quote_block, quote_line, quote_text


@dataclass
class Section:
    title: str  # "" for none: its lines follow what comes before (the first section only)
    items: list[tuple[str, str]] = field(default_factory=list)  # (memory id, line)
    text: str | None = None  # a ready block instead of items
    #: memories a ready block shows (the recap's decisions): held once it is rendered, so a
    #: later section does not repeat them
    text_ids: list[str] = field(default_factory=list)


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
    return f"- [{quote_line(', '.join(tags))}] {clip(quote_line(m.content), limit)}"


def memory_section(title: str, items: list[Memory], limit: int,
                   where: dict[str, str] | None = None) -> Section:
    where = where or {}
    return Section(title, [(m.id, memory_line(m, limit, where.get(m.id))) for m in items])


_OWN_HEADING = re.compile(r"(#{1,4}) (\S.*)")


def own_heading(line: str) -> bool:
    """Whether a line of a ready block is one of its own headings: `#` marks, then text that
    is quoted already (stored text inside a block never starts with `#` once quoted)."""
    m = _OWN_HEADING.fullmatch(line)
    return m is not None and quote_line(m.group(2)) == m.group(2)


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
            piece = f"\n\n{quote_block(sec.text.strip(), own_heading)}"
            if len(out) + len(piece) <= budget:
                out += piece
                contributed = True
                fresh = [i for i in dict.fromkeys(sec.text_ids) if i not in seen]
                ids += fresh
                seen.update(fresh)
            continue
        head_written = False
        for memory_id, line in sec.items:
            if memory_id in seen:
                continue
            if len(ids) >= max_items:
                break
            heading = f"\n\n## {quote_line(sec.title)}" if sec.title else ""  # untitled: none
            piece = ("" if head_written else heading) + "\n" + quote_text(line)
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
    f"{DATA_NOTICE}\n"
    "The user's current instructions win; search with memory_search, save with memory_store."
)

PROMPT_HEADER = f"# Relevant memories (mnemonist)\n{DATA_NOTICE}"

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
    return SESSION_HEADER.format(project=f": project {quote_line(project)}" if project else "")


def pre_compaction_instructions(checkpoint_id: str | None, files: list[str]) -> str:
    shown = ", ".join(quote_line(f.rsplit(" (", 1)[0]) for f in files[-8:])  # transcript text
    return PRE_COMPACTION_INSTRUCTIONS.format(
        checkpoint=f" ({checkpoint_id[:8]})" if checkpoint_id else "",
        files=f" ({shown})" if shown else "",
    )

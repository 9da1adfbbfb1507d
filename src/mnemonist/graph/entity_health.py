"""Entity health, run by the maintenance worker as routine work (and by
`POST /api/repair/entity-health`): variants of one name are folded into one entity, and
entities the extractor no longer finds in any of their memories are removed.

One run examines the next `graph.entityHealth.batchSize` entities after its cursor (in the
order they were created: entity ids are time-ordered), so a large graph is worked through
over several runs and each run resumes where the last stopped. Once every entity has been
examined, a run looks only at entities created since; a new version of the extractor's rules
(`text.entities.RULES_VERSION`) starts the walk over, since what it calls junk has changed.

**Fold.** Within one scope (project, agent, user), two entities are one when their names
differ only by case, punctuation or spacing ("next.js" / "nextjs", "gpt-4" / "gpt4") or by
the plural of their last word ("TTL" / "TTLs", "API" / "APIs", "database" / "databases",
"feature flag" / "feature flags"). The one with more links keeps its id and name, the other's
links, attributes, aspects and relations move to it (`store/entity_health.py`, `fold`) and its name
becomes an alias the inline linker resolves. Not folded by plural: technology names (each is
a canonical name of its own: "pandas" is not "panda"), and a single capitalised word that may
be a person's name ("William" / "Williams"). Domains are never folded.

**Junk.** An entity is junk when no memory linked to it still yields its name (or one of its
aliases) when the inline linker's extraction runs on the memory's text again: "Understood",
"Owner", "Hub" of "Docker Hub" were found by older rules. Only entities the inline linker
alone wrote are judged: one with a link of another confidence (the LLM pipeline's), or a
stated or LLM-extracted relation, is left alone. Removed with its links, attributes, aspects
and relations. An entity with more than `MAX_TEXTS` linked memories is not judged (too many
texts to read in one run; a name found that often is rarely junk).

**Orphans** (entities no memory links any more) are the retention sweep's (it removes them,
keeping those a stated relation holds); this pass only counts them.

Each fold and removal is one row of `entity_health_log` (migration 21), shown by
`/api/diagnostics/graph` and the dashboard's graph page. Reading and extraction run outside
the write lock; each write re-checks what it read (an entity linked to a new memory since is
left for the next run).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from mnemonist.model.config import GraphConfig
from mnemonist.model.memory import utcnow
from mnemonist.store import entity_health as store
from mnemonist.store.db import Database
from mnemonist.store.entity_links import INLINE_CONFIDENCE, named_keys
from mnemonist.text.entities import RULES_VERSION

#: the extractor's rules this pass judges junk by: a new version examines every entity again
RULES = RULES_VERSION
MAX_TEXTS = 2000
RECENT = 20

_ACRONYM_PLURAL = re.compile(r"[A-Z][A-Z0-9]+s")
_SEPARATORS = re.compile(r"(?<!\d)[\s.\-_'’]+|[\s.\-_'’]+(?!\d)")


def shape(canonical: str) -> str:
    """The name without case, spacing and punctuation (kept between two digits: "1.2")."""
    return _SEPARATORS.sub("", canonical.lower())


def singulars(name: str) -> set[str]:
    """The shapes the name could have in the singular, when its last word looks plural: an
    acronym with an "s" ("APIs", "GPUs"), or a word in "s" but not in "ss", "us", "is"
    ("class", "status", "redis")."""
    head, _, written = name.rpartition(" ")
    last = written.lower()
    if _ACRONYM_PLURAL.fullmatch(written):
        out = {last[:-1]}
    elif len(last) < 3 or not last.isalpha() or not last.endswith("s") or last.endswith(
            ("ss", "us", "is")):
        return set()
    else:
        out = {last[:-1]}
        if last.endswith("es"):
            out.add(last[:-2])
        if last.endswith("ies"):
            out.add(last[:-3] + "y")
    return {shape(f"{head} {w}" if head else w) for w in out if len(w) >= 2}


def _person_like(e: dict[str, Any]) -> bool:
    """One capitalised word typed as a name or a person: "William", "Williams"."""
    name = str(e["name"])
    return (" " not in name and name[:1].isupper() and name[1:].islower()
            and e["entity_type"] in ("name", "person"))


def _foldable(a: dict[str, Any], b: dict[str, Any], plural: bool) -> bool:
    types = {a["entity_type"], b["entity_type"]}
    if "domain" in types or a["entity_type"] == b["entity_type"] == "technology":
        return False
    return not (plural and ("technology" in types or _person_like(a) or _person_like(b)))


def fold_groups(entities: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The entities of one scope that are one name, in groups of two or more, the entity that
    keeps its id first (most links, then the shorter name, then the older)."""
    by_shape: dict[str, list[dict[str, Any]]] = {}
    for e in entities:
        by_shape.setdefault(shape(e["canonical_name"]), []).append(e)
    parent = {e["id"]: e["id"] for e in entities}

    def root(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def join(a: dict[str, Any], b: dict[str, Any], plural: bool) -> None:
        if a["id"] != b["id"] and _foldable(a, b, plural):
            parent[root(a["id"])] = root(b["id"])

    for same in by_shape.values():
        for i, one in enumerate(same):
            for other in same[i + 1 :]:
                join(one, other, False)
    for e in entities:
        for key in singulars(str(e["name"])):
            for other in by_shape.get(key, ()):
                join(e, other, True)
    groups: dict[str, list[dict[str, Any]]] = {}
    for e in entities:
        groups.setdefault(root(e["id"]), []).append(e)
    return [sorted(g, key=lambda e: (-int(e["mentions"]), len(e["canonical_name"]), e["id"]))
            for g in groups.values() if len(g) > 1]


@dataclass
class Run:
    examined: int = 0
    folded: list[dict[str, Any]] = field(default_factory=list)
    junk: list[dict[str, Any]] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1


_KEYS = ("id", "name", "canonical_name", "entity_type", "mentions", "project", "agent_id",
         "user_id")


def _rows(rows: list[Any]) -> list[dict[str, Any]]:
    return [dict(zip(_KEYS, tuple(r), strict=True)) for r in rows]


def _scope(e: dict[str, Any]) -> tuple[str, str, str]:
    return (e["project"], e["agent_id"], e["user_id"])


def run(db: Database, cfg: GraphConfig, *, batch_size: int | None = None) -> dict[str, Any]:
    """One run of the pass; returns what it examined, folded and removed."""
    size = batch_size or cfg.entity_health.batch_size
    conn = db.reader()
    state = store.load_state(conn)
    cursor = state.get("cursor", "") if state.get("rules") == RULES else ""
    batch = _rows(store.entities_after(conn, cursor, size))
    out = Run(examined=len(batch))
    gone: set[str] = set()
    for scope in sorted({_scope(e) for e in batch}):
        mine = {e["id"] for e in batch if _scope(e) == scope}
        everyone = _rows(store.entities_in_scope(conn, scope))
        for group in fold_groups(everyone):
            if not mine & {e["id"] for e in group}:
                continue  # examined when one of them was new
            keep, *rest = group
            for other in rest:
                now = utcnow()
                with db.write_tx() as w:
                    done = store.fold(w, keep["id"], other["id"], now)
                if done is not None:
                    out.folded.append(done)
                    gone.add(other["id"])
    texts: dict[str, set[str]] = {}
    for e in batch:
        if e["id"] not in gone:
            _judge(db, e, texts, out)
    now = utcnow()
    with db.write_tx() as w:
        state = {"rules": RULES, "cursor": batch[-1]["id"] if batch else cursor,
                 "caught_up": len(batch) < size, "last_run": now,
                 "last": {"examined": out.examined, "folded": len(out.folded),
                          "junk": len(out.junk)}}
        store.save_state(w, state, now)
    return {"examined": out.examined, "folded": out.folded, "junk_removed": out.junk,
            "skipped": dict(sorted(out.skipped.items())), "caught_up": len(batch) < size}


def _judge(db: Database, e: dict[str, Any], texts: dict[str, set[str]], out: Run) -> None:
    """Remove `e` when no memory linked to it yields its name (or an alias) any more."""
    conn = db.reader()
    entity_id = e["id"]
    if store.held_by_relation_not_from_text(conn, entity_id):
        out.skip("a stated or LLM relation holds it")
        return
    links = store.links_with_texts(conn, entity_id, MAX_TEXTS + 1)
    if not links:
        return  # an orphan: the retention sweep's
    if len(links) > MAX_TEXTS:
        out.skip(f"more than {MAX_TEXTS} linked memories")
        return
    if any(abs(float(c) - INLINE_CONFIDENCE) > 1e-9 for _, c, _ in links):
        out.skip("linked by the LLM pipeline")
        return
    if any(content is None for _, _, content in links):
        out.skip("a linked memory is not there")
        return
    names = {e["canonical_name"], *store.aliases(conn, entity_id)}
    for memory_id, _, content in links:
        if memory_id not in texts:
            texts[memory_id] = named_keys(str(content))
        if names & texts[memory_id]:
            return
    checked = {memory_id for memory_id, _, _ in links}
    now = utcnow()
    with db.write_tx() as w:
        current = store.linked_memory_ids(w, entity_id)
        if not current or not current <= checked:
            out.skip("linked again since it was read")
            return
        done = store.remove(w, entity_id, now, "no linked memory names it any more")
    if done is not None:
        out.junk.append(done)


def report(conn: Any, project: str | None = None) -> dict[str, Any]:
    """The `entity_health` section of `/api/diagnostics/graph`."""
    state = store.load_state(conn)
    current = state.get("rules") == RULES
    cursor = state.get("cursor", "") if current else ""
    found = store.report_counts(conn, cursor, project)
    done = store.counts(conn, project)
    return {
        "folded": done.get("fold", 0), "junk_removed": done.get("junk", 0),
        "aliases": found["aliases"], "orphans": found["orphans"],
        "pending": found["pending"],
        "last_run": state.get("last_run"), "last": state.get("last") if current else None,
        "recent": store.recent(conn, RECENT, project),
    }

"""Relations a person or agent states (`POST /api/graph/relations`, the `knowledge_relate` MCP
tool) and their retraction.

A stated relation is reason `user-stated`, confidence 1.0, with the stater's reason text as
its `note`. It lives in a scope like a memory: `project`, and `agent_id` / `user_id` when the
statement is private to an owner; its two entities are that scope's (created when new, so a
statement may name things no memory names yet). Stating an edge that the text already showed
(a `pattern-matched` dependency, an LLM's triple) promotes that row; the evidence it had is
kept in `derived_from` and comes back when the statement is retracted. Retracting removes the
inferred edges that used it as a premise at once (the maintenance pass would too, later).
"""

from __future__ import annotations

import json
import sqlite3

from mnemonist.graph.scope import entity_scope_clause
from mnemonist.model.answers_graph import RelationRetracted, RelationStated, RelationView
from mnemonist.model.graph import RelateRequest, RetractRequest
from mnemonist.model.memory import utcnow
from mnemonist.service.errors import Conflict, NotFound
from mnemonist.service.graph import entity_item
from mnemonist.service.part import Part
from mnemonist.store import graph
from mnemonist.store import graph_relations as store
from mnemonist.store.row_ids import time_ordered_id
from mnemonist.text.entities import canonical_name
from mnemonist.text.entity_words import TECH_ALIASES
from mnemonist.text.scrub import scrub_credentials

STATED = "user-stated"


def _named(name: str) -> tuple[str, str]:
    """(name, entity type): credentials scrubbed (as in every stored name); a technology
    alias becomes its canonical form ("postgres")."""
    name = scrub_credentials(name).text
    alias = TECH_ALIASES.get(canonical_name(name))
    return (alias, "technology") if alias else (" ".join(name.split()), "name")


def relation_item(conn: sqlite3.Connection, relation_id: str) -> RelationView:
    r = store.relation_by_id(conn, relation_id)
    assert r is not None
    ends = {e["id"]: entity_item(e) for e in graph.entities_by_ids(
        conn, [r["source_entity_id"], r["target_entity_id"]])}
    return {"id": r["id"], "source": ends[r["source_entity_id"]],
            "target": ends[r["target_entity_id"]], "type": r["relation_type"],
            "reason": r["reason"], "confidence": round(float(r["confidence"]), 4),
            "note": r["note"], "created_at": r["created_at"], "updated_at": r["updated_at"]}


class GraphRelationOps(Part):
    def relate(self, req: RelateRequest) -> RelationStated | RelationRetracted:
        """State the relation (or retract it, `retract: true`)."""
        if req.retract:
            return self._retract_triple(req)
        scope = (req.project or "", req.agent_id or "", req.user_id or "")
        now = utcnow()
        stats = graph.GraphWriteStats()
        note = scrub_credentials(req.reason).text  # the stater's why, kept with the relation
        with self.core.db.write_tx() as conn:
            (source_name, source_type), (target_name, target_type) = (
                _named(req.source), _named(req.target))
            source = graph.upsert_entity(conn, source_name, stats, source_type, scope=scope)
            target = graph.upsert_entity(conn, target_name, stats, target_type, scope=scope)
            if source == target:
                raise Conflict("source and target are the same entity", code="same_entity",
                               field="target")
            row = store.relation_of(conn, source, target, req.relation_type)
            replaced = None
            if row is None:
                relation_id = time_ordered_id()
                store.insert_stated(conn, relation_id, source, target, req.relation_type,
                                    graph.REASONS[STATED], STATED, note, now)
            else:
                relation_id = row["id"]
                was = None
                if row["reason"] != STATED:
                    replaced = row["reason"]
                    was = json.dumps({"was": {"reason": row["reason"],
                                              "confidence": row["confidence"],
                                              "boost": row["boost"]}})
                store.promote_to_stated(conn, relation_id, STATED, graph.REASONS[STATED], note,
                                        was, now)
            out = relation_item(conn, relation_id)
        return {"relation": out, "created": row is None, "replaced_reason": replaced,
                "entities_created": stats.entities_created}

    def _retract_triple(self, req: RelateRequest) -> RelationRetracted:
        scope = (req.project or "", req.agent_id or "", req.user_id or "")
        conn = self.core.db.reader()
        keys = [canonical_name(_named(n)[0]) for n in (req.source, req.target)]
        found = store.stated_relation_id(conn, scope, keys[0], keys[1], req.relation_type,
                                         STATED)
        if found is None:
            raise NotFound(f"no stated relation {req.source} {req.relation_type} {req.target}"
                           " in this project and scope", field="source")
        return self.retract_relation(found, RetractRequest(
            agent_id=req.agent_id, user_id=req.user_id, reason=req.reason))

    def retract_relation(self, relation_id: str, req: RetractRequest) -> RelationRetracted:
        """Take back a stated relation: the evidence it replaced comes back, or the row goes
        (with entities only it kept); inferred edges built on it go at once."""
        where, args = entity_scope_clause(req, "s")
        with self.core.db.write_tx() as conn:
            row = store.relation_in_scope(conn, relation_id, where, args)
            if row is None:
                raise NotFound(f"no relation {relation_id}", field="relation_id")
            if row["reason"] != STATED:
                raise Conflict(f"relation {relation_id} is {row['reason']}, not stated: only a"
                               " stated relation can be retracted", code="not_stated")
            was = (json.loads(row["derived_from"]) if row["derived_from"] else {}).get("was")
            now = utcnow()
            if was:
                store.restore_evidence(conn, relation_id, was["reason"], was["confidence"],
                                       was.get("boost") or 0.0, now)
            else:
                store.delete_relation(conn, relation_id)
            inferred = store.delete_inferred_from(conn, relation_id)
            gone = 0
            for entity_id in (row["source_entity_id"], row["target_entity_id"]):
                gone += store.delete_entity_if_unused(conn, entity_id)
        return {"retracted": relation_id, "restored_reason": was["reason"] if was else None,
                "inferred_removed": inferred, "entities_removed": gone}

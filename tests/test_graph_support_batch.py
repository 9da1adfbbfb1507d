"""The support of a walk's edges (the memories that link both ends), asked for all the edges
of one step at once: the same memories in the same order as edge by edge, in one statement
on PostgreSQL and three at most on SQLite instead of one or two per edge (each a round trip on
PostgreSQL)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import run_daemon
from mnemonist.graph.scoped import Scoped
from mnemonist.graph.walks import _edges
from mnemonist.store.backend import is_postgres

pytestmark = pytest.mark.both_stores

NOTES = [
    "Kafka feeds the billing service and the ledger service",
    "The billing service reads from Postgres and writes to Kafka",
    "Redis caches sessions for the billing service",
    "The ledger service stores entries in Postgres",
    "Grafana shows Kafka lag and Redis memory",
    "The billing service calls Stripe for card payments",
    "Stripe webhooks reach the billing service through Kafka",
    "Postgres backups run nightly; Kafka retention is seven days",
]


class Counting:
    """A read connection that counts its statements."""

    def __init__(self, conn: Any) -> None:
        self.conn, self.statements = conn, 0
        self.dialect = getattr(conn, "dialect", "sqlite")

    def execute(self, sql: str, params: Any = ()) -> Any:
        self.statements += 1
        return self.conn.execute(sql, params)


def test_a_step_asks_once_and_finds_what_edge_by_edge_finds(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as live:
        for note in NOTES:
            live.remember(note)
        conn = live.daemon.db.reader()
        ranked = [r[0] for r in live.query("SELECT id FROM entities ORDER BY mentions DESC, id")]
        # at the hub every other end is rarer (its links drive); at a rare entity with
        # several edges the others are commoner (the entity's own links drive)
        rare = next(e for e in reversed(ranked)
                    if len({x.other(e) for x, _ in _edges(conn, e, 0.0, "both", 100)}) >= 2)
        for at in (ranked[0], rare):
            edges = [e for e, _ in _edges(conn, at, 0.0, "both", 100)]
            others = sorted({e.other(at) for e in edges})
            assert len(others) >= 2, others
            one_by_one = Counting(conn)
            single = Scoped(one_by_one, None)  # type: ignore[arg-type]
            expected = {o: single.supporting(at, o) for o in others}
            assert any(expected.values())
            batched = Counting(conn)
            scoped = Scoped(batched, None)  # type: ignore[arg-type]
            scoped.prefetch(at, edges)
            found = {o: scoped.supporting(at, o) for o in others}
            assert found == expected
            # one round trip on PostgreSQL (the server picks each pair's drive); SQLite
            # asks for the mention counts, then the rarer and the commoner others apart
            most = 1 if is_postgres(conn) else 3
            assert batched.statements <= most < one_by_one.statements


def _one_by_one(conn: Any, entity_id: str, fetch: int) -> list[tuple[str, ...]]:
    """The edges at one entity as the walk read them before it read several at once."""
    cols = "id, source_entity_id, target_entity_id, relation_type, confidence, mentions"
    return [tuple(r) for r in conn.execute(
        f"SELECT * FROM (SELECT {cols}, strength FROM relations WHERE source_entity_id = ?1"
        f" AND confidence >= ?2 UNION ALL SELECT {cols}, strength FROM relations"
        " WHERE target_entity_id = ?1 AND confidence >= ?2 AND source_entity_id != ?1)"
        " ORDER BY confidence * strength DESC, mentions DESC, id LIMIT ?3",
        (entity_id, 0.0, fetch)).fetchall()]


def test_the_edges_of_several_entities_in_one_statement_are_each_ones_edges(
    tmp_path: Path,
) -> None:
    from mnemonist.graph.walks import _edges_many

    with run_daemon(tmp_path) as live:
        for note in NOTES:
            live.remember(note)
        conn = live.daemon.db.reader()
        ids = [r[0] for r in live.query("SELECT id FROM entities ORDER BY id")]
        assert len(ids) >= 5
        for fetch in (2, 40):
            many = _edges_many(conn, ids, 0.0, "both", fetch)
            for entity in ids:
                got = [(e.id, e.source, e.target, e.relation_type, e.confidence, e.mentions,
                        e.strength) for e, _ in many[entity]]
                assert got == _one_by_one(conn, entity, fetch), entity

"""Bulk import links entities per chunk (`entity_links.link_many`): the graph rows it writes
are those of remembering the same memories one after another, on both stores."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from mnemonist.daemon import open_memory
from mnemonist.model.requests import ImportRequest, RememberRequest

TEXTS = [
    ("ShopApi depends on ShopDb for every order write.", "shop"),  # tentative ShopApi: unlinked
    ("We decided to move ShopApi to Kubernetes next quarter; Alice owns it.", "shop"),
    ("Alice reviewed the ShopDb migration with Bob and PostgreSQL experts.", "shop"),
    ("ShopApi depends on ShopDb, and Redis caches its sessions.", "shop"),  # stated again
    ("Bob said Kubernetes upgrades must never happen on Fridays.", "shop"),
    ("Alice and Bob met in Berlin to plan the PostgreSQL upgrade.", "infra"),  # other scope
    ("Redis is used by ShopApi for rate limits.", "shop"),
    ("Reminder: ShopApi depends on ShopDb during checkout.", "shop"),  # a second statement
    ("Nothing named here at all, just a plain note.", "shop"),
    ("Berlin office: Alice, Bob and Carol work on Redis and Kubernetes together.", "infra"),
    ("Alice and Bob met in Berlin to plan the PostgreSQL upgrade.", "infra"),  # duplicate
]

GRAPH = {
    "entities": "SELECT name, canonical_name, entity_type, mentions, project, agent_id, user_id"
                " FROM entities",
    "mentions": "SELECT m.content, e.canonical_name, mm.mention_text, mm.confidence"
                " FROM memory_entity_mentions mm JOIN memories m ON m.id = mm.memory_id"
                " JOIN entities e ON e.id = mm.entity_id",
    "relations": "SELECT s.canonical_name, t.canonical_name, r.relation_type, r.mentions,"
                 " r.confidence, r.reason, r.strength FROM relations r"
                 " JOIN entities s ON s.id = r.source_entity_id"
                 " JOIN entities t ON t.id = r.target_entity_id",
    "attributes": "SELECT e.canonical_name, m.content, a.kind, a.content, a.importance,"
                  " a.source FROM entity_attributes a JOIN entities e ON e.id = a.entity_id"
                  " JOIN memories m ON m.id = a.memory_id",
}


def _graph(home: Path, config: dict[str, Any], write) -> dict[str, list]:
    with open_memory(home, {"embedding": {"provider": "none"}, **config}) as daemon:
        write(daemon.service)
        conn = daemon.service.core.db.reader()
        out = {name: [tuple(str(v) for v in row) for row in conn.execute(sql).fetchall()]
               for name, sql in GRAPH.items()}
    # a co-occurrence pair is unordered: its source is the smaller of two random ids
    out["relations"] = [(*sorted(r[:2]), *r[2:]) if r[2] == "co_occurrence" else r
                        for r in out["relations"]]
    return {name: sorted(rows) for name, rows in out.items()}


def _prose_done(svc: Any, timeout_s: float = 60.0) -> None:
    """The import's noun phrases and relations are read by the background prose job: wait
    for it (the daemon's worker polls every second)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        left = svc.core.db.reader().execute(
            "SELECT COUNT(*) FROM memory_jobs WHERE job_type = 'prose_link'"
            " AND status != 'completed'").fetchone()[0]
        if not left:
            return
        time.sleep(0.1)
    raise AssertionError("the prose job did not finish")


def _requests() -> list[RememberRequest]:
    return [RememberRequest(content=text, project=project) for text, project in TEXTS]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_import_links_as_one_by_one_remembers(tmp_path: Path, backend: str,
                                              request: pytest.FixtureRequest) -> None:
    def one_by_one(svc: Any) -> None:
        for req in _requests():
            svc.memories.remember(req)

    def imported(svc: Any) -> None:
        out = svc.carry.import_memories(ImportRequest(items=_requests()))
        assert out["created"] == len(TEXTS) - 1  # the repeated text is not a second memory
        _prose_done(svc)

    configs: list[dict[str, Any]] = [{}, {}]
    server = request.getfixturevalue("postgres_server") if backend == "postgresql" else None
    if server is not None:
        configs = [{"storage": {"url": server.create_database()}} for _ in range(2)]
    try:
        expected = _graph(tmp_path / "a", configs[0], one_by_one)
        got = _graph(tmp_path / "b", configs[1], imported)
    finally:
        if server is not None:
            for config in configs:
                server.drop_database(config["storage"]["url"])
    assert expected["entities"], "the texts name entities"
    assert any(r[2] == "depends_on" and r[5] == "multi-memory" for r in expected["relations"])
    assert any(r[2] == "co_occurrence" and int(r[3]) >= 2 for r in expected["relations"])
    for table in GRAPH:
        assert got[table] == expected[table], table

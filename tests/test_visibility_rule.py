"""One rule decides who sees what (store/filters.py, `visible_scopes`): the memories' clause
and the entities' clause are two renderings of it, NULL for "global" in `memories` and '' in
`entities`. Over every mix of scopes, a caller sees a memory exactly when it sees an entity of
the same scope."""

from __future__ import annotations

import itertools
import sqlite3

import pytest

from mnemonist.graph.scope import entity_scope_clause
from mnemonist.model.requests import Caller
from mnemonist.search.filters import visibility_clause as search_visibility_clause
from mnemonist.store.filters import entity_owner_clause, visibility_clause, visible_scopes

IDS = (None, "a1", "a2")
USERS = (None, "u1", "u2")
CALLERS = [
    None,
    Caller(),
    Caller(agent_id="a1"),
    Caller(user_id="u2"),
    Caller(agent_id="a1", user_id="u1"),
    Caller(agent_id="a1", agents=["a2"]),
    Caller(users=["u1", "u2"]),
    Caller(agents=["*"]),
    Caller(agent_id="a2", agents=["*"], users=["*"]),
    Caller(user_id="u1", agents=["a1", "a2"], users=["*"]),
]


@pytest.fixture(scope="module")
def db() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, agent_id TEXT, user_id TEXT)")
    conn.execute("CREATE TABLE entities (id INTEGER PRIMARY KEY, agent_id TEXT NOT NULL,"
                 " user_id TEXT NOT NULL, project TEXT NOT NULL DEFAULT '')")
    for i, (agent, user) in enumerate(itertools.product(IDS, USERS)):
        conn.execute("INSERT INTO memories VALUES (?, ?, ?)", (i, agent, user))
        conn.execute("INSERT INTO entities (id, agent_id, user_id) VALUES (?, ?, ?)",
                     (i, agent or "", user or ""))
    return conn


def _ids(conn: sqlite3.Connection, table: str, alias: str, clause: tuple[str, list]) -> set[int]:
    where, args = clause
    return {r[0] for r in conn.execute(f"SELECT {alias}.id FROM {table} {alias} WHERE {where}",
                                       args)}


@pytest.mark.parametrize("caller", CALLERS, ids=repr)
def test_memories_and_entities_of_a_scope_are_seen_alike(db: sqlite3.Connection,
                                                         caller: Caller | None) -> None:
    memories = _ids(db, "memories", "m", visibility_clause(caller))
    entities = _ids(db, "entities", "e", entity_owner_clause(caller, "e"))
    assert memories == entities
    assert 0 in memories  # the global scope, always
    assert _ids(db, "entities", "s", entity_scope_clause(caller, "s")) == entities


@pytest.mark.parametrize("caller", CALLERS, ids=repr)
def test_each_scope_seen_is_one_the_rule_names(db: sqlite3.Connection,
                                               caller: Caller | None) -> None:
    allowed = dict(visible_scopes(caller))
    for agent, user in db.execute(
            f"SELECT m.agent_id, m.user_id FROM memories m WHERE {visibility_clause(caller)[0]}",
            visibility_clause(caller)[1]):
        for column, value in (("agent_id", agent), ("user_id", user)):
            names = allowed[column]
            assert value is None or names is None or value in names


def test_search_reads_the_stores_clause() -> None:
    """search.filters hands out the store's clause, not a copy of it."""
    assert search_visibility_clause is visibility_clause

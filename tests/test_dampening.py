"""Post-fusion dampening stages on hand-made hits, and hub dampening over real graph tables."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

import pytest

from mnemonist.search import dampening
from mnemonist.search.dampening import gravity, hub, resolution
from mnemonist.store.db import Database
from mnemonist.store.migrations import migrate


@dataclass
class M:
    content: str
    type: str = "fact"
    id: str = "m"
    seq: int = 0


@dataclass
class H:
    memory: M
    score: float
    source: str = "vector"
    extra: dict = field(default_factory=dict)


def test_gravity_halves_semantic_hits_that_share_no_query_term():
    hits = [H(M("The team deployed the payments service"), 0.8),
            H(M("Bananas are rich in potassium"), 0.6),
            H(M("Bananas are rich in potassium"), 0.6, source="keyword"),
            H(M("Bananas again"), 0.2)]
    gravity(hits, "when did we deploy payments?", 0.5)
    assert [h.score for h in hits] == [0.8, 0.3, 0.6, 0.2]


def test_gravity_spares_memories_whose_hints_matched_the_query():
    hits = [H(M("We adopted a beagle", seq=1), 0.8), H(M("Bananas are yellow", seq=2), 0.8)]
    gravity(hits, "does maria have a dog?", 0.5, exempt={1})
    assert [h.score for h in hits] == [0.8, 0.4]


def test_resolution_boosts_decisions_and_dated_memories():
    hits = [H(M("We decided to use PostgreSQL", type="decision"), 0.5),
            H(M("The offsite is planned for the second week of March in Lisbon"), 0.5),
            H(M("Short: March"), 0.5),
            H(M("A plain fact without any time anchor at all, long enough"), 0.5)]
    resolution(hits, 1.2)
    assert [round(h.score, 3) for h in hits] == [0.6, 0.55, 0.5, 0.5]


def test_resolution_treats_decision_language_as_a_decision_unless_turned_off():
    def hits():
        return [H(M("In the end we went with SQLite for the daemon store"), 0.5),
                H(M("The daemon store is SQLite, a single file on disk"), 0.5)]

    on = hits()
    resolution(on, 1.2)
    assert [round(h.score, 3) for h in on] == [0.6, 0.5]
    off = hits()
    resolution(off, 1.2, decision_language=False)
    assert [h.score for h in off] == [0.5, 0.5]


@pytest.fixture
def db(tmp_path):
    database = Database(tmp_path / "g.db")
    migrate(database)
    yield database
    database.close()


def _entities(conn, mentions: list[int]) -> None:
    """Entities e0, e1, … with these mention counts."""
    for i, count in enumerate(mentions):
        conn.execute(
            "INSERT INTO entities (id, name, canonical_name, entity_type, mentions,"
            " created_at, updated_at) VALUES (?, ?, ?, 'concept', ?, 'x', 'x')",
            (f"e{i}", f"E{i}", f"e{i}", count),
        )


def test_hub_penalises_memories_linked_only_to_hubs(db):
    with db.write_tx() as conn:
        _entities(conn, [50, 40, 2, 1, 1, 1, 1, 1, 1, 1])
        for memory_id, entity in [("hubby", "e0"), ("hubby", "e1"), ("mixed", "e0"),
                                  ("mixed", "e2")]:
            conn.execute(
                "INSERT INTO memory_entity_mentions (memory_id, entity_id, mention_text,"
                " confidence, created_at) VALUES (?, ?, 'x', 1.0, 'x')", (memory_id, entity),
            )
    hits = [H(M("a", id="hubby"), 1.0), H(M("b", id="mixed"), 1.0), H(M("c", id="none"), 1.0)]
    hub(db.reader(), hits, percentile=0.8, penalty=0.7)
    assert [h.score for h in hits] == [0.7, 1.0, 1.0]


def test_noun_phrase_entities_neither_move_the_hub_line_nor_shelter_a_memory(db):
    """Hubs are judged among names: a memory naming a hub and a phrase named once is still
    linked only to hubs, and a crowd of phrase entities does not lower the percentile."""
    with db.write_tx() as conn:
        _entities(conn, [50, 40, 2, 1, 1, 1, 1, 1, 1, 1])
        for i in range(40):  # many phrases, each named once
            conn.execute(
                "INSERT INTO entities (id, name, canonical_name, entity_type, mentions,"
                " created_at, updated_at) VALUES (?, ?, ?, 'phrase', 1, 'x', 'x')",
                (f"p{i}", f"thing {i}", f"thing {i}"))
        for memory_id, entity in [("hubby", "e0"), ("hubby", "p0"), ("mixed", "e0"),
                                  ("mixed", "e2"), ("low", "e2")]:
            conn.execute(
                "INSERT INTO memory_entity_mentions (memory_id, entity_id, mention_text,"
                " confidence, created_at) VALUES (?, ?, 'x', 1.0, 'x')", (memory_id, entity),
            )
    hits = [H(M("a", id="hubby"), 1.0), H(M("b", id="mixed"), 1.0), H(M("c", id="low"), 1.0)]
    hub(db.reader(), hits, percentile=0.8, penalty=0.7)
    assert [h.score for h in hits] == [0.7, 1.0, 1.0]


def test_the_hub_threshold_a_reader_keeps_follows_every_commit(db):
    """The reader keeps the threshold between recalls (a count over every entity at 1M) and
    reads it again once anything commits: a memory whose entity stops being a hub is no
    longer dampened on the next recall."""
    with db.write_tx() as conn:
        _entities(conn, [50, 40, 2, 1, 1, 1, 1, 1, 1, 1])
        conn.execute(
            "INSERT INTO memory_entity_mentions (memory_id, entity_id, mention_text,"
            " confidence, created_at) VALUES ('m1', 'e1', 'x', 1.0, 'x')")
    reader = db.reader()
    first = [H(M("a", id="m1"), 1.0)]
    hub(reader, first, percentile=0.8, penalty=0.7)
    assert first[0].score == 0.7
    kept = reader.hub_threshold
    hub(reader, [H(M("a", id="m1"), 1.0)], percentile=0.8, penalty=0.7)
    assert reader.hub_threshold is kept  # nothing committed: not read again
    with db.write_tx() as conn:  # e1 is now as common as the rest: the 80th percentile is 60
        conn.execute("UPDATE entities SET mentions = 60 WHERE id IN ('e2', 'e3', 'e4', 'e5',"
                     " 'e6', 'e7', 'e8', 'e9')")
    again = [H(M("a", id="m1"), 1.0)]
    hub(reader, again, percentile=0.8, penalty=0.7)
    assert again[0].score == 1.0 and reader.hub_threshold is not kept


def _hub_ranked(db, scores, lifts, count, floor, needed, judged):
    """The first `count` hits (id, score) passing `floor` after hub and the later lifts."""
    hits = [H(M("x", id=f"m{i}", seq=i), s) for i, s in enumerate(scores)]
    judged.clear()
    hub(db.reader(), hits, percentile=0.8, penalty=0.7, needed=needed)
    for h, lift in zip(hits, lifts, strict=True):
        h.score *= lift
    kept = sorted((h for h in hits if h.score >= floor), key=lambda h: (-h.score, -h.memory.seq))
    return [(h.memory.id, h.score) for h in kept[:count]], sum(judged)


def test_hub_judging_the_best_first_keeps_the_order_recall_reads(db, monkeypatch):
    """With `Needed`, hub judges hits best first and stops once the first `count` are
    settled: those come out in the same order with the same scores as when every hit is
    judged, fewer hits are looked up, and the ones never judged rank below them."""
    import random

    from mnemonist.search import dampening
    from mnemonist.search.dampening import Needed

    rnd = random.Random(4)
    with db.write_tx() as conn:
        _entities(conn, [50, 40, 2, 1, 1, 1, 1, 1, 1, 1])
        for i in range(300):  # a third linked only to hubs, the rest to a rare entity too
            for entity in (("e0", "e1") if i % 3 == 0 else ("e0", "e2")):
                conn.execute(
                    "INSERT INTO memory_entity_mentions (memory_id, entity_id, mention_text,"
                    " confidence, created_at) VALUES (?, ?, 'x', 1.0, 'x')", (f"m{i}", entity))
    judged: list[int] = []
    real = dampening._penalise_hubs

    def counting(conn, hits, threshold, penalty):
        judged.append(len(hits))
        return real(conn, hits, threshold, penalty)

    monkeypatch.setattr(dampening, "_penalise_hubs", counting)
    for trial in range(20):
        scores = [rnd.random() for _ in range(300)]
        lifts = [1.4 if rnd.random() < 0.1 else 1.0 for _ in range(300)]
        count, floor = rnd.choice([(10, 0.1), (40, 0.1), (40, 0.6), (250, 0.0)])
        everything, all_judged = _hub_ranked(db, scores, lifts, count, floor, None, judged)
        lazily, few_judged = _hub_ranked(db, scores, lifts, count, floor,
                                         Needed(count, floor, lifts, lifts), judged)
        assert lazily == everything, trial
        assert all_judged == 300 and few_judged <= 300
        if count == 10:
            assert few_judged < 300  # the best were settled before the end


def test_a_shared_store_reads_the_hub_threshold_at_most_every_ttl(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On PostgreSQL no change counter of one connection says when another daemon moved the
    mention counts: the threshold is read again once `HUB_THRESHOLD_TTL_S` has passed."""
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE entities (id TEXT, entity_type TEXT, mentions INTEGER)")
    con.execute("CREATE INDEX entities_named_mentions ON entities(mentions)"
                " WHERE entity_type != 'phrase'")  # as migration 28 makes it
    con.executemany("INSERT INTO entities VALUES (?, 'person', ?)",
                    [(f"e{i}", i) for i in range(1, 11)])

    class Shared:  # what the PostgreSQL reader offers: execute and its database's key
        store_key = "postgresql://shared-test"
        reads = 0

        def execute(self, sql: str, args: tuple = ()) -> sqlite3.Cursor:
            Shared.reads += 1
            return con.execute(sql, args)

    conn = Shared()
    monkeypatch.setattr(dampening, "_shared", {})
    assert dampening._hub_threshold(conn, 0.9) == 9  # type: ignore[arg-type]
    reads = Shared.reads
    con.execute("UPDATE entities SET mentions = mentions * 10")
    assert dampening._hub_threshold(conn, 0.9) == 9  # type: ignore[arg-type]
    assert Shared.reads == reads  # within the TTL: nothing read
    monkeypatch.setattr(dampening, "HUB_THRESHOLD_TTL_S", 0.0)
    assert dampening._hub_threshold(conn, 0.9) == 90  # type: ignore[arg-type]


@pytest.mark.parametrize("n", [1, 2, 7, 100, 1001])
def test_the_percentile_read_from_the_top_is_the_lower_percentile(n: int) -> None:
    """The hub line is read from the top of the counts' index (past the few hubs, not the many
    counts below): the same value as the P-th lower percentile of the sorted counts, ties and
    phrase entities (never counted) included."""
    import random

    from mnemonist.store import hubs

    rng = random.Random(n)
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE entities (id TEXT, entity_type TEXT, mentions INTEGER)")
    con.execute("CREATE INDEX entities_named_mentions ON entities(mentions)"
                " WHERE entity_type != 'phrase'")
    counts = [rng.choice([1, 1, 2, 3, 5, 8, 40, 300]) for _ in range(n)]
    con.executemany("INSERT INTO entities VALUES (?, 'person', ?)",
                    [(f"e{i}", c) for i, c in enumerate(counts)])
    con.executemany("INSERT INTO entities VALUES (?, 'phrase', 1000)",
                    [(f"p{i}", ) for i in range(n)])
    ordered = sorted(counts)
    for p in (0.0, 0.5, 0.8, 0.9, 0.95, 1.0):
        assert hubs.mention_percentile(con, p) == ordered[int(p * (n - 1))], (n, p)

"""A recall right after its remember finds the memory by meaning: recall embeds the few memories
of its scope still waiting for their vector before it searches, and every answer says how many
in scope the vector leg cannot see yet (`pending_embeddings`, `degraded: embeddings_pending`).

The background embedder is stopped in these tests, so only recall itself can embed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemonist.daemon import Daemon, open_memory
from mnemonist.model.requests import RecallRequest, RememberRequest
from mnemonist.service import reads

# no word of the query is in the memory ("postgres" is not "postgresql", "prod" is not
# "production"): only the vector leg can find it
MEMORY = "critical: [db]: production runs PostgreSQL 16"
QUERY = "what version of postgres is in prod?"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with open_memory(tmp_path_factory.mktemp("pending")) as d:
        assert d.service.core.embedder is not None
        d.service.core.embedder.stop()  # nothing embeds in the background: recall must
        yield d


def _unembedded(d: Daemon) -> int:
    return d.service.core.db.reader().execute(
        "SELECT COUNT(*) FROM memories WHERE embedding_model IS NULL AND is_deleted = 0"
    ).fetchone()[0]


def test_a_recall_right_after_remember_finds_it_by_meaning(daemon: Daemon) -> None:
    s = daemon.service
    stored = s.memories.remember(RememberRequest(content=MEMORY, project="shop"))
    assert _unembedded(daemon) >= 1
    out = s.reads.recall(RecallRequest(query=QUERY, limit=5, project="shop"))
    assert [r["id"] for r in out["results"]] == [stored["id"]], out
    hit = out["results"][0]
    assert hit["scores"]["keyword"] is None and hit["scores"]["vector"] > 0.3
    assert out["pending_embeddings"] == 0 and "embeddings_pending" not in out["degraded"]
    assert out["method"] == "hybrid"
    # the vector is stored like the background embedder's: the memory is done
    row = s.core.db.reader().execute("SELECT embedding_model FROM memories WHERE id = ?",
                                     (stored["id"],)).fetchone()
    assert row[0] == s.core.provider.model_id


def test_more_pending_than_recall_embeds_are_counted_and_left_to_the_embedder(
    daemon: Daemon,
) -> None:
    s = daemon.service
    over = reads.EMBED_PENDING_MAX + 1
    for i in range(over):
        s.memories.remember(RememberRequest(content=f"bulk note number {i} about the warehouse",
                                            project="bulk"))
    s.memories.remember(RememberRequest(content="a note of another project", project="elsewhere"))
    before = _unembedded(daemon)
    out = s.reads.recall(RecallRequest(query="warehouse", project="bulk"))
    # the keyword leg finds them meanwhile; none was embedded by the recall
    assert out["count"] > 0 and out["pending_embeddings"] == over
    assert "embeddings_pending" in out["degraded"]
    assert _unembedded(daemon) == before
    # the scope is the recall's: another project's waiting memory is not counted here ...
    other = s.reads.recall(RecallRequest(query="note", project="elsewhere"))
    assert other["pending_embeddings"] == 0  # ... and, being one, it was embedded at once
    assert _unembedded(daemon) == before - 1


def test_no_embedding_provider_means_no_count(tmp_path: Path) -> None:
    with open_memory(tmp_path, {"embedding": {"provider": "none"}}) as d:
        d.service.memories.remember(RememberRequest(content=MEMORY))
        out = d.service.reads.recall(RecallRequest(query="PostgreSQL"))
    assert out["count"] == 1 and out["pending_embeddings"] is None
    assert "embeddings_pending" not in out["degraded"]

"""The team load run (`mnemonist bench team`) at CI size: two real daemon processes on one
PostgreSQL, four clients each writing through their daemon's HTTP API at once. The same
checks as the full run (docs/postgres.md): every acknowledged write stored once, every job
leased and run once, no 5xx, no deadlock, a memory of daemon A recalled through daemon B."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from mnemonist.bench.team import run_team
from mnemonist.cli.main import cli


def test_two_daemons_four_clients_each_every_write_once_every_job_once(
    postgres_url: str,
) -> None:
    r = run_team(postgres_url, daemons=2, clients=4, writes=50, progress=False)
    total = 2 * 4 * 50
    assert r["statuses"] == {"201": total}, r["client_errors"]
    w = r["writes"]
    assert (w["acknowledged"], w["acknowledged_distinct_ids"], w["stored"]) == (
        total, total, total)
    assert (w["acknowledged_missing"], w["stored_twice"], w["stored_unacknowledged"]) == (
        0, 0, 0)
    j = r["jobs"]
    assert j["job_rows"] == j["memories_with_one_job"] == j["completed"] == total
    assert j["status"] == {"completed": total}
    assert j["leases"] == total and j["leased_more_than_once"] == 0
    assert j["llm_calls"] == j["memories_called_once"] == total
    assert j["memories_called_more"] == 0
    assert r["deadlocks"] == {"pg_stat_database": 0, "in_logs": 0, "tracebacks_in_logs": 0}
    c = r["cross_daemon"]
    assert c["keyword_at_once"] and c["vector_once_embedded"]
    assert c["vector_score"] > 0 and c["keyword_score_of_paraphrase"] is None
    assert r["ok"] is True


@pytest.mark.parametrize("url", ["sqlite:///x.db", "", "http://db:5432/x"])
def test_bench_team_refuses_a_url_that_is_not_postgresql(url: str) -> None:
    out = CliRunner().invoke(cli, ["bench", "team", "--storage", url])
    assert out.exit_code == 2
    assert "postgresql://" in out.output


def test_bench_team_refuses_a_database_that_holds_memories(postgres_url: str,
                                                          tmp_path) -> None:
    from conftest import run_daemon

    with run_daemon(tmp_path / "a", {"storage": {"url": postgres_url}}) as a:
        a.remember("Already here before the load run")
    out = CliRunner().invoke(cli, ["bench", "team", "--storage", postgres_url,
                                   "--writes", "1"])
    assert out.exit_code == 2
    assert "already holds memories" in out.output

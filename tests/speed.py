"""Unit or end-to-end: the `e2e` and `slow` marks (registered in pyproject.toml), set when the
suite is collected (`tests/conftest.py` calls `mark_speed`), so no test file carries them.

- `e2e`: the test starts a real daemon (in this process or as a subprocess), runs another
  process (the CLI, a hook, a shell), drives a browser, or uses the session's PostgreSQL.
- `slow`: every e2e test, plus the unit tests measured to take seconds (`SLOW_TESTS`).

`./dev test -m "not slow"` runs the rest: the unit tests, about a minute on two cores. CI runs
everything (`.ci/run`). A new test is classified by what it does, so it needs no mark; a unit
test that turns out slow goes into `SLOW_TESTS`.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest

#: modules end-to-end throughout: browsers, PostgreSQL, CLI and hook processes, benchmarks,
#: the docs' and the README's commands run in a shell
E2E_MODULES = frozenset({
    "test_bench_agent_memory.py", "test_bench_feedback.py", "test_bench_import.py",
    "test_bench_inject.py", "test_bench_locomo.py", "test_bench_over_time.py",
    "test_bench_relevance.py", "test_bench_scale.py", "test_bench_sessions.py",
    "test_cli_commands.py", "test_cli_first_hour.py", "test_cli_serve.py",
    "test_connect_harnesses.py", "test_consolidation_crash.py", "test_daemon_start.py",
    "test_dashboard_browser.py", "test_dashboard_first_hour.py", "test_dev_script.py",
    "test_docs_commands.py", "test_durability.py", "test_home_files.py", "test_hooks.py",
    "test_mcp_stdio.py", "test_pg_fixture.py", "test_postgres_runbook.py",
    "test_readme_commands.py",
    "test_schema_fuzz.py", "test_upgrade.py", "test_wheel.py",
})
#: in a test's own source or its fixtures': a daemon started, a process, PostgreSQL, a browser
E2E_SOURCE = re.compile(
    r"\b\w*daemon\(|\bDaemon\(|\bsubprocess\b|\bPopen\b|\brun_hook\(|postgres_server"
    r"|postgres_url|\bwebdriver\b|\bBrowser\(")
#: parameters that put a test on the session's PostgreSQL
PG_PARAMS = ("daemon_store", "store")
#: the autouse fixtures of every test (tests/conftest.py): their parameter decides, not their
#: source (which names PostgreSQL for the tests that are on it)
EVERY_TEST = frozenset({"daemon_store", "_test_databases"})
#: unit tests that take a second or more (measured with --durations on two busy cores): node ids
#: ("tests/test_x.py::test_y"), or a prefix of them
SLOW_TESTS: tuple[str, ...] = (
    "tests/test_context_index.py::test_import_benchmark_reports_throughput",  # 4.3 s
    "tests/test_embedding_graph_cache.py::test_a_damaged_graph_is_rebuilt",  # 1.1 s
    "tests/test_embedding_graph_cache.py::test_each_variant_has_its_own_graph",  # 1.2 s
    # the shipped model's graph rewritten and run, one variant each: 0.9-1.8 s apiece
    "tests/test_embedding_local.py::test_integer_products_match_the_float_graph",
    "tests/test_job_runtime.py::test_a_store_that_fails_does_not_end_the_worker_loop",  # 1.2 s
    "tests/test_job_runtime.py::test_worker_loop_processes_defers_and_fails",  # 5.1 s
    "tests/test_keyword_mirror.py::test_a_narrow_filter_ranks_among_the_rows_it_allows",  # 3.3 s
    "tests/test_keyword_mirror.py::test_a_started_daemon_follows_every_write",  # 1.1 s
    "tests/test_keyword_mirror.py::test_filters_rejecting_its_best_rows_fall_to_the_next",  # 2.1
    "tests/test_retention.py::test_vectors_nothing_points_to_are_swept",  # 5.4 s
    "tests/test_temporal_recall.py::test_temporal_benchmark_shows_the_gain",  # 3.3 s
    # a daemon started by the module's own helper: e2e in all but name
    "tests/test_vector_index.py::test_a_daemon_with_the_int8_index_answers_as_its_float32_twin",
    "tests/test_wal_checkpointer.py::test_the_wal_starts_over_after_a_complete_checkpoint",  # 1.3
)


@cache
def _source(func: Callable[..., Any]) -> str:
    try:
        return inspect.getsource(func)
    except (OSError, TypeError):
        return ""


def _fixture_funcs(item: pytest.Item) -> list[Callable[..., Any]]:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    return [fixturedef.func for name, defs in info.name2fixturedefs.items()
            if name not in EVERY_TEST for fixturedef in defs]


def is_e2e(item: pytest.Item) -> bool:
    """Whether `item` runs end to end (see the module's docstring)."""
    if item.path.name in E2E_MODULES:
        return True
    spec = getattr(item, "callspec", None)
    if spec is not None and any(spec.params.get(p) == "postgresql" for p in PG_PARAMS):
        return True
    funcs = [getattr(item, "function", None), *_fixture_funcs(item)]
    return any(f is not None and E2E_SOURCE.search(_source(f)) for f in funcs)


def mark_speed(items: list[pytest.Item]) -> None:
    """Mark every collected test e2e and/or slow as it deserves."""
    for item in items:
        if is_e2e(item):
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.slow)
        elif item.nodeid.startswith(SLOW_TESTS):
            item.add_marker(pytest.mark.slow)

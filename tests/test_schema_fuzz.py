"""Schema-driven fuzzing of the real daemon with schemathesis: every operation of
`/openapi.json`, valid and invalid inputs, a bounded budget. No answer may be a 5xx, use a
status the document does not declare, or break its declared response schema.

(schemathesis' lazy pytest loader relies on a private pytest attribute that pytest 9 no longer
has, so the operations are driven through its Python API, one hypothesis run each.)"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode, checks

from conftest import LiveDaemon, run_daemon

#: examples per operation and generation mode: ~35 operations × 2 modes, a few hundred requests
MAX_EXAMPLES = 25
CHECKS = [checks.not_a_server_error, checks.status_code_conformance,
          checks.content_type_conformance, checks.response_schema_conformance]


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    with run_daemon(tmp_path_factory.mktemp("fuzz-home"),
                    {"embedding": {"provider": "none"}}) as d:
        d.remember("A memory for the fuzzer to find", tags=["fuzz"], project="fuzz")
        yield d


def fuzz_operation(operation: schemathesis.APIOperation, mode: GenerationMode) -> str | None:
    """Run one operation's examples; the first failure as text, or None."""

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck), print_blob=False)
    def run(case: schemathesis.Case) -> None:
        case.call_and_validate(checks=CHECKS, timeout=30)

    try:
        run()
    except Unsatisfiable:
        return None  # nothing invalid can be made of it (no parameters, no body)
    except (Exception, BaseExceptionGroup) as exc:  # schemathesis' failure group included
        return f"{operation.label} [{mode.value}]: {exc}"
    return None


def test_every_operation_holds_its_schema(fuzzed: LiveDaemon) -> None:
    schema = schemathesis.openapi.from_url(f"{fuzzed.url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 30
    failures = [problem for operation in operations
                for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
                if (problem := fuzz_operation(operation, mode))]
    assert not failures, "\n\n".join(failures)
    assert fuzzed.http.get("/health").json()["database"] == "ok"

"""The e2e / slow marks (tests/speed.py): the lists name tests that exist, and the marks are
set on the tests collected."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from speed import E2E_MODULES, SLOW_TESTS

TESTS = Path(__file__).resolve().parent


def test_the_e2e_modules_exist() -> None:
    missing = sorted(name for name in E2E_MODULES if not (TESTS / name).is_file())
    assert not missing


@pytest.mark.parametrize("node", SLOW_TESTS)
def test_each_slow_test_listed_exists(node: str) -> None:
    path, _, name = node.partition("::")
    source = (TESTS.parent / path).read_text(encoding="utf-8")
    assert re.search(rf"^def {re.escape(name)}\(", source, re.M), node


def test_a_unit_test_is_neither_slow_nor_e2e(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("slow") is None
    assert request.node.get_closest_marker("e2e") is None


def test_a_test_on_a_daemon_is_e2e_and_slow(live, request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("e2e") is not None
    assert request.node.get_closest_marker("slow") is not None

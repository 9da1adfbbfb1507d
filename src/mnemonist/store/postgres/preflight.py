"""What a PostgreSQL database must offer before a daemon (or `migrate`) opens it, checked on
one short connection before anything is written.

Each missing piece stops the start with one line that names it and its fix
(`StorageNotReady`), instead of the first failing statement's traceback:

- the server answers (`connect_timeout`), and is not a read-only standby;
- PostgreSQL 16 or newer (what the store is tested on and documented for);
- pgvector 0.8.0 or newer is installed on the server (iterative HNSW scans,
  `hnsw.iterative_scan`, came with 0.8.0);
- the `vector` extension exists in the database, or this role may create it: pgvector is not
  a trusted extension, so only a superuser may, and a daemon's role usually is not one;
- the role may create the schema (CREATE on the schema: since PostgreSQL 15 the `public`
  schema grants it only to the database's owner), or, once the schema exists, owns its
  tables (a start may apply a migration and replaces the notification trigger).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import conninfo

from mnemonist.store.backend import StorageNotReady

MIN_SERVER = 16
MIN_PGVECTOR = (0, 8, 0)
WANTED = ".".join(map(str, MIN_PGVECTOR))
CONNECT_TIMEOUT_S = 10


def _one_line(text: object) -> str:
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


def _version(text: str | None) -> tuple[int, ...]:
    parts = []
    for part in (text or "").split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def where(url: str) -> str:
    """`host:port/database` of a URL, without its user or password (for messages)."""
    try:
        info = conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "the storage.url given"
    host = str(info.get("host") or "localhost")
    return f"{host}:{info.get('port') or 5432}/{info.get('dbname') or info.get('user') or ''}"


@dataclass(frozen=True)
class Ready:
    """What was found (`mnemonist postgres check` prints it)."""

    server_version: str
    pgvector: str
    extension_created: bool
    schema_created: bool
    role: str
    database: str

    def as_dict(self) -> dict[str, Any]:
        return {"server_version": self.server_version, "pgvector": self.pgvector,
                "extension": "created" if self.extension_created else "created at first start",
                "schema": "created" if self.schema_created else "created at first start",
                "role": self.role, "database": self.database}


def check(url: str, *, connect_timeout: int = CONNECT_TIMEOUT_S) -> Ready:
    """Raise StorageNotReady (one line) unless the database at `url` can hold mnemonist's
    store for this role; reads only."""
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=connect_timeout)
    except psycopg.Error as exc:
        raise StorageNotReady(
            f"cannot connect to PostgreSQL at {where(url)}: {_one_line(exc)} (check"
            f" storage.url, that the server runs, and that it lets this role in)") from None
    try:
        with conn:
            return _check(conn)
    except psycopg.Error as exc:
        raise StorageNotReady(f"PostgreSQL at {where(url)} failed a start-up check:"
                              f" {_one_line(exc)}") from None


def version_problem(number: int, shown: str, host: str) -> str | None:
    """Why a server of version `number` (server_version_num, e.g. 150008) will not do."""
    if number >= MIN_SERVER * 10000:
        return None
    return (f"PostgreSQL {shown} at {host} is too old: mnemonist needs PostgreSQL"
            f" {MIN_SERVER} or newer with pgvector {WANTED} or newer (or run `mnemonist"
            f" postgres init DIR` for a local PostgreSQL 18 with pgvector)")


def pgvector_problem(default: str | None, installed: str | None, *, host: str,
                     database: str, major: int) -> str | None:
    """Why the server's pgvector will not do: `default` is the version the server offers
    (None: pgvector is not installed there), `installed` the one created in the database."""
    if default is None and installed is None:
        return (f"pgvector is not installed on the PostgreSQL server at {host}: install it"
                f" there (the postgresql-{major}-pgvector package, or from"
                f" github.com/pgvector/pgvector, {WANTED} or newer), then run CREATE EXTENSION"
                f" vector; in database {database} as a superuser")
    if installed is not None and _version(installed) < MIN_PGVECTOR:
        return (f"pgvector {installed} in database {database} is too old: mnemonist needs"
                f" {WANTED} or newer (install a newer pgvector on the server, then run ALTER"
                f" EXTENSION vector UPDATE; in that database)")
    if installed is None and _version(default) < MIN_PGVECTOR:
        return (f"pgvector {default} on the PostgreSQL server at {host} is too old:"
                f" mnemonist needs {WANTED} or newer (install a newer pgvector there)")
    return None


def _value(conn: psycopg.Connection, sql: str) -> Any:
    """The first value of a query that always answers one row."""
    row = conn.execute(sql).fetchone()
    assert row is not None, sql
    return row[0]


def _check(conn: psycopg.Connection) -> Ready:
    info = conn.info
    database, role = info.dbname, info.user
    host = f"{info.host}:{info.port}"
    number = info.server_version  # e.g. 150008
    shown = str(_value(conn, "SHOW server_version")).split()[0]
    problem = version_problem(number, shown, host)
    if problem:
        raise StorageNotReady(problem)
    if _value(conn, "SELECT pg_is_in_recovery()"):
        raise StorageNotReady(f"PostgreSQL at {host} is a read-only standby: point"
                              f" storage.url at the primary")
    superuser = bool(_value(conn, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user"))
    available = conn.execute(
        "SELECT a.default_version, a.installed_version, v.trusted"
        " FROM pg_available_extensions a LEFT JOIN pg_available_extension_versions v"
        "   ON v.name = a.name AND v.version = a.default_version"
        " WHERE a.name = 'vector'").fetchone()
    default, installed, trusted = available or (None, None, False)
    problem = pgvector_problem(default, installed, host=host, database=database,
                               major=number // 10000)
    if problem:
        raise StorageNotReady(problem)
    if installed is None:
        may_create = superuser or (bool(trusted) and bool(_value(
            conn, "SELECT has_database_privilege(current_database(), 'CREATE')")))
        if not may_create:
            raise StorageNotReady(
                f"the vector extension is not created in database {database}, and role"
                f" {role} may not create it: run CREATE EXTENSION vector; in that database"
                f" as a superuser (psql --dbname={database} -c 'CREATE EXTENSION vector')")
    schema = _value(conn, "SELECT current_schema()")
    if schema is None:
        raise StorageNotReady(
            f"role {role} has no schema to use in database {database} (none of its"
            f" search_path exists): create one it owns, or reset its search_path")
    made = _value(conn, "SELECT to_regclass('schema_migrations') IS NOT NULL")
    if not superuser and not made and not _value(
            conn, "SELECT has_schema_privilege(current_schema(), 'CREATE')"):
        raise StorageNotReady(
            f"role {role} may not create tables in schema {schema} of database {database}"
            f" (since PostgreSQL 15 only the database's owner may): make the role its owner"
            f" (ALTER DATABASE {database} OWNER TO {role}) or run GRANT CREATE ON SCHEMA"
            f" {schema} TO {role}; as a superuser")
    if not superuser and made:
        owner = conn.execute(
            "SELECT pg_get_userbyid(c.relowner), pg_has_role(current_user, c.relowner,"
            " 'USAGE') FROM pg_class c WHERE c.oid = to_regclass('memories')").fetchone()
        if owner is not None and not owner[1]:
            raise StorageNotReady(
                f"the tables in database {database} belong to role {owner[0]}, not {role}:"
                f" the daemons connect as the role that owns them (a start may change the"
                f" schema); use {owner[0]}'s URL, or restore a dump as {role} with"
                f" pg_restore --no-owner")
    extversion = installed or default
    return Ready(server_version=shown, pgvector=str(extversion),
                 extension_created=installed is not None, schema_created=bool(made),
                 role=role, database=database)

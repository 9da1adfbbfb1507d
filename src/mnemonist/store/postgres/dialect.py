"""The project's SQLite-dialect SQL → PostgreSQL, translated once per statement text and cached.

The stores share one body of SQL (store/, search/, service/, pipeline/): it is written for
SQLite and this module rewrites the common subset that PostgreSQL spells differently. Every
rule is here, in one place; a statement it cannot express (FTS5 MATCH, PRAGMAs) has its
PostgreSQL form in the module of that feature instead (see `store.postgres.fts`).

Rules, in order:
- parameters: `?` → `%s`, `?N` → `%(pN)s` (the caller's sequence becomes a mapping), `%` → `%%`;
  string literals and quoted names are left as they are;
- `INSERT OR IGNORE` → `INSERT … ON CONFLICT DO NOTHING`; `INSERT OR REPLACE` → an upsert on the
  table's primary key (`keys` names it);
- an INSERT into a table with an identity key gets `RETURNING` it (`cursor.lastrowid`);
- `LIMIT -1` → `LIMIT ALL`; `INDEXED BY x` / `NOT INDEXED` → dropped; the unary `+`
  SQLite uses to keep an index out → dropped;
- `IFNULL` → `COALESCE`; two-argument `MAX`/`MIN` → `GREATEST`/`LEAST`; `LIKE` → `ILIKE`
  (SQLite's LIKE ignores ASCII case); `a IS b` / `a IS NOT b` → `IS [NOT] DISTINCT FROM`;
- `json_each(x)` → `json_array_elements_text(x::json)`, its `value` compared as text;
  `json_extract(x, '$.k')` → `(x::json ->> 'k')`; `json_array_length(x)` on `x::json`;
- `sqlite_master` table look-ups → `information_schema.tables`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class Translated:
    sql: str
    numbered: bool  # parameters are `%(pN)s`: pass {"p1": params[0], ...}
    returning: str | None  # the identity column appended as RETURNING, for lastrowid


_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\?\d*|%|[^'\"?%]+", re.S)


def _params(sql: str) -> tuple[str, bool]:
    out, numbered = [], False
    for tok in _TOKEN.findall(sql):
        if tok.startswith("?"):
            if len(tok) > 1:
                numbered = True
                out.append(f"%(p{tok[1:]})s")
            else:
                out.append("\x00")
        elif tok == "%":
            out.append("%%")
        else:
            out.append(tok)
    text = "".join(out)
    if numbered:
        if "\x00" in text:
            raise ValueError("mixed ? and ?N parameters")
        return text, True
    return text.replace("\x00", "%s"), False


def _outside_literals(sql: str, fn) -> str:
    """Apply `fn` to the parts of `sql` that are not string literals."""
    parts = re.split(r"('(?:[^']|'')*')", sql)
    return "".join(p if i % 2 else fn(p) for i, p in enumerate(parts))


def _close_paren(text: str, start: int) -> int:
    """Index of the parenthesis closing the one opened just before `start`."""
    depth = 1
    i = start
    while i < len(text):
        ch = text[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        elif ch == "'":
            i = text.index("'", i + 1)
        i += 1
    raise ValueError("unbalanced parentheses")


def _top_level_commas(text: str) -> int:
    depth = count = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            count += 1
    return count


def _functions(sql: str) -> str:
    """Rewrite calls whose PostgreSQL spelling differs (arguments may nest)."""
    pattern = re.compile(r"\b(MAX|MIN|json_each|json_extract|json_array_length|IFNULL)\s*\(",
                         re.I)
    pos = 0
    out = []
    while True:
        m = pattern.search(sql, pos)
        if not m:
            out.append(sql[pos:])
            return "".join(out)
        name = m.group(1).lower()
        end = _close_paren(sql, m.end())
        inner = _functions(sql[m.end():end])
        out.append(sql[pos:m.start()])
        if name in ("max", "min"):
            if _top_level_commas(inner):
                out.append(f"{'GREATEST' if name == 'max' else 'LEAST'}({inner})")
            else:
                out.append(f"{m.group(1)}({inner})")
        elif name == "ifnull":
            out.append(f"COALESCE({inner})")
        elif name == "json_each":
            out.append(f"json_array_elements_text(CAST({inner} AS json)) AS json_each(value)")
        elif name == "json_array_length":
            out.append(f"json_array_length(CAST({inner} AS json))")
        else:  # json_extract(x, '$.key')
            arg, _, path = inner.rpartition(",")
            key = path.strip().strip("'")
            if not key.startswith("$."):
                raise ValueError(f"json_extract path {path!r}")
            out.append(f"(CAST({arg} AS json) ->> '{key[2:]}')")
        pos = end + 1


def _rewrite(sql: str, keys: dict[str, tuple[str, ...]]) -> tuple[str, str | None]:
    returning = None
    head = sql.lstrip()
    m = re.match(r"INSERT\s+OR\s+(IGNORE|REPLACE)\s+INTO\s+(\w+)", head, re.I)
    if m:
        table = m.group(2)
        sql = head[: m.start()] + f"INSERT INTO {table}" + head[m.end():]
        if m.group(1).upper() == "IGNORE":
            conflict = " ON CONFLICT DO NOTHING"
        else:
            key = keys.get(table)
            if not key:
                raise ValueError(f"INSERT OR REPLACE into {table}: no primary key known")
            cols = re.search(rf"INTO\s+{table}\s*\(([^)]*)\)", sql, re.I)
            if cols is None:
                raise ValueError("INSERT OR REPLACE needs its column list")
            names = [c.strip() for c in cols.group(1).split(",")]
            sets = ", ".join(f"{c} = EXCLUDED.{c}" for c in names if c not in key)
            conflict = (f" ON CONFLICT ({', '.join(key)}) "
                        + (f"DO UPDATE SET {sets}" if sets else "DO NOTHING"))
        ret = re.search(r"\bRETURNING\b", sql, re.I)
        sql = (sql[: ret.start()] + conflict + " " + sql[ret.start():] if ret
               else sql.rstrip().rstrip(";") + conflict)
    ins = re.match(r"\s*INSERT\s+INTO\s+(\w+)", sql, re.I)
    if ins and not re.search(r"\bRETURNING\b", sql, re.I):
        identity = keys.get("#identity:" + ins.group(1))
        if identity:
            returning = identity[0]
            sql = sql.rstrip().rstrip(";") + f" RETURNING {returning}"

    def plain(part: str) -> str:
        part = re.sub(r"\bLIMIT\s+-1\b", "LIMIT ALL", part, flags=re.I)
        part = re.sub(r"\s+(INDEXED\s+BY\s+\w+|NOT\s+INDEXED)\b", "", part, flags=re.I)
        part = re.sub(r"(?<=[\s(,])\+(?=[A-Za-z_])", "", part)
        part = re.sub(r"\bNOT\s+LIKE\b", "NOT ILIKE", part, flags=re.I)
        part = re.sub(r"(?<!NOT )\bLIKE\b", "ILIKE", part, flags=re.I)
        part = re.sub(r"\bIS\s+NOT\s+(?!NULL\b|DISTINCT\b|TRUE\b|FALSE\b)",
                      "IS DISTINCT FROM ", part, flags=re.I)
        part = re.sub(r"\bIS\s+(?!NOT\b|NULL\b|DISTINCT\b|TRUE\b|FALSE\b)",
                      "IS NOT DISTINCT FROM ", part, flags=re.I)
        # json_each's values are text: compare the left side as text
        part = re.sub(r"([\w.]+)\s+(NOT\s+)?IN\s*\(\s*SELECT\s+value\s+FROM\s+json_each\b",
                      lambda g: f"CAST({g.group(1)} AS text) {g.group(2) or ''}IN"
                                f" (SELECT value FROM json_each", part, flags=re.I)
        part = re.sub(r"\bjson_each\.value\b", "json_each.value", part)
        part = re.sub(r"\bFROM\s+sqlite_master\s+WHERE\b",
                      "FROM (SELECT table_name AS name, 'table' AS type"
                      " FROM information_schema.tables WHERE table_schema = current_schema())"
                      " AS sqlite_master WHERE", part, flags=re.I)
        return part

    sql = _outside_literals(sql, plain)
    sql = _functions(sql)
    sql = _qualify_upsert_where(sql)
    return sql, returning


def _qualify_upsert_where(sql: str) -> str:
    """`ON CONFLICT … DO UPDATE SET … WHERE col …`: PostgreSQL finds a bare `col` ambiguous
    (the row or EXCLUDED); SQLite means the row."""
    ins = re.match(r"\s*INSERT\s+INTO\s+(\w+)", sql, re.I)
    upd = re.search(r"\bDO\s+UPDATE\s+SET\b.*?\bWHERE\b", sql, re.I | re.S)
    if not ins or not upd:
        return sql
    table = ins.group(1)
    head, tail = sql[: upd.end()], sql[upd.end():]
    tail = re.sub(r"(?<![.\w])(?!excluded\b|NOT\b|AND\b|OR\b|NULL\b)([A-Za-z_]\w*)"
                  r"(?=\s*(?:IS\b|=|<>|!=|<|>))", rf"{table}.\1", tail, flags=re.I)
    return head + tail


@lru_cache(maxsize=4096)
def _cached(sql: str, keys_token: tuple) -> Translated:
    keys = dict(keys_token)
    rewritten, returning = _rewrite(sql, keys)
    text, numbered = _params(rewritten)
    return Translated(text, numbered, returning)


def translate(sql: str, keys: tuple = ()) -> Translated:
    """`keys`: sorted (table, primary key columns) pairs, and ("#identity:table",
    (identity column,)) ones; a tuple, so that the translation is cached per text."""
    return _cached(sql, keys)

"""The project's SQLite-dialect SQL → PostgreSQL, translated once per statement text and cached.

The stores share one body of SQL (store/, search/, service/, pipeline/): it is written for
SQLite and this module rewrites the common subset that PostgreSQL spells differently. Every
rule is here, in one place; a statement it cannot express (FTS5 MATCH, PRAGMAs) has its
PostgreSQL form in the module of that feature instead (see `store.postgres.fts`).

Rules, in order:
- parameters: `?` → `%s`, `?N` → `%(pN)s` (the caller's sequence becomes a mapping),
  `:name` → `%(name)s`, `%` → `%%`;
  string literals and quoted names are left as they are;
- `INSERT OR IGNORE` → `INSERT … ON CONFLICT DO NOTHING`; `INSERT OR REPLACE` → an upsert on the
  table's primary key (`keys` names it);
- an INSERT into a table with an identity key gets `RETURNING` it (`cursor.lastrowid`);
- `LIMIT -1` → `LIMIT ALL`; `INDEXED BY x` / `NOT INDEXED` → dropped;
  `CROSS JOIN t ON` → `JOIN t ON`; the unary `+`
  SQLite uses to keep an index out → dropped;
- `SUM(condition)` → `SUM(CASE WHEN condition THEN 1 ELSE 0 END)`;
  `IFNULL` → `COALESCE`; two-argument `MAX`/`MIN` → `GREATEST`/`LEAST`; `LIKE` → `ILIKE`
  (SQLite's LIKE ignores ASCII case); `a IS b` / `a IS NOT b` → `IS [NOT] DISTINCT FROM`;
- `json_each(x) [alias]` → `json_array_elements_text(x::json) AS alias(value)`, its `value`
  compared as text; `json_extract(x, '$.k')` → `(x::json ->> 'k')`; `json_array_length(x)`
  on `x::json`; `json_insert(x, '$[#]', v)` (append) → `(x::jsonb || jsonb_build_array(v))`
  as text, `v` a string; `instr(a, b)` → `strpos(a, b)`; `julianday(t)` (of an ISO 8601
  text) → days since the Julian epoch from `t::timestamptz`;
- `sqlite_master` table look-ups → `information_schema.tables`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any


@dataclass(frozen=True)
class Translated:
    sql: str
    numbered: bool  # parameters are `%(pN)s`: pass {"p1": params[0], ...}
    returning: str | None  # the identity column appended as RETURNING, for lastrowid


_TOKEN = re.compile(
    r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\?\d*|%|(?<![:\w]):[A-Za-z_]\w*|::|:|[^'\"?%:]+",
    re.S)


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
        elif tok.startswith("'"):
            out.append(tok.replace("%", "%%"))  # psycopg reads % inside literals too
        elif tok.startswith(":") and len(tok) > 1 and tok != "::":
            numbered = True  # :name — the caller passes a mapping
            out.append(f"%({tok[1:]})s")
        else:
            out.append(tok)
    text = "".join(out)
    if numbered:
        if "\x00" in text:
            raise ValueError("mixed ? and ?N parameters")
        return text, True
    return text.replace("\x00", "%s"), False


def _outside_literals(sql: str, fn: Callable[[str], str]) -> str:
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


_CONDITION = re.compile(r"(<>|!=|<=|>=|[=<>]|\bIS\b|\bIN\b|\bI?LIKE\b|\bAND\b|\bOR\b)", re.I)


def _is_condition(expr: str) -> bool:
    """True when `expr` is a comparison or a boolean combination at its top level."""
    if re.match(r"\s*CASE\b", expr, re.I):
        return False
    depth, flat = 0, []
    for ch in expr:
        depth += (ch == "(") - (ch == ")")
        flat.append(ch if depth == 0 else " ")
    return bool(_CONDITION.search("".join(flat)))


#: `json_each(x) j` / `json_each(x) AS j`: the alias its rows are named by
_ALIAS = re.compile(r"\s+(AS\s+)?([A-Za-z_]\w*)")
_NOT_ALIASES = frozenset(("WHERE", "ON", "JOIN", "LEFT", "INNER", "CROSS", "GROUP", "ORDER",
                          "LIMIT", "UNION", "AND", "OR", "USING", "HAVING", "EXCEPT",
                          "INTERSECT", "WINDOW"))


def _functions(sql: str) -> str:
    """Rewrite calls whose PostgreSQL spelling differs (arguments may nest)."""
    pattern = re.compile(
        r"\b(MAX|MIN|SUM|json_each|json_extract|json_array_length|json_insert|instr|julianday|IFNULL)"
        r"\s*\(", re.I)
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
        elif name == "sum":
            # SQLite sums truth values (SUM(is_deleted = 0)); PostgreSQL sums numbers
            if _is_condition(inner):
                inner = f"CASE WHEN {inner} THEN 1 ELSE 0 END"
            out.append(f"{m.group(1)}({inner})")
        elif name == "ifnull":
            out.append(f"COALESCE({inner})")
        elif name == "json_each":
            alias = _ALIAS.match(sql, end + 1)
            name = "json_each"
            if alias and alias.group(2).upper() not in _NOT_ALIASES:
                name = alias.group(2)
                end = alias.end() - 1
            out.append(f"json_array_elements_text(CAST({inner} AS json)) AS {name}(value)")
        elif name == "julianday":
            out.append(f"(EXTRACT(EPOCH FROM CAST({inner} AS timestamptz)) / 86400.0"
                       " + 2440587.5)")
        elif name == "instr":
            out.append(f"strpos({inner})")
        elif name == "json_insert":
            parts = _split_top(inner)
            if len(parts) != 3 or parts[1].strip() != "'$[#]'":
                raise ValueError(f"json_insert: only appending ('$[#]') is translated: {inner}")
            out.append(f"CAST(CAST({parts[0]} AS jsonb) || jsonb_build_array(CAST({parts[2]}"
                       " AS text)) AS text)")
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
        # SQLite's integer truth: `WHERE 1`, `AND 0` (the filters' "no condition")
        part = re.sub(r"\b(WHERE|AND|OR|NOT)\s+([01])(?=\s*(?:$|\)|AND\b|OR\b|ORDER\b|"
                      r"GROUP\b|LIMIT\b))",
                      lambda g: f"{g.group(1)} {'TRUE' if g.group(2) == '1' else 'FALSE'}",
                      part, flags=re.I)
        part = re.sub(r"\(\s*([01])\s*\)\s+(AND|OR)\b",
                      lambda g: f"{'TRUE' if g.group(1) == '1' else 'FALSE'} {g.group(2)}",
                      part, flags=re.I)
        # SQLite's CROSS JOIN fixes the join order; with ON it is an inner join
        part = re.sub(r"\bCROSS\s+JOIN\b(?=\s+\w+(?:\s+(?!ON\b)\w+)?\s+ON\b)", "JOIN", part,
                      flags=re.I)
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


_KEYWORDS = frozenset((
    "AND", "OR", "NOT", "NULL", "IS", "DISTINCT", "FROM", "CASE", "WHEN", "THEN", "ELSE", "END",
    "TRUE", "FALSE", "IN", "LIKE", "ILIKE", "CAST", "AS", "EXCLUDED", "RETURNING", "BETWEEN",
    "EXISTS", "SELECT", "WHERE"))
_BARE = re.compile(r"(?<![.\w%:?])([A-Za-z_]\w*)(?![\w.]|\s*\()")


def _qualify(expr: str, table: str) -> str:
    def one(m: re.Match[str]) -> str:
        word = m.group(1)
        after_as = re.search(r"\bAS\s+$", m.string[: m.start()], re.I)
        return word if word.upper() in _KEYWORDS or after_as else f"{table}.{word}"

    return _outside_literals(expr, lambda part: _BARE.sub(one, part))


def _qualify_upsert_where(sql: str) -> str:
    """`ON CONFLICT … DO UPDATE SET col = col + 1 … WHERE col …`: PostgreSQL finds a bare
    `col` on the right of SET or in WHERE ambiguous (the row or EXCLUDED); SQLite means the
    row, so those are qualified with the table."""
    ins = re.match(r"\s*INSERT\s+INTO\s+(\w+)", sql, re.I)
    upd = re.search(r"\bDO\s+UPDATE\s+SET\b", sql, re.I)
    if not ins or not upd:
        return sql
    table = ins.group(1)
    head, tail = sql[: upd.end()], sql[upd.end():]
    ret = re.search(r"\bRETURNING\b", tail, re.I)
    rest = ""
    if ret:
        tail, rest = tail[: ret.start()], tail[ret.start():]
    where = re.search(r"\bWHERE\b", tail, re.I)
    sets, cond = (tail[: where.start()], tail[where.start():]) if where else (tail, "")
    out = []
    for assignment in _split_top(sets):
        target, eq, expr = assignment.partition("=")
        out.append(target + eq + _qualify(expr, table) if eq else assignment)
    return head + ",".join(out) + (_qualify(cond, table) if cond else "") + rest


def _split_top(text: str) -> list[str]:
    out, depth, buf = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            out.append(buf)
            buf = ""
        else:
            buf += ch
    out.append(buf)
    return out


@lru_cache(maxsize=4096)
def _cached(sql: str, keys_token: tuple[Any, ...]) -> Translated:
    rewritten, returning = _rewrite(sql, dict(keys_token))
    text, numbered = _params(rewritten)
    return Translated(text, numbered, returning)


#: `x IN (?, ?, ...)` with at least this many parameters is sent as `x = ANY(?)`, one array
#: parameter: PostgreSQL parses and plans a statement of 300 parameters in milliseconds
#: (a recall's candidate checks took 3.6 ms each), one array in a fraction of that
IN_LIST_FROM = 4
_SCAN = re.compile(
    r"%%|(?P<list>(?P<not>\bNOT\s+)?\bIN\s*\(\s*%s(?:\s*,\s*%s){"
    + str(IN_LIST_FROM - 1) + r",}\s*\))|%s", re.I)


@dataclass(frozen=True)
class ArrayForm:
    """A translated statement with each long `IN` list of parameters as one array."""

    sql: str
    runs: tuple[tuple[int, int], ...]  # (index of the list's first parameter, its length)


@lru_cache(maxsize=4096)
def array_form(text: str) -> ArrayForm | None:
    """`text` (translated, `%s` parameters) with `x IN (%s, ...)` → `x = ANY(%s)` and
    `x NOT IN (...)` → `x <> ALL(%s)` (the same answers, NULLs included); None when it
    has no such list."""
    out: list[str] = []
    runs: list[tuple[int, int]] = []
    pos = index = 0
    for m in _SCAN.finditer(text):
        out.append(text[pos : m.start()])
        pos = m.end()
        token = m.group(0)
        if m.group("list"):
            n = token.count("%s")
            runs.append((index, n))
            index += n
            out.append("<> ALL(%s)" if m.group("not") else "= ANY(%s)")
        else:
            out.append(token)
            index += token == "%s"
    if not runs:
        return None
    out.append(text[pos:])
    return ArrayForm("".join(out), tuple(runs))


def as_arrays(form: ArrayForm, params: Any) -> list[Any] | None:
    """The parameters for `form.sql`: each list's values as one Python list; None when a
    list mixes types or holds a NULL or a bool (sent as they were, one by one, then)."""
    if not isinstance(params, list | tuple):
        return None
    out: list[Any] = []
    at = 0
    for start, n in form.runs:
        values = params[start : start + n]
        if len(values) != n:
            return None
        kind = type(values[0])
        if kind not in (int, str) or any(type(v) is not kind for v in values):
            return None
        out.extend(params[at:start])
        out.append(list(values))
        at = start + n
    out.extend(params[at:])
    return out


_INSERT_VALUES = re.compile(
    r"^\s*INSERT\s+INTO\s+(?P<table>[\w.]+)\s*(?P<cols>\([^()]*\))\s*VALUES\s*"
    r"(?P<group>\((?:[^()']|'(?:[^']|'')*'|\((?:[^()']|'(?:[^']|'')*'|\([^()]*\))*\))*\))"
    r"(?P<tail>.*)$", re.I | re.S)
_CONFLICT_UPDATE = re.compile(r"\bON\s+CONFLICT\s*\((?P<target>[^()]*)\)\s*DO\s+UPDATE\b",
                              re.I)


@dataclass(frozen=True)
class RowsForm:
    """An `INSERT INTO t (cols) VALUES (%s, ..., 'literal', ...) [ON CONFLICT ...]` whose rows
    can be sent many in one statement, as one array a column (`unnest_sql`)."""

    table: str
    columns: tuple[str, ...]
    values: tuple[str, ...]  # "%s" or the literal SQL of each column
    tail: str
    #: positions in a row of the ON CONFLICT ... DO UPDATE target: two rows of one statement
    #: may not update the same row, so a batch repeating a target goes row by row
    keys: tuple[int, ...] | None

    @property
    def width(self) -> int:
        return self.values.count("%s")

    def params(self) -> list[str | None]:
        """For each parameter in order: the column it is (None: it is part of an expression,
        `MIN(0.7, %s)`, whose type comes from the values)."""
        out: list[str | None] = []
        for c, v in zip(self.columns, self.values, strict=True):
            out.extend([c] if v == "%s" else [None] * v.count("%s"))
        return out


def _split_values(group: str) -> list[str]:
    """The comma-separated values of `(a, 'b, c', %s)`, literals kept whole."""
    out, buf, quoted, depth = [], "", False, 0
    for ch in group[1:-1]:
        if ch == "'":
            quoted = not quoted
        elif not quoted and ch in "()":
            depth += 1 if ch == "(" else -1
        if ch == "," and not quoted and depth == 0:
            out.append(buf.strip())
            buf = ""
        else:
            buf += ch
    out.append(buf.strip())
    return out


@lru_cache(maxsize=1024)
def rows_form(text: str) -> RowsForm | None:
    """How `text` (translated, `%s` parameters) inserts many rows in one statement; None when
    it cannot: not an INSERT ... (columns) VALUES (...), a parameter outside the row (an ON
    CONFLICT clause reading the row's values through parameters), RETURNING, or a DO UPDATE
    whose target is not among the inserted columns."""
    m = _INSERT_VALUES.match(text)
    if m is None:
        return None
    tail = m.group("tail")
    if "%s" in tail or "%(" in tail or re.search(r"\bRETURNING\b", tail, re.I):
        return None
    columns = tuple(c.strip().lower() for c in m.group("cols")[1:-1].split(","))
    values = tuple(_split_values(m.group("group")))
    if len(values) != len(columns) or not any("%s" in v for v in values) or any(
            "%" in v.replace("%s", "") for v in values):
        return None
    keys: tuple[int, ...] | None = None
    update = _CONFLICT_UPDATE.search(tail)
    if update is not None:
        target = [c.strip().lower() for c in update.group("target").split(",")]
        if not all(c in columns for c in target):
            return None
        keys = tuple(columns.index(c) for c in target)
    elif re.search(r"\bON\s+CONFLICT\b", tail, re.I) and not re.search(
            r"\bDO\s+NOTHING\b", tail, re.I):
        return None
    return RowsForm(m.group("table"), columns, values, tail, keys)


@lru_cache(maxsize=1024)
def unnest_sql(form: RowsForm, types: tuple[str, ...]) -> str:
    """`INSERT INTO t (cols) SELECT ... FROM unnest(%s::type[], ...) [tail]`: every row in one
    statement of `width` parameters (one array a column), whatever the number of rows.
    `types`: the SQL types of the parameter columns."""
    arrays = ", ".join(f"%s::{t}[]" for t in types)
    names = [f"c{i}" for i in range(len(types))]
    it = iter(names)
    select = ", ".join(re.sub("%s", lambda _: f"u.{next(it)}", v) for v in form.values)
    return (f"INSERT INTO {form.table} ({', '.join(form.columns)}) SELECT {select}"
            f" FROM unnest({arrays}) AS u({', '.join(names)}){form.tail}")


def translate(sql: str, keys: tuple[Any, ...] = ()) -> Translated:
    """`keys`: sorted (table, primary key columns) pairs, and ("#identity:table",
    (identity column,)) ones; a tuple, so that the translation is cached per text."""
    return _cached(sql, keys)

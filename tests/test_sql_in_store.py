"""SQL lives only in the store (docs/architecture.md): no module of src/mnemonist outside
store/ holds an SQL statement in a string. The check reads every module's syntax tree, so a
statement split over several literals or built in an f-string is found by its first part.

Left out on purpose: the benchmark harness (bench/), which reads the database directly to
measure what the store did, as the tests do, and which nothing in the product imports; and the
sparse encoder's cache (providers/sparse/cache.py), a file of its own that holds no memory and
that a user may delete at any time."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "mnemonist"
OUTSIDE = ("store", "bench")  # the store itself; the harness (above)
OWN_FILES = ("providers/sparse/cache.py",)  # a cache file of its own (above)

#: how an SQL statement opens: a keyword and what must follow it in a statement (so that
#: prose such as "Update the docs" or "select a model" is not taken for one)
STATEMENT = re.compile(
    r"^\s*(?:SELECT\s+(?:\*|DISTINCT\b|COUNT\(|count\(|[a-z_][\w.]*(?:\s*,|\s+FROM\b|\s+AS\b))"
    r"|INSERT\s+(?:OR\s+\w+\s+)?INTO\b|UPDATE\s+\w+\s+SET\b|DELETE\s+FROM\b|REPLACE\s+INTO\b"
    r"|WITH\s+(?:RECURSIVE\s+)?\w+\s*(?:\([^)]*\)\s*)?AS\s*\(|PRAGMA\s+\w+"
    r"|CREATE\s+(?:TEMP\s+|TEMPORARY\s+|UNIQUE\s+)?(?:TABLE|INDEX|TRIGGER|VIEW)\b"
    r"|DROP\s+(?:TABLE|INDEX|TRIGGER|VIEW)\b|ALTER\s+TABLE\b)",
)


def _first_text(node: ast.AST) -> str | None:
    """The text a string literal opens with: the literal itself, or the first literal part of
    an f-string (`f"SELECT … {where}"`)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value
    return None


def statements_in(source: str) -> list[tuple[int, str]]:
    """(line, opening) of each string in `source` that opens an SQL statement; a docstring
    is prose, whatever it says."""
    tree = ast.parse(source)
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    parts = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)
             for v in node.values}  # an f-string's pieces: the f-string itself is read
    found = []
    for node in ast.walk(tree):
        if id(node) in docstrings or id(node) in parts:
            continue
        text = _first_text(node)
        if text is not None and STATEMENT.match(text):
            found.append((node.lineno, " ".join(text.split())[:70]))
    return found


def test_the_pattern_finds_statements_and_leaves_prose() -> None:
    source = '''
"""SELECT the best rows: a docstring is prose."""
a = "SELECT seq FROM memories WHERE id = ?"
b = f"UPDATE memories SET content = ? WHERE {where}"
c = ("INSERT OR IGNORE INTO entities (id) VALUES (?)"
     " ON CONFLICT DO NOTHING")
d = "WITH RECURSIVE walk(e) AS (SELECT 1)"
e = "DELETE FROM jobs"
f = "PRAGMA data_version"
g = "Select a model first"
h = "update the docs"
i = "SELECT"
'''
    lines = [line for line, _ in statements_in(source)]
    assert lines == [3, 4, 5, 7, 8, 9]


def test_no_sql_outside_the_store() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] in OUTSIDE or relative.as_posix() in OWN_FILES:
            continue
        for line, opening in statements_in(path.read_text()):
            offenders.append(f"{relative}:{line}: {opening}")
    assert not offenders, "SQL outside store/:\n" + "\n".join(offenders)

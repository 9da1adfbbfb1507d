"""Reading JSON out of what an LLM said. Never raises: a value or None, plus warnings.

Steps, each only when the previous one did not already give JSON:

1. the whole text as strict JSON (so data that merely contains "<think>" is never touched);
2. `<think>...</think>` blocks removed, also a closing tag with no opening one (the chat
   template opened it) and an unclosed leading `<think>` (the model stopped mid-thought);
3. Markdown code fences removed (the first fenced block holding a bracket wins);
4. the first balanced `{...}` or `[...]` that parses, strictly or after safe repairs:
   trailing commas, Python's True/False/None, and single-quoted strings (accepted only when
   the converted text parses). After an unclosed `<think>`, the last one wins instead: the
   answer comes after the thinking.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

MAX_TEXT_CHARS = 200_000
MAX_CANDIDATES = 64

_THINK_BLOCK = re.compile(r"<think\b[^>]*>.*?</think\s*>", re.S | re.I)
_THINK_OPEN = re.compile(r"<think\b[^>]*>", re.I)
_THINK_CLOSE = re.compile(r"</think\s*>", re.I)
_FENCE = re.compile(r"```[ \t]*[\w+.-]*[ \t]*\r?\n?(.*?)```", re.S)
_OPEN_FENCE = re.compile(r"```[ \t]*[\w+.-]*[ \t]*\r?\n?")
_CLOSERS = {"{": "}", "[": "]"}


def strip_think(text: str) -> tuple[str, list[str]]:
    warnings: list[str] = []
    out = _THINK_BLOCK.sub("", text)
    closes = list(_THINK_CLOSE.finditer(out))
    if closes:
        out = out[closes[-1].end():]
        warnings.append("a </think> without its opening tag: text before it dropped")
    opening = _THINK_OPEN.search(out)
    if opening and not out[: opening.start()].strip():
        out = out[opening.end():]
        warnings.append("unclosed <think> block")
    return out.strip(), warnings


def strip_fences(text: str) -> tuple[str, list[str]]:
    blocks = _FENCE.findall(text)
    if blocks:
        chosen = next((b for b in blocks if "{" in b or "[" in b), blocks[0])
        return chosen.strip(), []
    opening = _OPEN_FENCE.search(text)
    if opening and not text[: opening.start()].strip():
        return text[opening.end():].strip(), ["unterminated code fence"]
    return text, []


def _loads(text: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError):
        return False, None


def _scan(text: str, start: int) -> int | None:
    """End index (exclusive) of the balanced structure opened at `start`, or None."""
    stack: list[str] = []
    quote: str | None = None
    i, n = start, len(text)
    while i < n:
        ch = text[i]
        if quote is not None:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in _CLOSERS:
            stack.append(_CLOSERS[ch])
        elif ch in "}]":
            if not stack or stack.pop() != ch:
                return None
            if not stack:
                return i + 1
        i += 1
    return None


def balanced_candidates(text: str, limit: int = MAX_CANDIDATES) -> Iterator[tuple[int, int]]:
    """(start, end) of balanced {...} / [...] spans in order of their start; at most `limit`
    start positions are tried (the scan is linear per start)."""
    for tried, match in enumerate(re.finditer(r"[\[{]", text)):
        if tried >= limit:
            return
        end = _scan(text, match.start())
        if end is not None:
            yield match.start(), end


def _rewrite_outside_strings(text: str, fn: Callable[[str, int, list[str]], int]) -> str:
    """Copy `text`, letting `fn` handle characters outside double-quoted strings."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if ch == '"':
                in_string = False
            i += 1
        elif ch == '"':
            in_string = True
            out.append(ch)
            i += 1
        else:
            i = fn(text, i, out)
    return "".join(out)


def remove_trailing_commas(text: str) -> str:
    def step(s: str, i: int, out: list[str]) -> int:
        if s[i] == ",":
            j = i + 1
            while j < len(s) and s[j] in " \t\r\n":
                j += 1
            if j < len(s) and s[j] in "}]":
                return i + 1
        out.append(s[i])
        return i + 1

    return _rewrite_outside_strings(text, step)


_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}


def python_literals(text: str) -> str:
    def step(s: str, i: int, out: list[str]) -> int:
        for word, replacement in _PY_LITERALS.items():
            end = i + len(word)
            if s.startswith(word, i) and not (i and (s[i - 1].isalnum() or s[i - 1] == "_")) \
                    and not (end < len(s) and (s[end].isalnum() or s[end] == "_")):
                out.append(replacement)
                return end
        out.append(s[i])
        return i + 1

    return _rewrite_outside_strings(text, step)


def single_to_double_quotes(text: str) -> str:
    """'...' strings outside "..." strings become "..." strings (inner " escaped)."""
    def step(s: str, i: int, out: list[str]) -> int:
        if s[i] != "'":
            out.append(s[i])
            return i + 1
        j = i + 1
        buf = ['"']
        while j < len(s):
            ch = s[j]
            if ch == "\\" and j + 1 < len(s):
                buf.append("'" if s[j + 1] == "'" else s[j:j + 2])
                j += 2
                continue
            if ch == "'":
                buf.append('"')
                out.append("".join(buf))
                return j + 1
            buf.append('\\"' if ch == '"' else ch)
            j += 1
        out.append(s[i])  # unterminated: leave it for json to reject
        return i + 1

    return _rewrite_outside_strings(text, step)


_REPAIRS: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("trailing commas removed", remove_trailing_commas),
    ("Python literals converted", lambda s: remove_trailing_commas(python_literals(s))),
    ("single quotes converted", lambda s: remove_trailing_commas(
        python_literals(single_to_double_quotes(s)))),
)


def _parse_candidate(text: str) -> tuple[bool, Any, str | None]:
    ok, value = _loads(text)
    if ok:
        return True, value, None
    for label, repair in _REPAIRS:
        try:
            fixed = repair(text)
        except RecursionError:  # pragma: no cover - the repairs are iterative
            continue
        if fixed != text:
            ok, value = _loads(fixed)
            if ok:
                return True, value, label
    return False, None, None


def parse_llm_json(text: object) -> tuple[Any | None, list[str]]:
    """The JSON object or array in an LLM's answer, or None; never raises."""
    try:
        return _parse(text)
    except Exception as exc:  # the contract is "never raises"; report instead
        return None, [f"output could not be parsed: {type(exc).__name__}"]


def _parse(text: object) -> tuple[Any | None, list[str]]:
    if not isinstance(text, str):
        return None, ["output is not text"]
    warnings: list[str] = []
    if len(text) > MAX_TEXT_CHARS:
        text = text[:MAX_TEXT_CHARS]
        warnings.append(f"output longer than {MAX_TEXT_CHARS} characters was cut")
    ok, value = _loads(text)
    if ok and isinstance(value, dict | list):
        return value, warnings
    body, think_warnings = strip_think(text)
    warnings += think_warnings
    unclosed = "unclosed <think> block" in think_warnings
    body, fence_warnings = strip_fences(body)
    warnings += fence_warnings
    if not body.strip():
        return None, [*warnings, "empty output"]
    ok, value = _loads(body)
    if ok and isinstance(value, dict | list):
        return value, warnings
    found: list[tuple[Any, str | None]] = []
    covered = 0  # spans inside a value already found are parts of it, not answers
    for start, end in balanced_candidates(body):
        if start < covered:
            continue
        ok, value, repair = _parse_candidate(body[start:end])
        if ok and isinstance(value, dict | list):
            found.append((value, repair))
            covered = end
            if not unclosed:
                break
    if not found:
        return None, [*warnings, "no JSON object or array could be parsed from the output"]
    value, repair = found[-1] if unclosed else found[0]
    if repair:
        warnings.append(f"JSON repaired: {repair}")
    return value, warnings

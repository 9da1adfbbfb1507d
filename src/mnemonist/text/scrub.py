"""Credential scrubbing: replace secrets with ``[REDACTED:<kind>]`` before anything is stored.

Only the secret itself is replaced; the text around it stays (``password=``, the URL's
user and host, ``Bearer``, the quotes). Rules run in priority order (specific token
formats before generic ``KEY=value`` assignments); where matches overlap the earlier
rule wins, so ``OPENAI_API_KEY=sk-...`` reports ``openai_key``.

Generic ``secret_assignment`` rule, tuned against false positives:

- the key's last word (split on ``_ - .`` and camelCase) must end in secret, token,
  password, passwd, pwd, passphrase, auth, authorization, apikey, accesskey,
  privatekey or secretkey, or be ``key`` after api/access/private/secret/auth/client/
  encryption/signing/master; a trailing base/value/hex/... word is ignored
  (``SECRET_KEY_BASE``). So ``author:``, ``max_tokens=``, ``token_budget:`` and
  ``password_policy:`` are not secrets; nor are the shell's ``PWD``/``OLDPWD``;
- the value must be at least 6 characters (``TOKEN=1``, ``auth: basic`` stay);
- placeholders stay: booleans/null, one repeated character (``xxxxxx``, ``******``),
  ``<...>``, ``$VAR``/``${VAR}``/``$(cmd)``, ``{{ template }}``, ``%VAR%``, values
  containing example/placeholder/changeme/redacted/your_..., URLs without a password;
- an unquoted value after ``:`` must end its line (YAML style); ``Password: please
  choose one`` is prose. An unquoted value followed by ``(`` or ``[`` is code.

Scrubbing is idempotent: a value that already starts with ``[REDACTED:`` is never
matched again. It never raises: every pattern is linear or bounded.
"""

from __future__ import annotations

import base64
import re
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass

MARKER_PREFIX = "[REDACTED:"
_NM = r"(?!\[REDACTED:)"  # a secret never starts with an existing marker
_B = r"(?<![A-Za-z0-9_-])"  # left boundary for prefixed token formats
MIN_GENERIC_VALUE_LEN = 6
_MAX_PASSES = 3


def redaction_marker(kind: str) -> str:
    return f"{MARKER_PREFIX}{kind}]"


@dataclass(frozen=True)
class ScrubResult:
    """Scrubbed text and the kinds of secret found, in order of first appearance."""

    text: str
    kinds: tuple[str, ...]


Accept = Callable[[re.Match[str], str], bool]


@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    groups: tuple[str, ...] = ("secret",)  # the first group that took part is replaced
    accept: Accept | None = None  # (match, secret) -> keep?


def _line_of(text: str, start: int, end: int) -> str:
    lo = text.rfind("\n", 0, start) + 1
    hi = text.find("\n", end)
    return text[lo : len(text) if hi < 0 else hi]


_PLACEHOLDER_EXACT = re.compile(
    r"(.)\1*|<[^<>]*>|\$\{[^}]*\}|\$\([^)]*\)|\$[A-Za-z_][A-Za-z0-9_]*|\{\{.*\}\}|%[A-Za-z_]\w*%"
    r"|(?i:true|false|null|none|nil|undefined|required|optional|enabled|disabled|empty|unset)"
    r"|[A-Za-z][A-Za-z0-9+.-]*://[^@\s]*",
    re.DOTALL,
)
_PLACEHOLDER_WORD = re.compile(
    r"example|placeholder|changeme|change_me|redacted|\byour[_-]|^your[A-Z]|\.\.\.|…",
    re.IGNORECASE,
)


def _is_placeholder(value: str) -> bool:
    return bool(_PLACEHOLDER_EXACT.fullmatch(value) or _PLACEHOLDER_WORD.search(value))


def _not_placeholder(_m: re.Match[str], value: str) -> bool:
    return not _is_placeholder(value)


# --- generic KEY=value ------------------------------------------------------------------

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NON_ALNUM = re.compile(r"[^A-Za-z0-9]+")
_SECRET_SUFFIXES = (
    "secret", "token", "password", "passwd", "pwd", "passphrase", "auth", "authorization",
    "apikey", "accesskey", "privatekey", "secretkey",
)  # fmt: skip
_KEY_QUALIFIERS = frozenset(
    {"api", "access", "private", "secret", "auth", "client", "encryption", "signing", "master"}
)
_NEUTRAL_TAIL = frozenset({"base", "value", "b64", "base64", "hex", "raw", "str", "string"})
_SHELL_NOT_SECRET = frozenset({"PWD", "OLDPWD"})


def is_secret_key(key: str) -> bool:
    """Whether an assignment key names a secret (see the module docstring)."""
    if key in _SHELL_NOT_SECRET:
        return False
    parts = [p.lower() for p in _NON_ALNUM.split(_CAMEL.sub("_", key)) if p]
    while len(parts) > 1 and parts[-1] in _NEUTRAL_TAIL:
        parts.pop()
    if not parts:
        return False
    if parts[-1].endswith(_SECRET_SUFFIXES):
        return True
    return parts[-1] == "key" and len(parts) > 1 and parts[-2] in _KEY_QUALIFIERS


_ASSIGNMENT = re.compile(
    r"(?:(?<=--)|(?<![\w.\-/$\\]))(?P<kq>\\?[\"']?)(?P<key>[A-Za-z][A-Za-z0-9_.-]{0,63})(?P=kq)"
    r"(?P<sep>[ \t]*(?::=|=>|=|:)(?![=:/])[ \t]*)"
    r"(?:(?:Bearer|Basic|Token|Digest|Bot)[ \t]+)?+"
    r"(?:\"(?P<dq>" + _NM + r"(?:[^\"\\\r\n]|\\.)+)\""
    r"|'(?P<sq>" + _NM + r"[^'\r\n]+)'"
    r"|\\\"(?P<eq>" + _NM + r"[^\"\\\r\n]+)\\\""
    r"|(?P<bare>" + _NM + r"[^\s\"'`,;&<>()\[\]{}]++)(?![(\[]))",
    re.IGNORECASE,
)


def _accept_assignment(m: re.Match[str], value: str) -> bool:
    if len(value) < MIN_GENERIC_VALUE_LEN or not is_secret_key(m.group("key")):
        return False
    if _is_placeholder(value):
        return False
    if m.group("bare") is not None and ":" in m.group("sep"):
        text = m.string
        eol = text.find("\n", m.end())
        rest = text[m.end() : len(text) if eol < 0 else eol].strip()
        return not rest or rest[0] in ",;}#"
    return True


# --- header and connection-string checks --------------------------------------------------


def _accept_bearer(_m: re.Match[str], token: str) -> bool:
    # Real tokens mix digits or cases; "Bearer authentication-mechanisms" is prose.
    has_upper = any(c.isupper() for c in token)
    has_lower = any(c.islower() for c in token)
    return any(c.isdigit() for c in token) or (has_upper and has_lower)


def _accept_basic(m: re.Match[str], token: str) -> bool:
    text = m.string
    lo = max(text.rfind("\n", 0, m.start()) + 1, m.start() - 64)
    if "authorization" in text[lo : m.start()].lower():
        return True
    try:  # a bare "Basic <b64>" counts when it decodes to "user:password"
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True).decode()
    except ValueError:  # binascii.Error and UnicodeDecodeError are ValueErrors
        return False
    return ":" in decoded and decoded.isprintable()


_ADO_KEYS = re.compile(
    r"(?:^|;)[ \t]*(?:server|data source|host|address|addr|database|databasename|"
    r"initial catalog|uid|user id|user|username|provider|driver|dsn|port)[ \t]*=",
    re.IGNORECASE,
)
_LIBPQ_KEYS = re.compile(
    r"(?<![\w.-])(?:host|hostaddr|dbname|user|port|sslmode)[ \t]*=", re.IGNORECASE
)


def _accept_ado(m: re.Match[str], value: str) -> bool:
    line = _line_of(m.string, m.start(), m.end())
    return ";" in line and bool(_ADO_KEYS.search(line)) and not _is_placeholder(value)


def _accept_libpq(m: re.Match[str], value: str) -> bool:
    line = _line_of(m.string, m.start(), m.end())
    return bool(_LIBPQ_KEYS.search(line)) and not _is_placeholder(value)


# --- the rules, in priority order ------------------------------------------------------

_PEM = r"-----{0}[ A-Z0-9]{{0,40}}PRIVATE KEY(?: BLOCK)?-----"


def _token(kind: str, body: str, accept: Accept | None = None) -> _Rule:
    return _Rule(kind, re.compile(_B + "(?P<secret>" + body + ")"), accept=accept)


_RULES: tuple[_Rule, ...] = (
    _Rule(
        "private_key",
        re.compile(
            "(?P<secret>" + _PEM.format("BEGIN") + "(?:.*?" + _PEM.format("END") + r"|"
            r"(?:(?:\\n|\r?\n)[ \t]*[A-Za-z0-9+/=]{8,}[ \t]*)*))",  # unterminated: base64 lines
            re.DOTALL,
        ),
    ),
    _Rule(
        "aws_secret_access_key",
        re.compile(
            r"(?<![\w-])[\"']?(?i:(?:aws_?)?secret_?access_?key|aws_?secret_?key)[\"']?"
            r"[ \t]*[:=][ \t]*[\"']?(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
    ),
    _token("anthropic_key", r"sk-ant-[A-Za-z0-9_-]{20,}"),
    _token("openai_key", r"sk-(?!ant-)(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{20,}"),
    _token("github_token", r"gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"),
    _token("gitlab_token", r"glpat-[A-Za-z0-9_-]{20,}"),
    _token("slack_token", r"xox[abprs]-(?=[A-Za-z0-9-]*[0-9])[A-Za-z0-9-]{10,}"),
    _token("stripe_key", r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    _token("google_api_key", r"AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"),
    _token("aws_access_key_id", r"(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    _token("huggingface_token", r"hf_[A-Za-z0-9]{30,}"),
    _token("npm_token", r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
    _token("jwt", r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    _Rule(
        "url_password",
        re.compile(
            r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s:/?#@\[\]\"'<>]*:"
            r"(?P<secret>" + _NM + r"[^\s/?#\"'<>]+)@(?=[^\s@/])"
        ),
        accept=_not_placeholder,
    ),
    _Rule(
        "bearer_token",
        re.compile(r"(?i:\bbearer)[ \t]+(?P<secret>" + _NM + r"[A-Za-z0-9._~+/-]{16,}=*)"),
        accept=_accept_bearer,
    ),
    _Rule(
        "basic_auth",
        re.compile(r"(?i:\bbasic)[ \t]+(?P<secret>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])"),
        accept=_accept_basic,
    ),
    _Rule(
        "connection_string_password",
        re.compile(
            r"(?<![\w.-])(?i:password|pwd)[ \t]*=[ \t]*"
            r"(?:\{(?P<braced>" + _NM + r"[^}\r\n]+)\}|(?P<secret>" + _NM + r"[^;\r\n\"'{]+))"
        ),
        groups=("braced", "secret"),
        accept=_accept_ado,
    ),
    _Rule(
        "connection_string_password",
        re.compile(
            r"(?<![\w.-])(?i:password)[ \t]*=[ \t]*"
            r"(?:'(?P<quoted>" + _NM + r"(?:[^'\\\r\n]|\\.)+)'|(?P<secret>" + _NM + r"[^\s'\";]+))"
        ),
        groups=("quoted", "secret"),
        accept=_accept_libpq,
    ),
    _Rule(
        "secret_assignment",
        _ASSIGNMENT,
        groups=("dq", "sq", "eq", "bare"),
        accept=_accept_assignment,
    ),
)


def _secret_span(m: re.Match[str], groups: tuple[str, ...]) -> tuple[int, int] | None:
    for name in groups:
        start, end = m.span(name)
        if start < 0:
            continue
        value = m.string[start:end]
        stripped = value.strip()
        if not stripped:
            return None
        start += len(value) - len(value.lstrip())
        return start, start + len(stripped)
    return None


def _find_secrets(text: str) -> list[tuple[int, int, str]]:
    """Non-overlapping (start, end, kind) spans, sorted by start; earlier rules win."""
    found: list[tuple[int, int, str]] = []
    starts: list[int] = []
    for rule in _RULES:
        for m in rule.pattern.finditer(text):
            span = _secret_span(m, rule.groups)
            if span is None:
                continue
            start, end = span
            i = bisect_left(starts, start)
            if (i > 0 and found[i - 1][1] > start) or (i < len(found) and found[i][0] < end):
                continue
            if rule.accept is not None and not rule.accept(m, text[start:end]):
                continue
            found.insert(i, (start, end, rule.kind))
            starts.insert(i, start)
    return found


def _scrub_once(text: str) -> tuple[str, list[str]]:
    pieces: list[str] = []
    kinds: list[str] = []
    pos = 0
    for start, end, kind in _find_secrets(text):
        pieces.append(text[pos:start])
        pieces.append(redaction_marker(kind))
        kinds.append(kind)
        pos = end
    pieces.append(text[pos:])
    return "".join(pieces), kinds


def scrub_credentials(text: str) -> ScrubResult:
    """Replace every credential in ``text`` with ``[REDACTED:<kind>]``.

    Runs until nothing more is found (at most a few passes), so a secret that was
    hidden by an overlapping match is caught too and a second call finds nothing.
    """
    kinds: list[str] = []
    for _ in range(_MAX_PASSES):
        text, found = _scrub_once(text)
        if not found:
            break
        kinds.extend(found)
    return ScrubResult(text=text, kinds=tuple(dict.fromkeys(kinds)))

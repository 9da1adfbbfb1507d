"""Credential scrubbing: replace secrets with ``[REDACTED:<kind>]`` before anything is stored.

Only the secret is replaced; the text around it stays (``password=``, the URL's user and
host, ``Bearer``, quotes). Rules run in priority order, token formats before generic ones;
where matches overlap the earlier rule wins (``OPENAI_API_KEY=sk-...`` is ``openai_key``).

The generic ``secret_assignment`` rule (``KEY=value``, ``key: value``, ``"key": "value"``)
is tuned against false positives in prose, config and code:

- the key's last word (split on ``_-.`` and camelCase) must end in secret, token, password,
  passwd, pwd, passphrase, auth(orization), apikey, accesskey, privatekey or secretkey, or
  be ``key`` after api/access/private/secret/auth/client/...: ``author:``, ``max_tokens=``,
  ``token_budget:``, ``password_policy:`` and the shell's ``PWD`` are not secrets;
- the value has 6+ characters (``TOKEN=1`` stays) and is no placeholder (``true``, ``null``,
  ``xxxxxx``, ``******``, ``<...>``, ``$VAR``, ``${VAR}``, ``{{ tpl }}``, ``your_...``,
  ``...example...``, a URL without a password);
- an unquoted value after ``:`` must end its line (``Password: please pick one`` is prose);
  an unquoted value followed by ``(`` or ``[`` is code (``password = get_pw()``);
- it is looked for at every key, including inside the value of a key that names no secret
  (``note: password=hunter2``: ``note`` is no secret, ``password`` is).

The ``prose_password`` rule reads a password stated in a sentence: ``my password is
hunter2!``, ``the password for the db is S3cr3t-Pa55``, ``pw: ...``, ``changed the passphrase
to ...``. A word after ``password`` is taken only when it looks like one (6+ characters with a
digit, a symbol such as ``!@#$%^&*+=~``, or upper case after its first letter; or quoted), so
``the password is required``, ``password policy``, ``the password is base64-encoded`` and
``PWD is /home/me`` stay. An unquoted passphrase of several plain words is not recognised.

Idempotent: a secret never starts with ``[REDACTED:``. Never raises; stays linear in time.
"""

from __future__ import annotations

import base64
import re
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass

MARKER_PREFIX = "[REDACTED:"
_NM = r"(?!\[REDACTED:)"  # a secret never starts with an existing marker
_B = r"(?:(?<=-----)|(?<![A-Za-z0-9_-]))"  # left boundary for prefixed token formats
_W = r"(?:[A-Za-z0-9_]|-(?!----))"  # base64url char; stops before a PEM "-----" line
MIN_GENERIC_VALUE_LEN = 6
_MAX_PASSES = 4


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
    #: a cheap necessary condition: every group holds a string found in the text (in the
    #: lower-cased text when `folded`), or the rule cannot match and its scan is skipped
    gate: tuple[tuple[str, ...], ...] = ()
    folded: bool = False
    #: where matches may start (a key and its separator, found by this pattern): a match is
    #: tried only at a head whose `key` names a secret, and a head that names none is
    #: passed over without reading its value, so a secret inside that value is still found
    heads: re.Pattern[str] | None = None


def _line_around(text: str, start: int, end: int, radius: int = 256) -> str:
    """The match's line, cut to ``radius`` characters each side (keeps scrubbing linear)."""
    lo, hi = max(0, start - radius), min(len(text), end + radius)
    lo, nl = max(lo, text.rfind("\n", lo, start) + 1), text.find("\n", end, hi)
    return text[lo : hi if nl < 0 else nl]


_PLACEHOLDER_EXACT = re.compile(
    r"(.)\1*|<[^<>]*>|\$\{[^}]*\}|\$\([^)]*\)|\$[A-Za-z_][A-Za-z0-9_]*|\{\{.*\}\}|%[A-Za-z_]\w*%"
    r"|(?i:true|false|null|none|nil|undefined|required|optional|enabled|disabled|empty|unset)"
    r"|[A-Za-z][A-Za-z0-9+.-]*://[^@\s]*",
    re.DOTALL,
)
_PLACEHOLDER_WORD = re.compile(
    r"(?i:example|placeholder|changeme|change_me|redacted|\byour[_-])|^your[A-Z]|\.\.\.|…"
)


def _is_placeholder(value: str) -> bool:
    return bool(_PLACEHOLDER_EXACT.fullmatch(value) or _PLACEHOLDER_WORD.search(value))


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
    parts = [p.lower() for p in _NON_ALNUM.split(_CAMEL.sub("_", key)) if p]
    while len(parts) > 1 and parts[-1] in _NEUTRAL_TAIL:
        parts.pop()
    if not parts or key in _SHELL_NOT_SECRET:
        return False
    if parts[-1].endswith(_SECRET_SUFFIXES) or parts[-1] == "pw":
        return True
    return parts[-1] == "key" and len(parts) > 1 and parts[-2] in _KEY_QUALIFIERS


_ASSIGNMENT_HEAD = (
    r"(?:(?<=--)|(?<![\w.\-/$\\]))(?P<kq>\\?[\"']?)(?P<key>[A-Za-z][A-Za-z0-9_.-]{0,63})(?P=kq)"
    r"(?P<sep>[ \t]*(?::=|=>|=|:)(?![=:/])[ \t]*)"
)
_ASSIGNMENT = re.compile(
    _ASSIGNMENT_HEAD
    + r"(?:(?:Bearer|Basic|Token|Digest|Bot)[ \t]+)?+"
    r"(?:\"(?P<dq>" + _NM + r"(?:[^\"\\\r\n]|\\.)+)\""
    r"|'(?P<sq>" + _NM + r"[^'\r\n]+)'"
    r"|\\\"(?P<eq>" + _NM + r"[^\"\\\r\n]+)\\\""
    r"|(?P<bare>" + _NM + r"[^\s\"'`,;&<>()\[\]{}]++)(?![(\[]))",
    re.IGNORECASE,
)
_LINE_END = re.compile(r"[ \t\r]*(?:$|[,;}#])", re.MULTILINE)


def _accept_assignment(m: re.Match[str], value: str) -> bool:
    if len(value) < MIN_GENERIC_VALUE_LEN or _is_placeholder(value):
        return False
    if not is_secret_key(m.group("key")):
        return False
    if m.group("bare") is not None and ":" in m.group("sep"):
        return bool(_LINE_END.match(m.string, m.end()))
    return True


def _accept_basic(m: re.Match[str], token: str) -> bool:
    if m.group("header"):  # "Authorization: Basic ..."
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
_LIBPQ_KEYS = re.compile(r"(?<!\S)(?:host|hostaddr|dbname|user|port|sslmode)[ \t]*=", re.I)


def _on_line_with(keys: re.Pattern[str], needs: str = "") -> Accept:
    """Accept a non-placeholder value whose line also holds one of ``keys`` (and ``needs``)."""

    def accept(m: re.Match[str], value: str) -> bool:
        line = _line_around(m.string, m.start(), m.end())
        return needs in line and bool(keys.search(line)) and not _is_placeholder(value)

    return accept


_PEM = r"-----{0}[ A-Z0-9]{{0,40}}PRIVATE KEY(?: BLOCK)?-----"
# (?:(?!-----BEGIN).)*? never scans past the next BEGIN, so junk input stays linear;
# an unterminated key is taken up to the end of its base64 lines.
_PRIVATE_KEY = (
    f"(?P<secret>{_PEM.format('BEGIN')}(?:(?:(?!-----BEGIN).)*?{_PEM.format('END')}"
    r"|(?:(?:\\n|\r?\n)[ \t]*[A-Za-z0-9+/=]{8,}[ \t]*)*))"
)
_AWS_SECRET = (
    r"(?<![\w-])[\"']?(?i:(?:aws_?)?secret_?access_?key|aws_?secret_?key)[\"']?"
    r"[ \t]*[:=][ \t]*[\"']?(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
)
_URL_PASSWORD = (
    r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s:/?#@\[\]\"'<>]*:"
    rf"(?P<secret>{_NM}[^\s/?#\"'<>]+)@(?=[^\s@/])"
)
_BEARER = rf"(?i:\bbearer)[ \t]+(?P<secret>{_NM}(?:[A-Za-z0-9._~+/]|-(?!----)){{16,}}=*)"
_BASIC = (
    r"(?P<header>(?i:authorization)[\"']?[ \t]*[:=][ \t]*[\"']?)?"
    r"(?i:\bbasic)[ \t]+(?P<secret>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])"
)
_ADO_PASSWORD = (
    r"(?<![^;\s\"'])(?i:password|pwd)[ \t]*=[ \t]*"
    rf"(?:\{{(?P<braced>{_NM}[^}}\r\n]+)\}}|(?P<secret>{_NM}[^;\r\n\"'{{]+))"
)
_LIBPQ_PASSWORD = (
    r"(?<!\S)(?i:password)[ \t]*=[ \t]*"
    rf"(?:'(?P<quoted>{_NM}(?:[^'\\\r\n]|\\.)+)'|(?P<secret>{_NM}[^\s'\";&]+))"
)


_PROSE_CHAR = r"[^\s\"'`<>()\[\]{},;.:?]"
#: a word: `.`, `:` and `?` only between its characters (a sentence's end is not part of it);
#: possessive, so a value followed by "(" (code: `password = getPassword()`) never shrinks
_PROSE_VALUE = rf"(?:{_PROSE_CHAR}|[.:?]++(?={_PROSE_CHAR}))++"
_PROSE_PASSWORD = (
    r"(?<![\w./\\$-])(?i:password|passphrase|passwd|passcode|pwd|pw)s?(?![\w-])"
    r"(?:[ \t]*(?:(?<![=!<>])=(?!=)|:(?![:/=]))[ \t]*"  # password = / pw:
    r"|[ \t]+(?i:(?:is|was)(?:[ \t]+(?:now|still|just|set[ \t]+to|changed[ \t]+to))?"
    r"|will[ \t]+be|would[ \t]+be|remains|reads|equals)[ \t]+"  # password is
    # the password for the db is / on github was / to the vault =
    r"|[ \t]+(?i:for|of|on|to|at|in)(?:[ \t]+[^\s:=]{1,40}){1,4}?"
    r"[ \t]+(?i:is|was|=|:)[ \t]+"
    r"|[ \t]+(?i:to|as)[ \t]+"  # changed the password to / set as
    r"|[ \t]+)"  # password hunter2
    r"(?:\"(?P<dq>" + _NM + r"[^\"\r\n]{1,200})\"(?![\w])"
    r"|'(?P<sq>" + _NM + r"[^'\r\n]{1,200})'(?![\w])"
    r"|`(?P<bq>" + _NM + r"[^`\r\n]{1,200})`"
    r"|(?P<secret>" + _NM + _PROSE_VALUE + r")(?![(\[]))"
)
_PROSE_SYMBOLS = frozenset("!@#$%^&*+=~|")
#: "base64-encoded", "bcrypt-hashed", "write-only", "case-sensitive": how it is, not what
_DESCRIPTOR = re.compile(
    r"[A-Za-z0-9]+(?:-[A-Za-z]+)*-(?i:[a-z]*(?:ed|ing|only|based|safe|less|free|like|wide"
    r"|sensitive|specific|protected|length|long|time|factor|level))"
)


def _accept_prose_password(m: re.Match[str], value: str) -> bool:
    """A word after "password" counts when it looks like one (see the module docstring)."""
    if MARKER_PREFIX in value or _is_placeholder(value) or "://" in value:
        return False
    if m.group("secret") is None:  # quoted: anything but plain lower-case words
        return len(value) >= 4 and not (value.isalpha() and value.islower())
    if len(value) < MIN_GENERIC_VALUE_LEN or value[0] in "/~\\" or value.startswith("./"):
        return False
    if _DESCRIPTOR.fullmatch(value):
        return False
    return (any(c.isdigit() for c in value) or not _PROSE_SYMBOLS.isdisjoint(value)
            or (any(c.isupper() for c in value[1:]) and any(c.islower() for c in value)))


def _rule(
    kind: str, pattern: str | re.Pattern[str], accept: Accept | None = None,
    groups: tuple[str, ...] = ("secret",), flags: int = 0, *,
    gate: tuple[tuple[str, ...], ...] = (), folded: bool = False,
    heads: re.Pattern[str] | None = None,
) -> _Rule:  # fmt: skip
    return _Rule(kind, re.compile(pattern, flags), groups, accept, gate, folded, heads)


_CONN = "connection_string_password"


def _token(kind: str, body: str, *needles: str) -> _Rule:
    """A token format; its literal prefixes (`needles`, case as written) gate its scan."""
    return _rule(kind, f"{_B}(?P<secret>{body})", gate=(needles,))


_RULES: tuple[_Rule, ...] = (
    _rule("private_key", _PRIVATE_KEY, flags=re.DOTALL, gate=(("-----BEGIN",),)),
    _rule("aws_secret_access_key", _AWS_SECRET, gate=(("secret",),), folded=True),
    _token("anthropic_key", rf"sk-ant-{_W}{{20,}}", "sk-ant-"),
    _token("openai_key", rf"sk-(?!ant-)(?={_W}*[0-9]){_W}{{20,}}", "sk-"),
    _token("github_token", r"gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}",
           "gh", "github_pat_"),
    _token("gitlab_token", rf"glpat-{_W}{{20,}}", "glpat-"),
    _token("slack_token",
           r"(?:xox[abeprs]|xapp)-(?=[A-Za-z0-9-]*[0-9])(?:[A-Za-z0-9]|-(?!----)){10,}",
           "xox", "xapp"),
    _token("stripe_key", r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}", "_live_", "_test_"),
    _token("google_api_key", rf"AIza[0-9A-Za-z_-]{{35}}(?!{_W})", "AIza"),
    _token("aws_access_key_id", r"(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])", "AKIA", "ASIA"),
    _token("huggingface_token", r"hf_[A-Za-z0-9]{30,}", "hf_"),
    _token("npm_token", r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", "npm_"),
    _token("jwt", rf"eyJ{_W}{{8,}}\.{_W}{{8,}}\.{_W}{{8,}}", "eyJ"),
    _rule("url_password", _URL_PASSWORD, lambda _m, v: not _is_placeholder(v),
          gate=(("://",), ("@",))),
    # a real token has a digit or mixed case; "Bearer authentication-mechanisms" is prose
    _rule(
        "bearer_token",
        _BEARER,
        lambda _m, v: any(map(str.isdigit, v)) or v.lower() != v != v.upper(),
        gate=(("bearer",),), folded=True,
    ),
    _rule("basic_auth", _BASIC, _accept_basic, gate=(("basic",),), folded=True),
    # ADO/JDBC "Server=..;User Id=..;Password=..;" and libpq "host=.. user=.. password=.."
    _rule(_CONN, _ADO_PASSWORD, _on_line_with(_ADO_KEYS, ";"), ("braced", "secret"),
          gate=(("password", "pwd"), ("=",)), folded=True),
    _rule(_CONN, _LIBPQ_PASSWORD, _on_line_with(_LIBPQ_KEYS), ("quoted", "secret"),
          gate=(("password",), ("=",)), folded=True),
    # the key must name a secret (`is_secret_key`): its lower-cased text holds one of these
    _rule("secret_assignment", _ASSIGNMENT, _accept_assignment, ("dq", "sq", "eq", "bare"),
          gate=(("secret", "token", "pass", "pwd", "pw", "auth", "key"), (":", "=")),
          folded=True, heads=re.compile(_ASSIGNMENT_HEAD, re.IGNORECASE)),
    # "my password is hunter2!", "the password for the db is S3cr3t-Pa55", "pw: ..."
    _rule("prose_password", _PROSE_PASSWORD, _accept_prose_password,
          ("dq", "sq", "bq", "secret"), gate=(("pass", "pw"),), folded=True),
)


def _secret_span(m: re.Match[str], groups: tuple[str, ...]) -> tuple[int, int] | None:
    """Span of the first group that took part, without surrounding whitespace."""
    name = next((g for g in groups if m.start(g) >= 0), None)
    if name is None:
        return None
    value = m.group(name)
    start = m.start(name) + len(value) - len(value.lstrip())
    return start, start + len(value.strip())


def _may_match(rule: _Rule, text: str, lower: str | None) -> bool:
    """False when the rule's gate proves it cannot match `text` (a scan saved)."""
    if rule.folded:
        if lower is None:
            return True
        text = lower
    return all(any(n in text for n in group) for group in rule.gate)


def _matches(rule: _Rule, text: str) -> Iterator[re.Match[str]]:
    """The rule's matches, left to right, none overlapping (as `finditer`). With `heads`,
    a match is tried only where a head names a secret (`is_secret_key`); a head that names
    none is stepped over (its value is read again for heads), in linear time: a head is
    short, and a value is read once per head that names a secret."""
    if rule.heads is None:
        yield from rule.pattern.finditer(text)
        return
    pos = 0
    while (head := rule.heads.search(text, pos)) is not None:
        if not is_secret_key(head.group("key")):
            pos = head.end()
            continue
        m = rule.pattern.match(text, head.start())
        if m is None:
            pos = head.start() + 1
            continue
        yield m
        pos = max(m.end(), head.start() + 1)


def _find_secrets(text: str) -> list[tuple[int, int, str]]:
    """Non-overlapping (start, end, kind) spans, sorted by start; earlier rules win."""
    found: list[tuple[int, int, str]] = []
    starts: list[int] = []
    # IGNORECASE also matches "ſ", "K" (Kelvin), "ı" and "İ" to ASCII letters, which
    # str.lower() keeps apart: a text with any non-ASCII character skips no folded rule
    lower = text.lower() if text.isascii() else None
    for rule in _RULES:
        if rule.gate and not _may_match(rule, text, lower):
            continue
        for m in _matches(rule, text):
            span = _secret_span(m, rule.groups)
            if span is None or span[0] == span[1]:
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


def marker(kind: str) -> str:
    """What a credential of this kind is replaced with."""
    return f"{MARKER_PREFIX}{kind}]"


def _scrub_once(text: str) -> tuple[str, list[str]]:
    spans = _find_secrets(text)
    pieces: list[str] = []
    pos = 0
    for start, end, kind in spans:
        pieces += [text[pos:start], marker(kind)]
        pos = end
    return "".join(pieces) + text[pos:], [kind for _, _, kind in spans]


#: Short strings (tags, names, reasons, metadata values: each write scrubs about ten, mostly
#: the same few again and again) found to hold no credential are remembered, up to
#: CLEAN_CACHE of them: scrubbing is a pure function of the text. A text that held one is
#: never kept.
CACHED_CHARS = 200
CLEAN_CACHE = 8192
_clean: dict[str, None] = {}


def scrub_credentials(text: str) -> ScrubResult:
    """Replace every credential in ``text`` with ``[REDACTED:<kind>]``."""
    if text in _clean:
        return ScrubResult(text=text, kinds=())
    result = _scrub(text)
    if not result.kinds and len(text) <= CACHED_CHARS:
        if len(_clean) >= CLEAN_CACHE:
            _clean.clear()
        _clean[text] = None
    return result


def _scrub(text: str) -> ScrubResult:
    """Replace every credential in ``text`` with ``[REDACTED:<kind>]`` (`scrub_credentials`).

    Repeats until a pass finds nothing (at most ``_MAX_PASSES``): a secret can come to
    light only once a neighbour is redacted (a key glued to a PEM block, a libpq password
    whose ``host=`` sat across a multi-line key). Such late finds are listed last in
    ``kinds``; otherwise kinds follow their first position in the text.
    """
    kinds: list[str] = []
    for _ in range(_MAX_PASSES):
        text, found = _scrub_once(text)
        if not found:
            break
        kinds.extend(found)
    return ScrubResult(text=text, kinds=tuple(dict.fromkeys(kinds)))


def scrub_optional(text: str | None) -> str | None:
    """`scrub_credentials(text).text` for a field that may be absent (who, why, a reason...)."""
    return None if text is None else scrub_credentials(text).text


def scrub_all(items: list[str] | None) -> list[str] | None:
    """Each item scrubbed (tags); None stays None."""
    return None if items is None else [scrub_credentials(i).text for i in items]


def scrub_deep(value: object) -> object:
    """Every string inside a JSON-like value scrubbed (dict keys kept as they are)."""
    if isinstance(value, str):
        return scrub_credentials(value).text
    if isinstance(value, dict):
        return {k: scrub_deep(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub_deep(v) for v in value]
    return value

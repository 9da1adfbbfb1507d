"""The HTTP trust boundary: one policy for every route (`/api/*`, `/health`, `/mcp`, pages).

Each request passes these checks in order; the first that fails answers with a JSON error
`{"error", "message"}` and nothing behind it runs:

1. **Host** (421 `forbidden_host`). On a loopback bind, only `127.0.0.1`, `localhost` and
   `[::1]` with the bound port, and the names of `server.allowed_hosts`: a page that rebinds its
   own DNS name to 127.0.0.1 still sends its own name. On a non-loopback bind (a LAN address,
   `0.0.0.0`) those names and the bound address; any other Host only with a valid token.
2. **Origin** (403 `forbidden_origin`). A state-changing request (any method but GET, HEAD,
   OPTIONS) that carries an `Origin` other than the daemon's own (same scheme-less host and port
   as the request's Host), or `Sec-Fetch-Site` other than `same-origin`/`none`, comes from a web
   page: refused. No Origin (curl, the CLI, hooks, MCP clients) passes. No CORS headers are ever
   sent, so a page cannot read any answer either.
3. **Token** (401 `unauthorized`) on every path but `/health`, `/login` and the dashboard's
   static files (`/ui/static/…`: scripts and styles, no data) when `server.token` is set or
   named tokens exist (`mnemonist token add`; `api/tokens.py` checks both, and finds whose a
   named token is): as `Authorization: Bearer …`, `X-Mnemonist-Token: …`, or the dashboard's
   cookie (`mnemonist_token`, HttpOnly, SameSite=Strict, set by `/login`; it holds an HMAC
   under a secret this daemon drew at start, never the token). A browser asking for a
   dashboard page (`/`, `/ui/…`, accepting text/html) without it is sent to `/login` (303).
   Identity headers (`X-Mnemonist-Agent` / `-User`) get the limits of the body's fields here
   (400 naming the header), on every route.
4. **Body size** (413 `body_too_large`): `server.max_body_bytes`, checked on Content-Length
   before anything is read and counted while reading.
5. **Content type** (415 `unsupported_media_type`): a state-changing request with a body must
   say it is JSON (`application/json`, `application/*+json`, or JSON lines for import).
6. **JSON nesting** (400 `json_too_deep`): more than `MAX_JSON_DEPTH` levels are refused before
   any parser recurses into them.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

import numpy as np
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: loopback names as a Host header spells them
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
#: media types a JSON route accepts (import also takes JSON lines)
JSON_TYPES = frozenset({"application/json", "application/x-ndjson", "application/jsonl",
                        "application/x-jsonlines", "application/json-lines"})
MAX_JSON_DEPTH = 64
MIN_TOKEN_CHARS = 16
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
OPEN_PATHS = frozenset({"/health", "/login"})
#: the dashboard's scripts, styles and vendored libraries: the same for everyone, no data
OPEN_PREFIXES = ("/ui/static/",)
#: the dashboard's session cookie (HttpOnly, SameSite=Strict): `BoundaryPolicy.session_cookie()`
TOKEN_COOKIE = "mnemonist_token"
LOGIN_PATH = "/login"
#: where the boundary leaves a request's principal (named tokens): its ASGI scope's `state`
PRINCIPAL_KEY = "mnemonist_principal"


def is_loopback(host: str) -> bool:
    """True for an address or name that only this machine can reach."""
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def token_problem(token: str) -> str | None:
    """Why a configured token is too weak to guard the daemon, or None."""
    if not token:
        return None
    if any(c.isspace() for c in token):
        return "contains whitespace"
    if len(token) < MIN_TOKEN_CHARS:
        return f"has {len(token)} characters; at least {MIN_TOKEN_CHARS} are required"
    return None


def split_host(value: str) -> tuple[str, int | None]:
    """`name[:port]` of a Host header (IPv6 in brackets) as (lower-case name, port or None)."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return value, None
        name, rest = value[: end + 1], value[end + 1 :]
        port_text = rest[1:] if rest.startswith(":") else ""
    elif value.count(":") == 1:
        name, port_text = value.split(":")
    else:
        name, port_text = value, ""
    if not port_text:
        return name, None
    return (name, int(port_text)) if port_text.isdigit() else (value, -1)


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host.lower()


@dataclass(frozen=True)
class BoundaryPolicy:
    """What the daemon answers to, derived from the address it actually bound."""

    bind_host: str = "127.0.0.1"
    token: str = ""
    allowed_hosts: tuple[str, ...] = ()
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    #: path prefix -> a larger body limit for that route (documents carry whole texts)
    body_limits: Mapping[str, int] = field(default_factory=dict)
    open_paths: frozenset[str] = OPEN_PATHS
    open_prefixes: tuple[str, ...] = OPEN_PREFIXES
    #: drawn at start: the key of the dashboard's cookie (a restart logs browsers out)
    cookie_secret: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)

    @property
    def loopback(self) -> bool:
        return is_loopback(self.bind_host)

    def named_hosts(self) -> set[str]:
        """Host names (no port) this daemon answers to without a token."""
        names = set(LOOPBACK_NAMES)
        if not self.loopback and self.bind_host not in ("0.0.0.0", "::", ""):
            names.add(_bracketed(self.bind_host))
        return names

    def host_listed(self, host: str, port: int | None) -> bool:
        """`host` (a Host header) names this daemon at its bound `port` (None: unknown)."""
        name, given = split_host(host)
        if given == -1:
            return False
        effective = 80 if given is None else given
        if name in self.named_hosts() and (port is None or effective == port):
            return True
        for entry in self.allowed_hosts:
            ename, eport = split_host(entry)
            if ename == name and (eport is None or eport == effective):
                return True
        return False

    def session_cookie(self) -> str:
        """What the dashboard's cookie holds: HMAC-SHA256 of the token under this daemon's
        secret. Browsers send a cookie to every port of its host: another server there gets
        a value that is not the token, opens nothing else, and dies with this daemon."""
        return hmac.new(self.cookie_secret, self.token.encode(), hashlib.sha256).hexdigest()

    def is_open(self, path: str) -> bool:
        """A path anyone may ask for without a token."""
        return path in self.open_paths or path.startswith(self.open_prefixes)

    def body_limit(self, path: str) -> int:
        limit = self.max_body_bytes
        for prefix, bigger in self.body_limits.items():
            if path == prefix or path.startswith(prefix + "/"):
                limit = max(limit, bigger)
        return limit

    # -- the checks, each answering None (pass) or (status, code, message) ----------------------
    def check_host(self, host: str, port: int | None, token_valid: bool
                   ) -> tuple[int, str, str] | None:
        """`token_valid`: the request came with a token this daemon accepts."""
        if self.host_listed(host, port):
            return None
        if not self.loopback and token_valid:
            return None  # bound for remote clients: they come by any name, with the token
        where = f"127.0.0.1:{port}" if port else "127.0.0.1"
        hint = ("; remote names need the token" if not self.loopback
                else f"; use http://{where}")
        return (421, "forbidden_host",
                f"Host {host or '(none)'!r} is not a name this daemon answers to (add it to"
                f" server.allowed_hosts{hint})")

    def check_origin(self, method: str, host: str, headers: Mapping[str, str]
                     ) -> tuple[int, str, str] | None:
        if method in SAFE_METHODS:
            return None
        origin = headers.get("origin")
        site = headers.get("sec-fetch-site", "").strip().lower()
        if origin is not None and not same_origin(origin, host):
            return (403, "forbidden_origin",
                    f"requests from the web origin {origin!r} may not change this daemon's"
                    " memory (only requests without an Origin, or from the daemon's own)")
        if site and site not in ("same-origin", "none"):
            return (403, "forbidden_origin",
                    f"a {site} request from a web page may not change this daemon's memory")
        return None


def cookie_value(header: str, name: str) -> str:
    """The raw value of cookie `name` in a Cookie header ('' when absent); the first counts.
    The dashboard stores the token percent-encoded, so any token survives the cookie syntax."""
    for part in header.split(";"):
        key, sep, value = part.strip().partition("=")
        if sep and key == name:
            return value.strip().strip('"')
    return ""


def wants_page(method: str, path: str, headers: Mapping[str, str]) -> bool:
    """A browser navigating to a dashboard page (not a script fetching data, not the API)."""
    return (method in ("GET", "HEAD") and (path == "/" or path.startswith("/ui/"))
            and "text/html" in headers.get("accept", ""))


def same_origin(origin: str, host: str) -> bool:
    """`origin` (scheme://host[:port]) is the daemon as this request's Host names it."""
    try:
        parts = urlsplit(origin.strip())
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path:
        return False
    default = 443 if parts.scheme == "https" else 80
    oname, oport = split_host(parts.netloc)
    hname, hport = split_host(host)
    return oname == hname and (oport or default) == (hport or default)


def media_type(headers: Mapping[str, str]) -> str:
    return headers.get("content-type", "").split(";")[0].strip().lower()


def is_json_type(kind: str) -> bool:
    return kind in JSON_TYPES or (kind.startswith("application/") and kind.endswith("+json"))


def json_depth_exceeds(raw: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """More than `limit` nested arrays/objects in `raw` (JSON or JSON lines)? Linear, and
    without recursion: escapes are dropped, strings cut out, and the brackets left are summed."""
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False
    text = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    outside = b"".join(text.split(b'"')[::2])
    brackets = outside.translate(None, bytes(b for b in range(256) if b not in b"[]{}"))
    if not brackets:
        return False
    depth = 0
    for start in range(0, len(brackets), 1 << 20):  # bounded memory: 1 MiB of brackets a step
        codes = np.frombuffer(brackets[start : start + (1 << 20)], dtype=np.uint8)
        steps = np.where((codes == ord("[")) | (codes == ord("{")), 1, -1).astype(np.int32)
        running = np.cumsum(steps, dtype=np.int64) + depth
        if int(running.max()) > limit:
            return True
        depth = int(running[-1])
    return False


class Refused(Exception):
    """A request the boundary turns away, with its JSON answer."""

    def __init__(self, status: int, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.details = details


async def send_json(send: Send, status: int, body: dict[str, Any], *, close: bool = False,
                    head: bool = False) -> None:
    payload = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"),
               (b"content-length", str(len(payload)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else payload})


async def send_redirect(send: Send, location: str) -> None:
    await send({"type": "http.response.start", "status": 303,
                "headers": [(b"location", location.encode()), (b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})


class Authority(Protocol):
    """What checks tokens for the boundary (`api/tokens.TokenAuthority`)."""

    async def authenticate_async(self, headers: Mapping[str, str]) -> Any: ...

    def header_problem(self, headers: Mapping[str, str]) -> Refused | None: ...


class Boundary:
    """ASGI middleware enforcing a `BoundaryPolicy` on every HTTP request. `authority`
    (`api/tokens.TokenAuthority`) checks tokens and finds the request's principal, which it
    leaves in the scope's state (`api/tokens.principal_of`)."""

    def __init__(self, app: ASGIApp, policy: BoundaryPolicy, authority: Authority) -> None:
        self.app = app
        self.policy = policy
        self.authority = authority

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        method = scope["method"].upper()
        try:
            principal = await self._check_headers(scope, method, headers)
            body = await self._read_body(scope, receive, headers)
            self._check_body(method, headers, body)
        except Refused as exc:
            if exc.status == 401 and wants_page(method, scope["path"], headers):
                await send_redirect(send, LOGIN_PATH)  # a person without the cookie: log in
                return
            close = exc.status == 413  # the rest of a too-large body is never read
            await send_json(send, exc.status, {"error": exc.code, "message": exc.message,
                                               **exc.details},
                            close=close, head=method == "HEAD")
            return
        if principal is not None:
            scope.setdefault("state", {})[PRINCIPAL_KEY] = principal
        await self.app(scope, _replay(body, receive), send)

    async def _check_headers(self, scope: Scope, method: str, headers: Mapping[str, str]
                             ) -> Any:
        """Host, Origin, token and identity headers; the request's principal (or None)."""
        policy = self.policy
        server = scope.get("server")
        port = server[1] if server and len(server) > 1 else None
        host = headers.get("host", "")
        auth = None
        if not policy.host_listed(host, port):
            if not policy.loopback:  # another name may come with a valid token
                auth = await self.authority.authenticate_async(headers)
            problem = policy.check_host(host, port, auth is not None and auth.valid)
            if problem is not None:
                raise Refused(*problem)
        problem = policy.check_origin(method, host, headers)
        if problem is not None:
            raise Refused(*problem)
        principal = None
        if not policy.is_open(scope["path"]):
            auth = auth or await self.authority.authenticate_async(headers)
            if not auth.allowed:
                raise Refused(401, "unauthorized", auth.problem)
            principal = auth.principal
        refused = self.authority.header_problem(headers)
        if refused is not None:
            raise refused
        return principal

    async def _read_body(self, scope: Scope, receive: Receive, headers: Mapping[str, str]
                         ) -> bytes:
        limit = self.policy.body_limit(scope["path"])
        too_large = Refused(413, "body_too_large",
                            f"the request body is larger than {limit} bytes"
                            " (server.max_body_bytes)")
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise too_large
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break  # the client went away; the app sees an empty body and the disconnect
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise too_large
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)

    @staticmethod
    def _check_body(method: str, headers: Mapping[str, str], body: bytes) -> None:
        if not body.strip():
            return
        kind = media_type(headers)
        if method not in SAFE_METHODS and not is_json_type(kind):
            raise Refused(415, "unsupported_media_type",
                          f"content-type {kind or '(none)'!r} is not accepted: send the body as"
                          " application/json")
        if is_json_type(kind) and json_depth_exceeds(body):
            raise Refused(400, "json_too_deep",
                          f"body: JSON nested deeper than {MAX_JSON_DEPTH} levels")


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in scope.get("headers", ()):
        key = name.decode("latin-1").lower()
        if key not in out:  # the first of repeated headers counts
            out[key] = value.decode("latin-1")
    return out


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands the buffered body over once, then waits on the real one."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def allowed_hosts_of(entries: Iterable[str]) -> tuple[str, ...]:
    return tuple(e.strip().lower() for e in entries if e and e.strip())

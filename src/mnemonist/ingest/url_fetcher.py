"""The guarded URL fetcher of document ingest.

Guards: http and https only; every address the host resolves to must be public (no loopback,
private, link-local, multicast, reserved or unspecified address) unless `allow_private` is
set, so a memory server never becomes a proxy into the user's network. The connection goes to
the address that was checked (the Host header and TLS name stay the host's), so a second DNS
answer cannot slip a private address in. Redirects are followed by hand, each hop checked the
same way, at most `max_redirects`. One deadline covers the whole fetch. The body must have an
accepted content type (text/*, application/json, application/xml) and at most `max_bytes`
bytes: the Content-Length header is checked first, then a running count while streaming.
HTML becomes plain text (script and style dropped, tags stripped, entities decoded,
whitespace collapsed) and its first <title> becomes the title.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from html.parser import HTMLParser

import httpx

from mnemonist import __version__

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_BYTES = 10 * 1024 * 1024
MAX_REDIRECTS = 5
REDIRECTS = (301, 302, 303, 307, 308)
ALLOW_HINT = "set memory.pipelineV2.documents.allowPrivateUrls: true to allow it"

Resolver = Callable[[str, int], list[str]]
Guard = Callable[[str], "str | None"]  # an address -> why it is refused, or None


class FetchError(Exception):
    """The fetch failed; `permanent` errors are not worth a retry."""

    def __init__(self, message: str, code: str, *, permanent: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.permanent = permanent


class UrlNotAllowed(FetchError):
    def __init__(self, message: str) -> None:
        super().__init__(message, "url_not_allowed", permanent=True)


@dataclass(frozen=True)
class FetchResult:
    url: str
    content: str
    content_type: str
    title: str | None
    byte_length: int
    status: int


@dataclass(frozen=True)
class Target:
    url: httpx.URL
    host: str
    port: int
    addresses: list[str]


# -- addresses ------------------------------------------------------------------------------


def resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (the system resolver), in its order, once each."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def refused_because(address: str) -> str | None:
    """Why a connection to this address is refused, or None when it is public."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    embedded: list[ipaddress.IPv4Address] = []
    if isinstance(ip, ipaddress.IPv6Address):
        for inner in (ip.ipv4_mapped, ip.sixtofour, *(ip.teredo or ())):
            if inner is not None:
                embedded.append(inner)
    for candidate in (*embedded, ip):
        for kind in ("loopback", "unspecified", "link_local", "multicast", "private",
                     "reserved"):
            if getattr(candidate, f"is_{kind}"):
                return kind.replace("_", "-")
        if not candidate.is_global:
            return "not globally routable"
    return None


def check_url(
    url: str, *, allow_private: bool = False, resolver: Resolver = resolve,
    guard: Guard = refused_because,
) -> Target:
    """Parse `url` and vet where it leads; raises FetchError / UrlNotAllowed."""
    try:
        parsed = httpx.URL(url.strip())
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise FetchError(f"not a valid URL: {exc}", "invalid_url") from exc
    if parsed.scheme not in ("http", "https"):
        raise FetchError(
            f"only http and https URLs can be fetched, not {parsed.scheme or 'a relative URL'}",
            "invalid_url",
        )
    try:
        host = parsed.raw_host.decode("ascii")
    except UnicodeDecodeError as exc:
        raise FetchError("the URL's host is not valid", "invalid_url") from exc
    if not host:
        raise FetchError("the URL has no host", "invalid_url")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        addresses = resolver(host, port)
    except (OSError, UnicodeError) as exc:
        raise FetchError(f"cannot resolve {host}: {exc}", "unresolvable", permanent=False) from exc
    if not addresses:
        raise FetchError(f"{host} resolves to no address", "unresolvable", permanent=False)
    if not allow_private:
        for address in addresses:
            reason = guard(address)
            if reason:
                shown = host if host == address else f"{host} ({address})"
                raise UrlNotAllowed(f"{shown} is a {reason} address; {ALLOW_HINT}")
    return Target(parsed, host, port, addresses)


# -- HTML to text -----------------------------------------------------------------------------

_SKIP = {"script", "style"}
_PARAGRAPH = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article", "blockquote",
              "pre", "table", "ul", "ol", "dl", "hr", "header", "footer", "main", "aside",
              "nav", "figure", "form", "details"}
_LINE = {"br", "li", "tr", "div", "dt", "dd", "figcaption", "summary", "td", "th", "caption"}


class _HtmlText(HTMLParser):
    """Text outside script, style and title; the first title's text apart."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.titles: list[list[str]] = []
        self.in_title = False
        self.skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self.skip += 1
        elif tag == "title":
            self.in_title = True
            self.titles.append([])
        elif tag in _PARAGRAPH:
            self.parts.append("\n\n")
        elif tag in _LINE:
            self.parts.append("\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _PARAGRAPH or tag in _LINE:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag == "title":
            self.in_title = False
        elif tag in _PARAGRAPH:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        if self.in_title:
            self.titles[-1].append(data)
        else:
            self.parts.append(data)

    @property
    def title(self) -> str | None:
        return " ".join(" ".join(self.titles[0]).split()) or None if self.titles else None


_SPACES = re.compile(r"[^\S\n]+")
_BLANKS = re.compile(r"\n{3,}")


def collapse(text: str) -> str:
    """Spaces collapsed within lines, lines trimmed, at most one blank line in a row."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip()


def html_to_text(html: str) -> tuple[str, str | None]:
    """(plain text, first <title>) of an HTML page."""
    parser = _HtmlText()
    parser.feed(html)
    parser.close()
    return collapse("".join(parser.parts)), parser.title


# -- content types and decoding ----------------------------------------------------------------


def accepted_type(header: str | None) -> str:
    """The bare media type if it is accepted, else raise."""
    mime = (header or "").split(";", 1)[0].strip().lower()
    if not mime:
        raise FetchError("the response has no Content-Type", "unsupported_content_type")
    if mime.startswith("text/") or mime in ("application/json", "application/xml"):
        return mime
    raise FetchError(
        f"content type {mime} is not accepted (text/*, application/json, application/xml)",
        "unsupported_content_type",
    )


_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)


def decode(body: bytes, header: str | None, mime: str) -> str:
    charset = None
    for param in (header or "").split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            charset = value.strip().strip("\"'")
    if charset is None and mime == "text/html":
        found = _META_CHARSET.search(body[:4096])
        charset = found.group(1).decode("ascii") if found else None
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


# -- fetching --------------------------------------------------------------------------------


def _host_header(target: Target) -> str:
    host = f"[{target.host}]" if ":" in target.host else target.host
    default = 443 if target.url.scheme == "https" else 80
    return host if target.port == default else f"{host}:{target.port}"


def fetch_url(
    url: str,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_bytes: int = DEFAULT_MAX_BYTES,
    allow_private: bool = False,
    max_redirects: int = MAX_REDIRECTS,
    resolver: Resolver = resolve,
    guard: Guard = refused_because,
) -> FetchResult:
    """GET `url` within the guards above; raises FetchError (or UrlNotAllowed)."""
    deadline = time.monotonic() + timeout_s
    current = url
    headers = {
        "User-Agent": f"mnemonist/{__version__} (document ingest)",
        "Accept": "text/html, text/*;q=0.9, application/json;q=0.8, application/xml;q=0.8",
        "Accept-Encoding": "identity",
    }
    with httpx.Client(trust_env=False, follow_redirects=False, verify=True) as client:
        for _hop in range(max_redirects + 1):
            target = check_url(current, allow_private=allow_private, resolver=resolver,
                               guard=guard)
            outcome = _get_once(client, target, headers, deadline, timeout_s, max_bytes)
            if isinstance(outcome, FetchResult):
                return outcome
            current = outcome
        raise FetchError(f"more than {max_redirects} redirects", "too_many_redirects")


def _get_once(
    client: httpx.Client,
    target: Target,
    headers: dict[str, str],
    deadline: float,
    timeout_s: float,
    max_bytes: int,
) -> FetchResult | str:
    """One request to the vetted address: the result, or the URL a redirect points to."""
    last_error: Exception | None = None
    for address in target.addresses:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        pinned = target.url.copy_with(host=address)
        extensions = {"sni_hostname": target.host} if target.url.scheme == "https" else {}
        try:
            with client.stream(
                "GET", pinned, headers={**headers, "Host": _host_header(target)},
                timeout=httpx.Timeout(remaining), extensions=extensions,
            ) as resp:
                return _read(resp, target, deadline, max_bytes)
        except httpx.ConnectError as exc:
            last_error = exc  # try the host's next address
        except httpx.TimeoutException as exc:
            raise FetchError(f"timed out after {timeout_s:g} s", "timeout",
                             permanent=False) from exc
        except httpx.HTTPError as exc:
            raise FetchError(f"fetch failed: {type(exc).__name__}: {exc}", "fetch_failed",
                             permanent=False) from exc
    if last_error is None:
        raise FetchError(f"timed out after {timeout_s:g} s", "timeout", permanent=False)
    raise FetchError(f"cannot connect to {target.host}: {last_error}", "connect_failed",
                     permanent=False) from last_error


def _read(
    resp: httpx.Response, target: Target, deadline: float, max_bytes: int
) -> FetchResult | str:
    if resp.status_code in REDIRECTS:
        location = resp.headers.get("location")
        if not location:
            raise FetchError(f"HTTP {resp.status_code} without a Location", "http_error")
        return str(target.url.join(location))
    if resp.status_code >= 400:
        transient = resp.status_code >= 500 or resp.status_code in (408, 429)
        raise FetchError(f"HTTP {resp.status_code} from {target.host}", "http_error",
                         permanent=not transient)
    header = resp.headers.get("content-type")
    mime = accepted_type(header)
    declared = resp.headers.get("content-length")
    if declared and declared.strip().isdigit() and int(declared) > max_bytes:
        raise FetchError(f"Content-Length {int(declared)} exceeds the limit of {max_bytes}"
                         " bytes", "too_large")
    body = bytearray()
    for piece in resp.iter_bytes():
        body.extend(piece)
        if len(body) > max_bytes:
            raise FetchError(f"the body exceeds the limit of {max_bytes} bytes", "too_large")
        if time.monotonic() > deadline:
            raise httpx.ReadTimeout("deadline passed while reading the body")
    text = decode(bytes(body), header, mime)
    title = None
    if mime == "text/html":
        text, title = html_to_text(text)
    return FetchResult(url=str(target.url), content=text, content_type=mime, title=title,
                       byte_length=len(body), status=resp.status_code)

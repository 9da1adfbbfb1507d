"""The URL fetcher against a real HTTP server on 127.0.0.1: HTML to text, content types, the
size and time guards, redirects, and the private-address rule (nothing outside loopback is
ever contacted: refused addresses are refused before any connection)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from doc_server import DocServer, Route
from mnemonist.ingest.url_fetcher import (
    FetchError,
    UrlNotAllowed,
    check_url,
    fetch_url,
    html_to_text,
    refused_because,
)


@pytest.fixture(scope="module")
def srv() -> Iterator[DocServer]:
    with DocServer() as server:
        yield server


def fetch(url: str, **kw):
    kw.setdefault("allow_private", True)  # the test server itself is on loopback
    return fetch_url(url, **kw)


def only_loopback_server(address: str) -> str | None:
    """A guard that treats 127.0.0.1 (the test server) as public, and the rest as usual."""
    return None if address == "127.0.0.1" else refused_because(address)


def test_html_becomes_text_with_title(srv):
    result = fetch(srv.url("/page.html"))
    assert result.content_type == "text/html"
    assert result.title == "The Tide & Moon Almanac"
    text = result.content
    assert "script text must vanish" not in text and "also gone" not in text
    assert "color: red" not in text and "<" not in text.replace("<high tide>", "")
    assert "Tides explained" in text  # &nbsp; decoded, then collapsed
    assert "The moon pulls the ocean — twice a day the water rises <high tide>." in text
    assert "Café owners in Brest watch the tides closely & plan deliveries." in text
    assert "Spring tides\nNeap tides" in text
    assert "A second title" not in (result.title or "")
    assert "  " not in text and "\n\n\n" not in text
    assert result.byte_length == len(srv.routes["/page.html"].body)


def test_json_xml_and_charset(srv):
    data = fetch(srv.url("/data.json"))
    assert data.content_type == "application/json" and data.title is None
    assert '"the harbour opens at six"' in data.content
    assert "low tide at noon" in fetch(srv.url("/notes.xml")).content
    assert fetch(srv.url("/latin1.txt")).content == "Crème brûlée at the quay"


@pytest.mark.parametrize("path", ["/image.png", "/no-type"])
def test_other_content_types_are_rejected(srv, path):
    with pytest.raises(FetchError) as err:
        fetch(srv.url(path))
    assert err.value.code == "unsupported_content_type" and err.value.permanent


def test_declared_oversize_is_refused_before_reading(srv):
    with pytest.raises(FetchError) as err:
        fetch(srv.url("/big-declared"), max_bytes=10_000)
    assert err.value.code == "too_large" and "Content-Length 50000" in err.value.message


def test_undeclared_oversize_is_cut_while_streaming(srv):
    with pytest.raises(FetchError) as err:
        fetch(srv.url("/big-undeclared"), max_bytes=10_000)
    assert err.value.code == "too_large" and "body exceeds" in err.value.message
    assert len(fetch(srv.url("/big-undeclared"), max_bytes=60_000).content) == 50_000


def test_slow_response_times_out(srv):
    started = time.monotonic()
    with pytest.raises(FetchError) as err:
        fetch(srv.url("/slow"), timeout_s=0.5)
    assert err.value.code == "timeout" and not err.value.permanent
    # cut off long before the server's 30 s delay (a wide margin for a loaded machine)
    assert time.monotonic() - started < 15


def test_the_deadline_covers_a_trickling_body(srv):
    started = time.monotonic()
    with pytest.raises(FetchError) as err:
        fetch(srv.url("/trickle"), timeout_s=1.0)  # every byte is in time, the whole is not
    assert err.value.code == "timeout"
    assert time.monotonic() - started < 10  # the whole body would take 20 s


def test_http_errors(srv):
    with pytest.raises(FetchError) as err:
        fetch(srv.url("/missing"))
    assert err.value.code == "http_error" and err.value.permanent
    with pytest.raises(FetchError) as err:
        fetch(srv.url("/broken"))
    assert err.value.code == "http_error" and not err.value.permanent  # 5xx: worth a retry


def test_redirects_are_followed_and_bounded(srv):
    srv.redirect("/moved", "/data.json", status=301)  # relative Location
    result = fetch(srv.url("/moved"))
    assert result.url.endswith("/data.json") and "harbour" in result.content
    for i in range(7):
        srv.redirect(f"/hop{i}", f"/hop{i + 1}")
    srv.routes["/hop7"] = Route(b"end of the chain", "text/plain")
    assert fetch(srv.url("/hop2")).content == "end of the chain"  # 5 redirects: allowed
    with pytest.raises(FetchError) as err:
        fetch(srv.url("/hop0"))  # 7 redirects
    assert err.value.code == "too_many_redirects"


@pytest.mark.parametrize("target", [
    "http://10.0.0.1/admin", "http://169.254.169.254/latest/meta-data/", "http://[::1]:9/",
    "http://localhost:{port}/data.json",
])
def test_each_redirect_hop_is_checked(srv, target):
    location = target.format(port=srv.port)
    url = srv.redirect("/to-private", location)
    before, first_hops = srv.hits["/data.json"], srv.hits["/to-private"]
    vetted: list[str] = []

    def first_hop_public(address: str) -> str | None:
        """The server counts as public for the first hop only; every later hop (localhost
        included, which is the same 127.0.0.1) is vetted as usual."""
        vetted.append(address)
        return None if len(vetted) == 1 and address == "127.0.0.1" else refused_because(address)

    with pytest.raises(UrlNotAllowed):
        fetch_url(url, allow_private=False, guard=first_hop_public)
    assert srv.hits["/to-private"] == first_hops + 1  # the first hop reached the server
    assert srv.hits["/data.json"] == before  # the redirect target never did
    assert len(vetted) >= 2


def test_first_hop_allowed_by_the_guard_reaches_the_server(srv):
    result = fetch_url(srv.url("/data.json"), allow_private=False, guard=only_loopback_server)
    assert "harbour" in result.content


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:{port}/data.json", "http://10.0.0.1/", "http://169.254.169.254/",
    "http://[::1]:{port}/data.json", "http://localhost:{port}/data.json",
    "http://2130706433:{port}/data.json", "http://[::ffff:127.0.0.1]:{port}/data.json",
    "http://0.0.0.0:{port}/data.json", "https://192.168.1.1/", "http://[fe80::1]/",
    "http://224.0.0.1/", "http://100.64.0.1/",
])
def test_private_addresses_are_refused_without_connecting(srv, url):
    url = url.format(port=srv.port)
    hits = sum(srv.hits.values())
    with pytest.raises(UrlNotAllowed) as err:
        fetch_url(url, allow_private=False, timeout_s=1)
    assert "allowPrivateUrls" in err.value.message and err.value.code == "url_not_allowed"
    assert sum(srv.hits.values()) == hits  # refused before any request


def test_a_hostname_is_checked_by_what_it_resolves_to():
    def resolver(host: str, port: int) -> list[str]:
        return {"docs.example": ["93.184.216.34"], "sneaky.example": ["93.184.216.34",
                                                                       "10.1.2.3"]}[host]

    target = check_url("https://docs.example/guide", resolver=resolver)
    assert target.addresses == ["93.184.216.34"] and target.port == 443
    with pytest.raises(UrlNotAllowed) as err:
        check_url("https://sneaky.example/", resolver=resolver)  # one private answer is enough
    assert "10.1.2.3" in err.value.message


@pytest.mark.parametrize("url", ["ftp://example.com/x", "file:///etc/passwd",
                                 "javascript:alert(1)", "/relative/path", "http:///nohost"])
def test_only_http_urls_with_a_host(url):
    with pytest.raises(FetchError) as err:
        check_url(url, allow_private=True)
    assert err.value.code == "invalid_url"


def test_allowed_when_configured(srv):
    assert check_url(srv.url("/data.json"), allow_private=True).addresses == ["127.0.0.1"]


def test_html_to_text_edge_cases():
    text, title = html_to_text("<p>a</p><!-- hidden comment --><STYLE>x{}</STYLE><p>b &amp c</p>")
    assert text == "a\n\nb & c" and title is None
    text, title = html_to_text("<title>Only &lt;title&gt;")
    assert title == "Only <title>" and text == ""

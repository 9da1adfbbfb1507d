"""The dashboard over plain HTTP on a real daemon: the same boundary as the API (token by
cookie after /login, pages redirect to it, cross-origin writes refused), memory text escaped,
bad filters named, the graph's communities, degraded states in words, and /docs that needs
no network."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from conftest import LiveDaemon, run_daemon
from dashboard_data import HOSTILE, PROJECT, Seeded, seed
from mnemonist.service.graph_view import communities_of

pytestmark = pytest.mark.both_stores

TOKEN = "dashboard-token-0123456789"


@pytest.fixture(scope="module")
def site(daemon_store: str, tmp_path_factory) -> Iterator[tuple[LiveDaemon, Seeded]]:
    root = tmp_path_factory.mktemp("dash-http")
    with run_daemon(root / "home") as live:
        yield live, seed(live, str(root / "shop-api"))


PAGES = ["/", "/?q=PostgreSQL", "/ui/sessions", "/ui/graph", "/ui/health"]


@pytest.mark.parametrize("path", PAGES)
def test_every_page_is_html_with_a_strict_content_security_policy(site, path):
    live, _ = site
    resp = live.http.get(path)
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/html")
    csp = resp.headers["content-security-policy"]
    script_src = csp.split("script-src")[1].split(";")[0]
    assert script_src.strip() == "'self'"
    assert "<script>" not in resp.text  # no inline script: data travels in data-* attributes


def test_memory_text_is_escaped_everywhere_it_is_shown(site):
    live, data = site
    escaped = "&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;"
    for path in (f"/ui/memory/{data.ids['hostile']}", "/?project=web",
                 "/ui/memories/results?q=Mallory+pasted+markup"):
        text = live.http.get(path).text
        assert escaped in text, path
        assert "<script>document.title" not in text and "<img src=x" not in text, path
    assert HOSTILE.startswith("<script>")


def test_bad_filters_are_a_400_naming_the_field_and_change_nothing(site):
    live, _ = site
    before = live.service.health.status()["memories"]
    for params, field in (({"since": "yesterday-ish"}, "since"), ({"type": "gossip"}, "type")):
        resp = live.http.get("/ui/memories/results", params=params)
        assert resp.status_code == 400
        assert field in resp.text
        page = live.http.get("/", params=params)
        assert page.status_code == 400 and 'role="alert"' in page.text
    assert live.service.health.status()["memories"] == before


def ids_shown(html: str) -> set[str]:
    return set(re.findall(r'<li class="memory" data-id="([^"]+)"', html))


def test_scope_shows_those_projects_and_memories_of_no_project(site):
    live, data = site
    listed = ids_shown(live.http.get("/ui/memories/results", params={"scope": "web"}).text)
    assert listed == {data.ids["hostile"], data.ids["global"]}
    both = ids_shown(live.http.get("/ui/memories/results",
                                   params={"scope": f"web, {PROJECT}"}).text)
    assert {data.ids["hostile"], data.ids["global"], data.ids["fact0"]} <= both
    recalled = ids_shown(live.http.get("/ui/memories/results",
                                       params={"q": "tabs or spaces", "scope": "web"}).text)
    assert data.ids["global"] in recalled and data.ids["fact0"] not in recalled


def test_time_filters_keep_what_falls_inside(site):
    live, data = site
    future = ids_shown(live.http.get("/ui/memories/results", params={"since": "2999-01-01"}).text)
    assert future == set()
    past = ids_shown(live.http.get("/ui/memories/results", params={"until": "2000-01-01"}).text)
    assert past == set()
    now = ids_shown(live.http.get("/ui/memories/results", params={"since": "2000-01-01"}).text)
    assert data.ids["fact0"] in now


def test_the_list_pages_through_every_memory(tmp_path):
    with run_daemon(tmp_path / "home") as live:
        items = [{"content": f"Inventory note number {n} for the warehouse"} for n in range(120)]
        resp = live.http.post("/api/memory/import", json={"items": items})
        assert resp.status_code in (200, 201), resp.text
        seen: list[str] = []
        path = "/"
        for _ in range(5):
            html = live.http.get(path).text
            seen += re.findall(r'<li class="memory" data-id="([^"]+)"', html)
            older = re.search(r'<a class="page" href="([^"]+)">older', html)
            if older is None:
                break
            path = older.group(1).replace("&amp;", "&")
        assert len(seen) == len(set(seen)) == 120
        last = live.http.get("/?offset=100").text
        assert "101–120 of 120" in last and "← newer" in last and "older →" not in last
        assert live.http.get("/?offset=-1").status_code == 400


def test_an_unknown_memory_or_session_is_a_404_page(site):
    live, _ = site
    for path in ("/ui/memory/00000000-0000-0000-0000-000000000000", "/ui/sessions/nope"):
        resp = live.http.get(path)
        assert resp.status_code == 404 and "text/html" in resp.headers["content-type"]
        assert "no " in resp.text


def test_recall_results_show_score_and_where_each_came_from(site):
    live, data = site
    text = live.http.get("/ui/memories/results", params={"q": "staging database version"}).text
    assert re.search(r'class="score"[^>]*>\d\.\d{3}<', text)
    assert re.search(r'class="source">(hybrid|keyword|vector)<', text)
    # the superseded version is not recalled by default, its successor is
    assert data.ids["new"] in text and data.ids["old"] not in text


def test_the_graph_json_has_communities_coloured_and_edges_between_shown_nodes(site):
    live, _ = site
    out = live.http.get("/ui/graph.json", params={"limit": 50}).json()
    names = {n["name"]: n for n in out["nodes"]}
    assert {"Alice Jones", "PostgreSQL", "Dave Brown", "Stripe"} <= set(names)
    assert names["Alice Jones"]["community"] == names["PostgreSQL"]["community"]
    assert names["Dave Brown"]["community"] == names["Stripe"]["community"]
    assert names["Dave Brown"]["community"] != names["PostgreSQL"]["community"]
    assert names["Dave Brown"]["color"] != names["PostgreSQL"]["color"]
    ids = {n["id"] for n in out["nodes"]}
    assert out["edges"] and all(e["source"] in ids and e["target"] in ids for e in out["edges"])
    assert sum(c["size"] for c in out["communities"]) == len(out["nodes"])
    for bad in (0, 501, "many"):
        assert live.http.get("/ui/graph.json", params={"limit": bad}).status_code in (400, 422)


def test_the_graph_counts_only_live_memories(tmp_path):
    with run_daemon(tmp_path / "home") as live:
        gone = live.remember("Zebulon Quist audits the Fortran payroll")["id"]
        live.remember("Alice Jones runs PostgreSQL")
        before = {n["name"] for n in live.service.graph.graph_overview(50)["nodes"]}
        assert "Zebulon Quist" in before
        resp = live.http.request("DELETE", f"/api/memory/{gone}", json={"reason": "test"})
        assert resp.status_code == 200, resp.text
        after = {n["name"] for n in live.service.graph.graph_overview(50)["nodes"]}
        assert "Zebulon Quist" not in after and "Alice Jones" in after


def test_louvain_communities_are_stable_and_split_disconnected_groups():
    nodes = ["a", "b", "c", "x", "y", "z", "lone"]
    edges = [{"source": s, "target": t, "weight": 2.0}
             for s, t in (("a", "b"), ("b", "c"), ("a", "c"), ("x", "y"), ("y", "z"), ("x", "z"))]
    edges.append({"source": "c", "target": "x", "weight": 0.1})
    first = communities_of(nodes, edges)
    assert first == communities_of(nodes, edges)  # seeded: the same graph, the same colours
    assert sorted(map(sorted, first)) == [["a", "b", "c"], ["lone"], ["x", "y", "z"]]
    assert first[-1] == ["lone"]  # largest first


def test_docs_need_no_network_and_their_assets_are_served(site):
    live, _ = site
    resp = live.http.get("/docs")
    assert resp.status_code == 200
    refs = re.findall(r'(?:src|href)=["\']([^"\']+)["\']', resp.text)
    refs += re.findall(r"url: '([^']+)'", resp.text)
    assert len(refs) >= 3
    for ref in refs:
        parts = urlsplit(ref)
        assert not parts.scheme and not parts.netloc, f"/docs loads {ref} from elsewhere"
        got = live.http.get(ref)
        assert got.status_code == 200 and got.content, ref
    assert "cdn" not in resp.text.lower()
    assert live.http.get("/redoc").status_code == 404  # ReDoc would need a CDN: not served
    assert live.http.get("/openapi.json").json()["info"]["title"] == "mnemonist"


def test_vendored_files_are_recorded_with_their_licences(site):
    live, _ = site
    for path in ("/ui/static/vendor/vis-network.min.js",
                 "/ui/static/vendor/swagger-ui/swagger-ui-bundle.js",
                 "/ui/static/vendor/LICENSE-vis-network-MIT.txt",
                 "/ui/static/vendor/swagger-ui/LICENSE.txt", "/ui/static/VENDORED.md"):
        assert live.http.get(path).status_code == 200, path
    table = live.http.get("/ui/static/VENDORED.md").text
    assert "vis-network | 10.1.5" in table and "swagger-ui-dist | 5.35.0" in table


@pytest.fixture(scope="module")
def guarded(daemon_store: str, tmp_path_factory) -> Iterator[LiveDaemon]:
    with run_daemon(tmp_path_factory.mktemp("dash-token"), {"server": {"token": TOKEN}}) as d:
        d.http.headers["authorization"] = f"Bearer {TOKEN}"
        d.remember("Guarded pages need the token", project=PROJECT)
        yield d


def anonymous(live: LiveDaemon) -> httpx.Client:
    """A client without the token that asks for HTML, as a browser navigating does."""
    return httpx.Client(base_url=live.url, timeout=60, follow_redirects=False,
                        headers={"accept": "text/html,application/xhtml+xml,*/*;q=0.8"})


def test_with_a_token_pages_send_a_browser_to_login_and_the_api_stays_401(guarded):
    with anonymous(guarded) as http:
        for path in ("/", "/ui/memory/x", "/ui/sessions", "/ui/graph", "/ui/health"):
            resp = http.get(path)
            assert resp.status_code == 303 and resp.headers["location"] == "/login", path
        for path in ("/api/memories", "/docs", "/openapi.json"):
            assert http.get(path).status_code == 401, path
        for path in ("/ui/graph.json", "/ui/memories/results?q=x"):  # what scripts fetch
            assert http.get(path, headers={"accept": "*/*"}).status_code == 401, path
        assert http.get("/login").status_code == 200
        assert http.get("/ui/static/dashboard.css").status_code == 200  # no data in them
        assert http.get("/health").status_code == 200


def test_login_sets_an_httponly_strict_cookie_that_opens_pages_and_the_api(guarded):
    with anonymous(guarded) as http:
        wrong = http.post("/login", json={"token": "wrong-token-0123456789"})
        assert wrong.status_code == 401 and "mnemonist_token" not in wrong.headers.get(
            "set-cookie", "")
        assert http.post("/login", json={}).status_code == 400
        ok = http.post("/login", json={"token": TOKEN})
        assert ok.status_code == 204
        cookie = ok.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
        assert http.get("/").status_code == 200
        assert "Guarded pages need the token" in http.get("/").text
        assert http.get("/api/memories").status_code == 200
        # a page on another origin cannot use the cookie to change memory
        evil = http.post("/api/memory/remember", json={"content": "from evil.example"},
                         headers={"origin": "http://evil.example"})
        assert evil.status_code == 403
        assert http.post("/ui/logout").status_code == 204


def test_a_token_in_the_login_link_is_swapped_for_the_cookie(guarded):
    with anonymous(guarded) as http:
        resp = http.get("/login", params={"token": TOKEN})
        assert resp.status_code == 303 and resp.headers["location"] == "/"
        assert "httponly" in resp.headers["set-cookie"].lower()
        assert http.get("/").status_code == 200
    with anonymous(guarded) as http:
        assert http.get("/login", params={"token": "nope-nope-nope-nope"}).status_code == 401
        assert http.get("/").status_code == 303


def test_without_a_token_login_just_goes_to_the_dashboard(site):
    live, _ = site
    with anonymous(live) as http:
        assert http.get("/login").status_code == 303
        assert http.get("/").status_code == 200


def test_degraded_states_are_said_in_words(tmp_path):
    with run_daemon(tmp_path / "home", {"embedding": {"provider": "none"}}) as live:
        live.remember("Keyword search still finds this")
        text = live.http.get("/ui/health").text
        assert "Degraded" in text and "recall is keyword-only" in text


def test_the_owners_console_shows_and_acts_on_private_memories_naming_their_owner(tmp_path):
    """The dashboard reads every scope explicitly; its actions send the same explicit scope
    (`agents=*&users=*`, as dashboard.js does), and the page says whose the memory is."""
    with run_daemon(tmp_path / "home") as live:
        made = live.http.post("/api/memory/remember", json={
            "content": "The ops bot rotates the staging certificates every Sunday",
            "agent_id": "ops-bot"}).json()
        assert live.http.get(f"/api/memory/{made['id']}").status_code == 404  # API: explicit
        listing = live.http.get("/ui/memories/results", params={"q": ""}).text
        assert "rotates the staging certificates" in listing
        assert "private to agent ops-bot" in listing
        page = live.http.get(f"/ui/memory/{made['id']}").text
        assert "agent ops-bot" in page and "rotates the staging certificates" in page
        changed = live.http.post("/api/memory/modify?agents=*&users=*", json={
            "patches": [{"id": made["id"], "content": "The ops bot rotates them on Mondays"}],
            "reason": "moved", "changed_by": "dashboard"}).json()
        assert changed["results"][0]["status"] == "updated"
        assert "rotates them on Mondays" in live.http.get(f"/ui/memory/{made['id']}").text


def test_the_graph_is_one_node_per_name_and_project_and_offers_the_projects(tmp_path):
    """An agent's private copy of an entity is the same node as the shared one in its
    project (mentions added); another project's entity of that name is its own node."""
    with run_daemon(tmp_path / "home") as live:
        live.remember("The checkout API writes orders to PostgreSQL.", project="shop")
        live.remember("The checkout API is slow on Mondays.", project="shop", agent_id="bot")
        live.remember("The checkout API depends on Redis.", project="billing")
        out = live.service.graph.graph_overview(50)
        checkout = [n for n in out["nodes"] if n["name"] == "checkout API"]
        assert sorted((n["project"], n["mentions"]) for n in checkout) == [
            ("billing", 1), ("shop", 2)]
        rows = live.daemon.db.reader().execute(
            "SELECT COUNT(*) FROM entities WHERE canonical_name = 'checkout api'").fetchone()
        assert rows[0] == 3  # three rows stored: shared shop, bot's shop, billing
        ids = {n["id"] for n in out["nodes"]}
        assert all(e["source"] in ids and e["target"] in ids for e in out["edges"])
        assert {"shop", "billing"} <= set(out["projects"])
        page = live.http.get("/ui/graph", params={"project": "shop"})
        assert page.status_code == 200 and '<option value="billing">' in page.text
        shop = live.http.get("/ui/graph.json", params={"project": "shop"}).json()
        assert {n["project"] for n in shop["nodes"]} == {"shop"}

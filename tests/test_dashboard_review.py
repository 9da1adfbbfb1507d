"""The dashboard's review page on a real daemon: the contradictions consolidation could not
settle and the sweep's near-duplicates side by side, what consolidation settled on its own
with an undo, each action through the page's forms (as its script sends them, and clicked in
a real Chromium), writes from another origin, a plain form post or a browser without the
login refused, and memory text that is markup shown as text."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import escape
from typing import Any

import httpx
import pytest
from selenium.webdriver.common.by import By

from browser import chrome, screenshot, visible, wait
from conftest import LiveDaemon, run_daemon

pytestmark = pytest.mark.both_stores

#: the engine runs when a test asks (POST /api/consolidation/run), never on its own timer
CONFIG: dict[str, Any] = {"memory": {"consolidation": {"enabled": False}}}
TOKEN = "review-token-0123456789"
MARKUP = '<img src=x onerror="document.title=1">'


def pairs_about(name: str) -> dict[str, str]:
    """Two contradictions and a replaced pair about `name` (each test that changes state
    has its own, in its own project: the engine compares memories of one project only)."""
    return {
        # contradictions: the same thing, two values, nothing saying which is current
        "plan_a": f"The {name} plan costs $49 per month.",
        "plan_b": f"Sales quotes $12 a month for the {name} plan.",
        "addon_a": f"The {name} add-on costs $5 per seat.",
        "addon_b": f"Support quotes $9 a seat for the {name} add-on.",
        # replaced: the same sentence with a newer value (and markup in it)
        "old": f"The {MARKUP} {name} gateway listens on port 8080.",
        "new": f"The {MARKUP} {name} gateway listens on port 9090.",
    }


TEXTS = {
    **pairs_about("Team"),
    # restated: the same fact said again
    "ana_a": "Ana relocated to Porto over the summer.",
    "ana_b": "These days Ana is settled in Porto.",
    # near-duplicates (the sweep's)
    "vault_a": "The zebrafruit vault code is kept in lockerseven",
    "vault_b": "The zebrafruit vault code is stored in lockerseven",
}
WHEN = {"old": "2025-01-10", "new": "2025-03-10", "ana_a": "2025-01-10", "ana_b": "2025-03-10"}
PROJECTS = {"vault_a": "vault", "vault_b": "vault"}
#: what the page's script sends with every action (dashboard.js: the owner's explicit scope)
SCOPE = "?agents=*&users=*"


def seed(live: LiveDaemon, texts: dict[str, str], project: str | None = None
         ) -> dict[str, str]:
    """Remember `texts`, let the sweep and the engine run: memory ids by role."""
    ids = {}
    for role, text in texts.items():
        fields = {k: v for k, v in (("occurred_at", WHEN.get(role)),
                                    ("project", PROJECTS.get(role, project))) if v}
        ids[role] = live.remember(text, **fields)["id"]
    live.flush()
    assert live.http.post("/api/repair/dedup-sweep").status_code == 200
    assert live.http.post("/api/consolidation/run").status_code == 200
    return ids


@pytest.fixture(scope="module")
def site(daemon_store: str, tmp_path_factory) -> Iterator[tuple[LiveDaemon, dict[str, str]]]:
    with run_daemon(tmp_path_factory.mktemp("review") / "home", CONFIG) as live:
        yield live, seed(live, TEXTS)


def pair_id(live: LiveDaemon, first: str, second: str, status: str = "open") -> str | None:
    pairs = live.http.get("/api/repair/duplicates", params={
        "status": status, "limit": 500, "agents": "*", "users": "*"}).json()["duplicates"]
    return next((p["id"] for p in pairs if (p["a"]["id"], p["b"]["id"]) == (first, second)),
                None)


def section(html: str, name: str) -> str:
    found = re.search(rf'<section id="{name}">(.*?)</section>', html, re.S)
    assert found, f"no section {name}"
    return found.group(1)


def card(html: str, text: str) -> str | None:
    """The pair (an <article>) that shows `text`, as the page escapes it."""
    return next((a for a in re.findall(r"<article .*?</article>", html, re.S)
                 if escape(text) in a), None)


def form_target(card_html: str, css: str) -> str:
    found = re.search(rf'<form class="action {css}" data-id="([^"]+)"', card_html)
    assert found, card_html
    return found.group(1)


def same_origin(live: LiveDaemon) -> dict[str, str]:
    """What a browser adds to the page's own fetch."""
    return {"origin": live.url, "sec-fetch-site": "same-origin"}


def submit(live: LiveDaemon, path: str, body: dict[str, Any],
           client: httpx.Client | None = None, **headers: str) -> httpx.Response:
    """What review.js sends: JSON to the API, with the owner's scope."""
    return (client or live.http).post(path + SCOPE, json=body,
                                      headers={**same_origin(live), **headers})


def test_the_page_lists_contradictions_near_duplicates_and_what_was_settled(site):
    live, ids = site
    resp = live.http.get("/ui/review")
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/html")
    assert resp.headers["content-security-policy"].split("script-src")[1].split(";")[0].strip(
        ) == "'self'"
    html = resp.text
    assert '<a href="/ui/review"' in live.http.get("/").text  # in the navigation

    contradictions = section(html, "contradictions")
    plan = card(contradictions, TEXTS["plan_a"])
    assert plan is not None and escape(TEXTS["plan_b"]) in plan  # side by side
    assert plan.index('class="side side-a"') < plan.index('class="side side-b"')
    assert 'data-kind="contradiction"' in plan and "different numbers (49 / 12)" in plan
    assert re.search(r"similarity 0\.\d\d", plan)
    assert form_target(plan, "review-decide") == pair_id(live, ids["plan_a"], ids["plan_b"])
    for action in ("keep_a", "keep_b", "dismiss"):
        assert f'data-action="{action}"' in plan
    assert card(contradictions, TEXTS["addon_a"]) is not None
    assert card(contradictions, TEXTS["vault_a"]) is None

    duplicates = section(html, "duplicates")
    vault = card(duplicates, TEXTS["vault_a"])
    assert vault is not None and TEXTS["vault_b"] in vault
    assert "near-duplicate" in vault and "review-decide" in vault

    settled = section(html, "settled")
    gateway = card(settled, TEXTS["old"])
    assert gateway is not None and escape(TEXTS["new"]) in gateway
    assert 'data-kind="replaced"' in gateway and "8080 / 9090" in gateway
    assert form_target(gateway, "review-undo") == ids["old"]  # the superseded side
    assert re.search(r'side-a" data-id="[^"]+"><h3>A <span class="flag superseded">', gateway)
    ana = card(settled, TEXTS["ana_a"])
    assert ana is not None and 'data-kind="restated"' in ana
    assert form_target(ana, "review-undo") == ids["ana_a"]
    assert "review-decide" not in settled
    assert '<script src="/ui/static/review.js" defer></script>' in html
    assert live.http.get("/ui/static/review.js").status_code == 200


def test_memory_text_that_is_markup_is_escaped(site):
    live, _ = site
    html = live.http.get("/ui/review").text
    assert "&lt;img src=x onerror=&quot;document.title=1&quot;&gt;" in html
    assert "<img" not in html
    assert re.findall(r"<script[^>]*>", html) == [
        '<script src="/ui/static/dashboard.js" defer>',
        '<script src="/ui/static/review.js" defer>']


def test_dismiss_through_the_page_form(site):
    live, _ = site
    texts = pairs_about("Basic")
    ids = seed(live, texts, project="dismiss")
    plan = card(section(live.http.get("/ui/review").text, "contradictions"), texts["plan_a"])
    assert plan is not None
    target = form_target(plan, "review-decide")
    resp = submit(live, f"/api/repair/duplicates/{target}/dismiss",
                  {"reason": "list price and a sales discount"})
    assert resp.status_code == 200 and resp.json()["status"] == "dismissed", resp.text
    assert card(section(live.http.get("/ui/review").text, "contradictions"),
                texts["plan_a"]) is None
    assert pair_id(live, ids["plan_a"], ids["plan_b"], "dismissed") == target
    for role in ("plan_a", "plan_b"):  # both stay current
        assert live.http.get(f"/api/memory/{ids[role]}").json()["superseded_by"] is None
    live.http.post("/api/consolidation/run")  # a dismissed pair is never listed again
    assert pair_id(live, ids["plan_a"], ids["plan_b"]) is None


def test_keep_one_side_through_the_page_form(site):
    live, _ = site
    texts = pairs_about("Growth")
    ids = seed(live, texts, project="keep")
    addon = card(section(live.http.get("/ui/review").text, "contradictions"), texts["addon_a"])
    assert addon is not None
    target = form_target(addon, "review-decide")
    resp = submit(live, f"/api/repair/duplicates/{target}/resolve",
                  {"keep": "b", "reason": "support has the current price",
                   "changed_by": "dashboard"})
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"id": target, "status": "resolved", "kept": ids["addon_b"],
                           "superseded": ids["addon_a"]}
    dropped = live.http.get(f"/api/memory/{ids['addon_a']}").json()
    assert dropped["superseded_by"] == ids["addon_b"]
    event = live.http.get(f"/api/memory/{ids['addon_a']}/history").json()["events"][-1]
    assert (event["event"], event["changed_by"], event["reason"]) == (
        "superseded", "dashboard", "support has the current price")
    assert card(section(live.http.get("/ui/review").text, "contradictions"),
                texts["addon_a"]) is None


def test_undo_what_consolidation_settled_through_the_page_form(site):
    live, _ = site
    texts = pairs_about("Edge")
    ids = seed(live, texts, project="undo")
    gateway = card(section(live.http.get("/ui/review").text, "settled"), texts["old"])
    assert gateway is not None
    assert live.http.get(f"/api/memory/{ids['old']}").json()["superseded_by"] == ids["new"]
    resp = submit(live, f"/api/memory/{form_target(gateway, 'review-undo')}/restore",
                  {"reason": "the old port still answers", "changed_by": "dashboard"})
    assert resp.status_code == 200 and resp.json()["status"] == "restored", resp.text
    assert live.http.get(f"/api/memory/{ids['old']}").json()["superseded_by"] is None
    assert card(section(live.http.get("/ui/review").text, "settled"), texts["old"]) is None
    assert pair_id(live, ids["old"], ids["new"], "dismissed") is not None
    live.http.post("/api/consolidation/run")  # never settled again
    assert live.http.get(f"/api/memory/{ids['old']}").json()["superseded_by"] is None


def test_writes_from_another_origin_or_a_plain_form_are_refused(site):
    live, ids = site
    vault = card(section(live.http.get("/ui/review").text, "duplicates"), TEXTS["vault_a"])
    assert vault is not None
    path = f"/api/repair/duplicates/{form_target(vault, 'review-decide')}/dismiss"
    evil = submit(live, path, {}, origin="http://evil.example")
    assert evil.status_code == 403 and evil.json()["error"] == "forbidden_origin"
    framed = submit(live, path, {}, **{"sec-fetch-site": "cross-site"})
    assert framed.status_code == 403 and framed.json()["error"] == "forbidden_origin"
    # what an HTML form on any page can send (no JSON without the page's script)
    plain = live.http.post(path + SCOPE, content=b"reason=x", headers={
        **same_origin(live), "content-type": "application/x-www-form-urlencoded"})
    assert plain.status_code == 415 and plain.json()["error"] == "unsupported_media_type"
    assert pair_id(live, ids["vault_a"], ids["vault_b"]) == form_target(
        vault, "review-decide")  # still open: nothing changed


def test_with_a_token_the_forms_need_the_login(daemon_store: str, tmp_path):
    with run_daemon(tmp_path / "home", {**CONFIG, "server": {"token": TOKEN}}) as live:
        live.http.headers["authorization"] = f"Bearer {TOKEN}"
        ids = seed(live, {k: TEXTS[k] for k in ("plan_a", "plan_b")})
        target = pair_id(live, ids["plan_a"], ids["plan_b"])
        assert target is not None
        path = f"/api/repair/duplicates/{target}/dismiss"
        with httpx.Client(base_url=live.url, timeout=60, follow_redirects=False) as browser:
            page = browser.get("/ui/review", headers={"accept": "text/html"})
            assert page.status_code == 303 and page.headers["location"] == "/login"
            refused = submit(live, path, {}, client=browser)
            assert refused.status_code == 401 and refused.json()["error"] == "unauthorized"
            assert browser.post("/login", json={"token": TOKEN}).status_code == 204
            page = browser.get("/ui/review", headers={"accept": "text/html"})
            assert page.status_code == 200 and form_target(
                card(page.text, TEXTS["plan_a"]) or "", "review-decide") == target
            evil = submit(live, path, {}, client=browser, origin="http://evil.example")
            assert evil.status_code == 403  # the cookie opens nothing for another origin
            assert pair_id(live, ids["plan_a"], ids["plan_b"]) == target
            done = submit(live, path, {"reason": "fine as they are"}, client=browser)
            assert done.status_code == 200 and done.json()["status"] == "dismissed"
            assert pair_id(live, ids["plan_a"], ids["plan_b"]) is None


@pytest.fixture(scope="module")
def browser():
    driver = chrome()
    try:
        yield driver
    finally:
        driver.quit()


def _gone(driver, pair: str) -> bool:
    return (driver.execute_script("return document.readyState") == "complete"
            and not driver.find_elements(By.CSS_SELECTOR, f'article[data-id="{pair}"]'))


@pytest.mark.sqlite_only("the page's script in a real browser: the store is the HTTP tests'")
def test_the_buttons_in_a_real_browser(site, browser):
    live, _ = site
    ids = seed(live, pairs_about("Scale"), project="browser")
    plan = pair_id(live, ids["plan_a"], ids["plan_b"])
    addon = pair_id(live, ids["addon_a"], ids["addon_b"])
    gateway = pair_id(live, ids["old"], ids["new"], "resolved")
    assert plan and addon and gateway

    browser.get(live.url + "/ui/review")
    wait(browser).until(lambda d: d.execute_script("return document.body.dataset.ready"))
    screenshot(browser, "12-review")

    # keeping a side needs a reason: the form says so and nothing changes
    form = visible(browser, f'form.review-decide[data-id="{addon}"]')
    form.find_element(By.CSS_SELECTOR, 'button[data-action="keep_a"]').click()
    status = visible(browser, f'form.review-decide[data-id="{addon}"] .status.error')
    assert "reason is required" in status.text
    assert pair_id(live, ids["addon_a"], ids["addon_b"]) == addon

    form = browser.find_element(By.CSS_SELECTOR, f'form.review-decide[data-id="{plan}"]')
    form.find_element(By.NAME, "reason").send_keys("the list price is current")
    form.find_element(By.CSS_SELECTOR, 'button[data-action="keep_a"]').click()
    wait(browser).until(lambda d: _gone(d, plan))
    assert live.service.reads.get(ids["plan_b"])["superseded_by"] == ids["plan_a"]

    form = visible(browser, f'form.review-decide[data-id="{addon}"]')
    form.find_element(By.CSS_SELECTOR, 'button[data-action="dismiss"]').click()
    wait(browser).until(lambda d: _gone(d, addon))
    assert pair_id(live, ids["addon_a"], ids["addon_b"], "dismissed") == addon

    form = visible(browser, f'form.review-undo[data-id="{ids["old"]}"]')
    form.find_element(By.NAME, "reason").send_keys("port 8080 still answers")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait(browser).until(lambda d: _gone(d, gateway))
    restored = live.service.reads.get(ids["old"])
    assert restored["superseded_by"] is None
    assert live.http.get(f"/api/memory/{ids['old']}/history").json()["events"][-1][
        "changed_by"] == "dashboard"

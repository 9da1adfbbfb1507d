"""The dashboard in a real headless Chromium against a real daemon with real data: search →
open → edit with a reason → history → forget (preview, confirm) → recover; the sessions,
graph and health pages; markup in a memory shown as text; /docs with no network; the token
login. Each page is saved as a screenshot under test-output/screenshots/."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from browser import chrome, screenshot, text_in, text_is, visible, wait
from conftest import run_daemon
from dashboard_data import FACTS, HOSTILE, PROJECT, SESSION, seed


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[tuple]:
    root = tmp_path_factory.mktemp("dash")
    with run_daemon(root / "home") as live:
        data = seed(live, str(root / "shop-api"))
        yield live, data


@pytest.fixture(scope="module")
def browser():
    driver = chrome()
    try:
        yield driver
    finally:
        driver.quit()


def open_page(driver, live, path: str) -> None:
    driver.get(live.url + path)
    wait(driver).until(lambda d: d.execute_script("return document.readyState") == "complete")


def test_search_open_edit_history_forget_recover(site, browser):
    live, data = site
    target = data.ids["flow"]
    open_page(browser, live, "/")
    assert "Memories" in browser.title
    box = visible(browser, "#q")
    box.send_keys("where does the nightly invoice export go")
    # search as you type: the results swap in without a page load, the best match first
    wait(browser).until(lambda d: d.find_element(By.ID, "results").get_attribute("data-query")
                        == "where does the nightly invoice export go")
    first = browser.find_element(By.CSS_SELECTOR, "#results li.memory")
    assert first.get_attribute("data-id") == target
    assert "acme-ledger bucket" in first.text
    assert float(first.find_element(By.CSS_SELECTOR, ".score").text) > 0
    assert first.find_element(By.CSS_SELECTOR, ".source").text in ("hybrid", "keyword", "vector")
    assert "api" in first.find_element(By.CSS_SELECTOR, ".meta").text  # where it came from
    screenshot(browser, "01-memories-search")

    first.find_element(By.CSS_SELECTOR, "a.open").click()
    text_in(browser, "#content", "acme-ledger bucket")
    assert target[:8] in browser.find_element(By.TAG_NAME, "h1").text

    # edit: a reason is required before anything is sent
    edit = browser.find_element(By.ID, "edit")
    content = edit.find_element(By.NAME, "content")
    content.clear()
    content.send_keys("The nightly invoice export writes Parquet files to the acme-ledger bucket")
    edit.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    assert browser.execute_script("return arguments[0].checkValidity()",
                                  edit.find_element(By.NAME, "reason")) is False
    assert "CSV" in live.service.reads.get(target)["content"]  # nothing changed without a reason
    edit.find_element(By.NAME, "reason").send_keys("the export format changed to Parquet")
    edit.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    text_in(browser, "#content", "Parquet files")

    # history shows both versions and the reason
    history = visible(browser, "#history table.history")
    assert "CSV files" in history.text and "Parquet files" in history.text
    assert "the export format changed to Parquet" in history.text
    assert "dashboard" in history.text  # who changed it
    assert browser.find_elements(By.CSS_SELECTOR, "#history tr.event-modified")
    screenshot(browser, "02-memory-with-history")

    # forget: the preview shows what goes, nothing goes until it is confirmed
    forget = browser.find_element(By.ID, "forget")
    forget.find_element(By.NAME, "reason").send_keys("the export moved to another team")
    forget.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    preview = visible(browser, "#forget .preview")
    assert "Parquet files to the acme-ledger bucket" in preview.text
    assert "1 memory will be forgotten" in preview.text
    assert live.service.reads.get(target)["is_deleted"] is False
    screenshot(browser, "03-forget-preview")
    visible(browser, "#forget button[name=confirm]").click()
    banner = visible(browser, ".banner.deleted")
    assert "the export moved to another team" in banner.text
    assert live.service.reads.get(target)["is_deleted"] is True

    # recover
    recover = visible(browser, "#recover")
    recover.find_element(By.NAME, "reason").send_keys("forgot the wrong one")
    recover.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    visible(browser, "#edit")
    assert not browser.find_elements(By.CSS_SELECTOR, ".banner.deleted")
    cells = browser.find_elements(By.CSS_SELECTOR, "#history tr.event td:nth-child(2)")
    events = [e.text for e in cells]
    assert {"created", "modified", "deleted", "recovered"} <= set(events)
    assert live.service.reads.get(target)["is_deleted"] is False
    screenshot(browser, "04-memory-recovered")


def test_filters_narrow_the_list_and_bad_ones_are_named(site, browser):
    live, data = site
    open_page(browser, live, "/?project=web")
    items = browser.find_elements(By.CSS_SELECTOR, "#results li.memory")
    assert [i.get_attribute("data-id") for i in items] == [data.ids["hostile"]]
    open_page(browser, live, f"/?project={PROJECT}&type=fact")
    shown = {i.get_attribute("data-id") for i in
             browser.find_elements(By.CSS_SELECTOR, "#results li.memory")}
    assert data.ids["fact0"] in shown and data.ids["hostile"] not in shown
    since = browser.find_element(By.NAME, "since")
    since.clear()
    since.send_keys("not a date", Keys.ENTER)
    text_in(browser, "#results .error", "since")
    screenshot(browser, "05-memories-bad-filter")


def test_memory_text_that_is_markup_is_shown_as_text(site, browser):
    live, data = site
    open_page(browser, live, "/?q=Mallory+pasted+markup")
    text_in(browser, "#results", "Mallory pasted markup")
    assert "<script>" in browser.find_element(By.ID, "results").text
    open_page(browser, live, f"/ui/memory/{data.ids['hostile']}")
    assert browser.find_element(By.ID, "content").text == HOSTILE
    assert not browser.find_elements(By.CSS_SELECTOR, "#content script, #content img")
    assert browser.title != "pwned"


def test_a_superseded_memory_shows_its_chain(site, browser):
    live, data = site
    open_page(browser, live, f"/ui/memory/{data.ids['old']}")
    visible(browser, ".banner.superseded")
    chain = browser.find_elements(By.CSS_SELECTOR, "#chain ol.chain li")
    assert [c.text.split("\n")[0][:40] for c in chain] == [
        "The staging database runs PostgreSQL 15 ", "The staging database runs PostgreSQL 16 "]
    assert "current" in chain[0].get_attribute("class")
    chain[1].find_element(By.TAG_NAME, "a").click()
    text_in(browser, "#content", "PostgreSQL 16")
    assert data.ids["new"][:8] in browser.find_element(By.TAG_NAME, "h1").text


def test_sessions_pages_show_checkpoints_injected_memories_and_turns(site, browser):
    live, _ = site
    open_page(browser, live, "/ui/sessions")
    link = visible(browser, "table.sessions a.open")
    assert link.text == SESSION
    row = link.find_element(By.XPATH, "./ancestor::tr").text
    assert "claude-code" in row and PROJECT in row
    screenshot(browser, "06-sessions")
    link.click()
    text_in(browser, "h1", SESSION)
    assert "Working on the orders index" in browser.find_element(By.ID, "checkpoints").text
    injected = browser.find_element(By.ID, "injected").text
    assert "PostgreSQL" in injected and "injected" in injected
    turns = browser.find_element(By.ID, "turns").text
    assert "Add an index on orders.created_at then." in turns
    browser.find_element(By.CSS_SELECTOR, "#transcript summary").click()
    assert "orders.created_at" in visible(browser, "#transcript pre").text
    screenshot(browser, "07-session")


def test_graph_page_draws_entities_coloured_by_community(site, browser):
    live, _ = site
    open_page(browser, live, "/ui/graph")
    drawn = wait(browser).until(
        lambda d: d.find_element(By.ID, "graph").get_attribute("data-drawn"))
    expected = int(browser.find_element(By.ID, "graph").get_attribute("data-nodes"))
    assert int(drawn) == expected >= 8
    assert browser.find_element(By.CSS_SELECTOR, "#graph canvas").size["height"] > 100
    colours = browser.execute_script(
        "return window.mnemonistGraph.body.data.nodes.get().map(n => n.color)")
    assert len(set(colours)) >= 2  # more than one community, each its own colour
    legend = browser.find_element(By.CSS_SELECTOR, "ol.legend").text
    assert "Alice Jones" in legend and "Dave Brown" in legend
    screenshot(browser, "08-graph")
    # a click on an entity searches the memories that name it
    browser.execute_script(
        "const net = window.mnemonistGraph;"
        "const alice = net.body.data.nodes.get().find(n => n.name === 'Alice Jones');"
        "net.body.emitter.emit('click', {nodes: [alice.id], edges: [], event: {}});")
    text_in(browser, "#results", "Alice Jones tunes PostgreSQL autovacuum")
    assert browser.find_element(By.ID, "q").get_attribute("value") == "Alice Jones"


def test_health_page_says_the_state_in_words(site, browser):
    live, _ = site
    open_page(browser, live, "/ui/health")
    state = visible(browser, "#state").text
    assert state.startswith("Healthy") or "Degraded" in state
    status = live.service.health.status()
    page = browser.find_element(By.TAG_NAME, "main").text
    assert "Embedding provider" in page and "Queue" in page
    assert f"{status['queue_depth']} jobs waiting or running" in page
    live_row = browser.find_element(By.XPATH, "//h2[.='Memories']/following-sibling::table[1]"
                                               "//tr[th='live']/td").text
    assert int(live_row) == status["memories"]["live"] >= len(FACTS)
    assert "session_ingest" in browser.find_element(By.CSS_SELECTOR, "table.queue").text
    screenshot(browser, "09-health")


def test_api_docs_load_without_the_network(site, browser):
    live, _ = site
    open_page(browser, live, "/docs")
    title = visible(browser, ".swagger-ui .info .title")
    assert "mnemonist" in title.text
    assert browser.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")
    screenshot(browser, "10-api-docs")


def test_with_a_token_the_browser_logs_in_once(tmp_path, browser):
    token = "dash-token-0123456789abcdef"
    with run_daemon(tmp_path / "home", {"server": {"token": token}}) as live:
        resp = live.http.post("/api/memory/remember", json={"content": "Tokens guard pages"},
                              headers={"authorization": f"Bearer {token}"})
        assert resp.status_code == 201
        browser.delete_all_cookies()
        open_page(browser, live, "/")
        assert browser.current_url.endswith("/login")
        field = visible(browser, "#token")
        field.send_keys("not-the-token-at-all", Keys.ENTER)
        text_in(browser, "#login .error", "not this daemon's")
        screenshot(browser, "11-login-refused")
        field.clear()
        field.send_keys(token, Keys.ENTER)
        text_in(browser, "#results", "Tokens guard pages")
        cookie = browser.get_cookie("mnemonist_token")
        assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
        assert browser.execute_script("return document.cookie") == ""
        browser.delete_all_cookies()


def test_an_edit_of_a_memory_changed_meanwhile_is_refused_and_says_why(site, browser):
    live, data = site
    target = data.ids["fact6"]
    open_page(browser, live, f"/ui/memory/{target}")
    visible(browser, "#edit")
    resp = live.http.post("/api/memory/modify", json={
        "patches": [{"id": target, "content": "Dave Brown rotates the Stripe keys weekly"}],
        "reason": "someone else got there first"})
    assert resp.status_code == 200, resp.text
    edit = browser.find_element(By.ID, "edit")
    content = edit.find_element(By.NAME, "content")
    content.clear()
    content.send_keys("Dave Brown rotates the Stripe keys daily")
    edit.find_element(By.NAME, "reason").send_keys("stale page")
    edit.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    status = visible(browser, "#edit .status.error")
    assert "version" in status.text.lower()
    assert live.service.reads.get(target)["content"] == "Dave Brown rotates the Stripe keys weekly"


def test_pin_and_unpin_from_the_memory_page(site, browser):
    live, data = site
    target = data.ids["fact3"]
    open_page(browser, live, f"/ui/memory/{target}")
    pin = visible(browser, "#pin")
    assert pin.find_element(By.TAG_NAME, "h3").text == "Pin"
    pin.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    text_is(browser, "#pin h3", "Unpin")
    assert live.service.reads.get(target)["pinned"] is True
    unpin = browser.find_element(By.ID, "pin")
    unpin.find_element(By.NAME, "reason").send_keys("no longer critical")
    unpin.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    text_is(browser, "#pin h3", "Pin")
    assert live.service.reads.get(target)["pinned"] is False
    assert "no longer critical" in browser.find_element(By.ID, "history").text


def test_a_search_result_is_rated_for_that_search(site, browser):
    """The thumbs beside a recall result send a rating for the search that found it: a
    training pair of the learned ranker (docs/ranking.md#learning-from-use)."""
    live, _ = site
    query = "where does the nightly invoice export go"
    open_page(browser, live, "/")
    visible(browser, "#q").send_keys(query)
    wait(browser).until(lambda d: d.find_element(By.ID, "results").get_attribute("data-query")
                        == query)
    first = browser.find_element(By.CSS_SELECTOR, "#results li.memory")
    first.find_element(By.CSS_SELECTOR, "button.thumb[data-helpful=true]").click()
    wait(browser).until(lambda d: "noted: helpful" in first.find_element(
        By.CSS_SELECTOR, ".rate .status").text)
    rows = live.query("SELECT label, query FROM predictor_pairs WHERE memory_id = ?"
                      " AND source = 'explicit'", first.get_attribute("data-id"))
    assert [(r["label"], r["query"]) for r in rows] == [(1.0, query)]
    screenshot(browser, "10-memories-rated")

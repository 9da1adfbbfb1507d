"""The dashboard as a newcomer first sees it, in a real headless Chromium: the sessions table
never cuts a word in two, and the graph tells apart one name in several projects, honours
`?project=` and draws labels large enough to read."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from browser import chrome, screenshot, wait
from conftest import LiveDaemon, run_daemon
from dashboard_data import post, seed

#: a real session id (a UUID) and a deep working folder: the long cells that squeezed the rest
LONG_SESSION = "3f0c2a9e-7b41-4c55-9e0a-5d2f8c1b7a63"

#: each cell whose text wraps onto more than one line (the session column may: ids are long)
WRAPPED_CELLS = """
const out = [];
for (const el of document.querySelectorAll(
    'table.sessions th, table.sessions td:not(:first-child)')) {
  const range = document.createRange();
  range.selectNodeContents(el);
  const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
  if (tops.size > 1) out.push(el.textContent);
}
return out;
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("dash-first-hour")
    with run_daemon(root / "home") as live:
        seed(live, str(root / "shop-api"))
        for text in ("Alice Jones reviews the web app's accessibility audit",
                     "Alice Jones set up the web app's design tokens with Bob Stone"):
            live.remember(text, project="web")
        cwd = str(root / "clients" / "northwind" / "services" / "billing-reconciliation")
        hook = {"session_id": LONG_SESSION, "cwd": cwd, "harness": "claude-code",
                "project": "billing-reconciliation-service"}
        post(live, "/api/hooks/session-start", {**hook, "source": "startup"})
        post(live, "/api/hooks/session-end", {**hook, "reason": "prompt_input_exit"})
        live.flush()
        yield live


@pytest.fixture(scope="module")
def browser():
    driver = chrome()
    try:
        yield driver
    finally:
        driver.quit()


def open_page(driver, live: LiveDaemon, path: str) -> None:
    driver.get(live.url + path)
    wait(driver).until(lambda d: d.execute_script("return document.readyState") == "complete")


def test_the_sessions_table_never_cuts_a_word(site: LiveDaemon, browser) -> None:
    for width in (1280, 800):
        browser.set_window_size(width, 900)
        open_page(browser, site, "/ui/sessions")
        assert LONG_SESSION in browser.page_source
        assert browser.execute_script(WRAPPED_CELLS) == [], width
    screenshot(browser, "first-hour-sessions-800")
    browser.set_window_size(1280, 900)


def test_the_graph_json_names_projects_and_honours_project(site: LiveDaemon) -> None:
    every = site.http.get("/ui/graph.json").json()
    alice = {n["project"] for n in every["nodes"] if n["name"] == "Alice Jones"}
    assert alice == {"shop-api", "web"}
    web = site.http.get("/ui/graph.json", params={"project": "web"}).json()
    assert web["nodes"] and {n["project"] for n in web["nodes"]} == {"web"}
    legend = " ".join(m for c in every["communities"] for m in c["members"])
    assert "Alice Jones (shop-api)" in legend and "Alice Jones (web)" in legend


def test_the_graph_page_shows_projects_and_readable_labels(site: LiveDaemon, browser) -> None:
    open_page(browser, site, "/ui/graph?project=web")
    box = wait(browser).until(lambda d: d.find_element("id", "graph")
                              if d.find_element("id", "graph").get_attribute("data-label-px")
                              else False)
    expected = len(site.http.get("/ui/graph.json", params={"project": "web"}).json()["nodes"])
    assert int(box.get_attribute("data-nodes")) == expected
    labels = browser.execute_script(
        "return window.mnemonistGraph.body.data.nodes.get().map(n => n.label)")
    assert len(labels) == expected and all(label.endswith("\nweb") for label in labels)
    assert "project web" in browser.find_element("css selector", "p.count").text
    assert float(box.get_attribute("data-label-px")) >= 11  # on screen, at the zoom shown
    screenshot(browser, "first-hour-graph-web")
    open_page(browser, site, "/ui/graph")
    box = wait(browser).until(lambda d: d.find_element("id", "graph")
                              if d.find_element("id", "graph").get_attribute("data-label-px")
                              else False)
    labels = browser.execute_script(
        "return window.mnemonistGraph.body.data.nodes.get().map(n => n.label)")
    assert "Alice Jones\nshop-api" in labels and "Alice Jones\nweb" in labels
    assert float(box.get_attribute("data-label-px")) >= 11

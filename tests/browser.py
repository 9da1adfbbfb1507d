"""A real headless Chromium (the distribution's `chromium` and `chromedriver`) driven by
Selenium, for the dashboard tests. A missing browser fails the tests with what to install:
they never skip."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

# Selenium Manager is never needed (the driver's path is given); nor are its usage statistics
os.environ.setdefault("SE_AVOID_STATS", "true")

SCREENSHOTS = Path(__file__).resolve().parent.parent / "test-output" / "screenshots"
WAIT_S = 60
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--disable-background-networking", "--no-first-run", "--window-size=1400,1000",
         "--disable-extensions", "--disable-sync", "--disable-component-update",
         # offline: no name but the daemon's resolves, so a page that needs a CDN shows it
         "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1")


def find_binary(names: tuple[str, ...]) -> str | None:
    for name in names:
        found = shutil.which(name) or (name if os.path.isabs(name) and os.access(name, os.X_OK)
                                       else None)
        if found:
            return found
    return None


def chrome() -> webdriver.Chrome:
    browser = find_binary((os.environ.get("MNEMONIST_CHROMIUM", ""), "chromium",
                           "/usr/bin/chromium", "chromium-browser"))
    driver_bin = find_binary((os.environ.get("MNEMONIST_CHROMEDRIVER", ""), "chromedriver",
                              "/usr/bin/chromedriver"))
    if not browser or not driver_bin:
        pytest.fail("the dashboard's browser tests need Chromium and its driver: run ./dev setup"
                    " as root, or `apt-get install -y chromium chromium-driver`", pytrace=False)
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in FLAGS:
        options.add_argument(flag)
    # an explicit driver path: Selenium Manager never looks for (or downloads) one
    driver = webdriver.Chrome(service=Service(executable_path=driver_bin), options=options)
    driver.set_page_load_timeout(WAIT_S)
    return driver


class _Reloading(WebDriverWait):
    """A wait that rides out a page reload: an element gone stale mid-check, or the driver's
    "unhandled inspector error" when the check asks a page that is being replaced (a form
    submitted); both only mean "not yet", and the wait's own condition still decides."""

    def until(self, method, message: str = ""):  # type: ignore[no-untyped-def,override]
        def check(driver):  # type: ignore[no-untyped-def]
            try:
                return method(driver)
            except WebDriverException as exc:
                if "inspector error" in str(exc) or "Cannot find context" in str(exc):
                    return False
                raise
        return super().until(check, message)


def wait(driver: webdriver.Chrome, timeout: float = WAIT_S) -> WebDriverWait:
    """An explicit wait that rides out a page reload (see _Reloading)."""
    return _Reloading(driver, timeout, ignored_exceptions=(StaleElementReferenceException,))


def text_is(driver: webdriver.Chrome, css: str, text: str) -> bool:
    return wait(driver).until(lambda d: d.find_element(By.CSS_SELECTOR, css).text == text)


def visible(driver: webdriver.Chrome, css: str) -> WebElement:
    return wait(driver).until(ec.visibility_of_element_located((By.CSS_SELECTOR, css)))


def text_in(driver: webdriver.Chrome, css: str, text: str) -> bool:
    return wait(driver).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, css), text))


def screenshot(driver: webdriver.Chrome, name: str) -> Path:
    """The whole page (the window grows to its height, up to 4000 px) as `<name>.png`."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    height = driver.execute_script(
        "window.scrollTo(0, 0); return document.documentElement.scrollHeight")
    driver.set_window_size(1400, max(1000, min(int(height) + 120, 4000)))
    try:
        assert driver.save_screenshot(str(path)), f"no screenshot saved at {path}"
    finally:
        driver.set_window_size(1400, 1000)
    return path

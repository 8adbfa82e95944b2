"""What the browser tests share: one headless Chromium per test process, handed to each test as a
fresh page (``browser``: one blank tab at the size the browser started with, no cookies, no button
or key held, the console log drained; a browser that died or is stuck is started again), and the
marks of every test here: ``browser``, skipped where Debian's chromium and chromedriver are missing.
Starting Chromium takes about a second of a core: once per process, not once per test."""
from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from tests.support.dashboard_harness import browser_available, chromium

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skipif(not browser_available(), reason="needs /usr/bin/chromium and /usr/bin/chromedriver")
    for item in items:
        if HERE in Path(item.path).parents:
            item.add_marker(pytest.mark.browser)
            item.add_marker(skip)


class _Browser:
    """The process' Chromium: started on first use, ``fresh()`` before each test."""

    def __init__(self, profiles):
        self._profiles, self.driver, self._size = profiles, None, None

    def fresh(self):
        if self.driver is not None:
            try:
                self._blank_page()
                return self.driver
            except Exception:  # gone or stuck: a dead chromedriver raises urllib3's errors, not selenium's
                self.quit()
        self.driver = chromium(self._profiles.mktemp("chromium-profile"))
        self._size = self.driver.get_window_size()
        return self.driver

    def _blank_page(self) -> None:
        from selenium.webdriver.common.action_chains import ActionChains

        driver = self.driver
        for handle in driver.window_handles[1:]:
            driver.switch_to.window(handle)
            driver.close()
        driver.switch_to.window(driver.window_handles[0])
        driver.get("about:blank")
        ActionChains(driver).reset_actions()  # releases a button or key a failed test left held
        driver.delete_all_cookies()
        driver.set_window_size(self._size["width"], self._size["height"])
        driver.get_log("browser")

    def quit(self) -> None:
        if self.driver is not None:
            with contextlib.suppress(Exception):  # a browser already gone has nothing left to quit
                self.driver.quit()
        self.driver = None


@pytest.fixture(scope="session")
def _chromium(tmp_path_factory):
    shared = _Browser(tmp_path_factory)
    yield shared
    shared.quit()


@pytest.fixture
def browser(_chromium):
    return _chromium.fresh()

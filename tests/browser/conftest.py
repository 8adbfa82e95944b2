"""What the browser tests share: a fresh headless Chromium per test (``browser``), and the marks of
every test here: ``browser``, skipped where Debian's chromium and chromedriver are missing."""
from __future__ import annotations

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


@pytest.fixture
def browser(tmp_path):
    driver = chromium(tmp_path / "profile")
    yield driver
    driver.quit()

"""What the browser tests share: a fresh headless Chromium per test (``browser``)."""
from __future__ import annotations

import pytest

from tests.support.dashboard_harness import chromium


@pytest.fixture
def browser(tmp_path):
    driver = chromium(tmp_path / "profile")
    yield driver
    driver.quit()

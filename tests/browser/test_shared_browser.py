"""The browser the tests here share (conftest.py's ``browser``): each test gets it as a newly started
one, whatever the test before it left, and a browser that died is started again."""
from __future__ import annotations


def test_a_test_gets_one_blank_tab_at_the_start_size_whatever_the_last_left(_chromium):
    driver = _chromium.fresh()
    size = driver.get_window_size()
    driver.get("data:text/html,<p>left behind</p>")
    driver.execute_script("console.error('a test before')")  # in the tab that stays
    driver.switch_to.new_window("tab")
    driver.set_window_size(700, 500)
    again = _chromium.fresh()
    assert again is driver and len(again.window_handles) == 1
    assert again.current_url == "about:blank" and again.get_window_size() == size
    assert again.get_log("browser") == []


def test_a_browser_that_died_is_started_again(_chromium):
    dead = _chromium.fresh()
    dead.quit()
    started = _chromium.fresh()
    assert started is not dead
    started.get("data:text/html,<p id='alive'>alive</p>")
    assert started.find_element("id", "alive").text == "alive"

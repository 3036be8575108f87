"""The live page against a Herald that needs tokens: refused without one, working with one."""
import os
import subprocess

import herald_process
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from conftest import ARTIFACTS, make_browser, serving
from test_live_page import amount, bid, connected, text, wait

SECRET = "browser-test-secret-0123456789abcdef"


@pytest.fixture(scope="module")
def secured():
    yield from serving(["--jwt-key", SECRET])


def token(server, *arguments):
    return subprocess.run([herald_process.binary(), "token", "--key", SECRET, *arguments],
                          check=True, capture_output=True, text=True).stdout.strip()


def test_the_page_works_with_a_token_and_bids_as_its_user(secured):
    browser = make_browser()
    try:
        browser.get(secured.origin + "/")
        # Reads are open, the stream is not: the page lists the auctions, does not connect, and says
        # that a token is what it lacks (not that one was refused), there and in the token field.
        wait(browser, lambda: browser.find_element(By.ID, "connection").get_attribute("data-state") == "token-needed",
             20, "the stream is refused without a token")
        assert "needs a token" in text(browser, "connection")
        assert "needs a token" in text(browser, "token-problem")
        assert "required" in browser.find_element(By.ID, "token").get_attribute("placeholder")
        # A refused change puts its control back.
        select = Select(browser.find_element(By.ID, "currency-select"))
        kept = select.first_selected_option.get_attribute("value")
        other = next(o.get_attribute("value") for o in select.options if o.get_attribute("value") != kept)
        select.select_by_value(other)
        wait(browser, lambda: "token" in text(browser, "currency-problem"), 20, "the 401 shows by the select")
        assert Select(browser.find_element(By.ID, "currency-select")).first_selected_option.get_attribute("value") == kept
        before = secured.request("GET", "/auctions/1")["price"]
        bid(browser, "", before + 10)
        wait(browser, lambda: "token" in text(browser, "bid-problem"), 20, "the 401 shows next to the form")
        assert secured.request("GET", "/auctions/1")["price"] == before

        browser.find_element(By.ID, "token").send_keys(token(secured, "--sub", "carol", "--publish", "auctions/*",
                                                             "--subscribe", "*"))
        browser.find_element(By.ID, "token-button").click()
        wait(browser, lambda: connected(browser), 20, "the page connects with the token")
        assert browser.find_element(By.ID, "bidder").get_attribute("value") == "carol", "the bidder is the token's user"
        bid(browser, "", before + 10)
        wait(browser, lambda: amount(browser, "auction-price") == before + 10, 20, "the bid shows through the stream")
        assert text(browser, "auction-leader") == "carol"
        # Another name than the token's user is refused.
        bid(browser, "mallory", before + 20)
        wait(browser, lambda: "carol" in text(browser, "bid-problem"), 20, "the 403 shows next to the form")
        # The token is kept for this tab: a reload connects at once.
        browser.refresh()
        wait(browser, lambda: connected(browser), 20, "the page reconnects with the kept token")
    finally:
        os.makedirs(ARTIFACTS, exist_ok=True)
        browser.save_screenshot(os.path.join(ARTIFACTS, "session-token.png"))
        browser.quit()

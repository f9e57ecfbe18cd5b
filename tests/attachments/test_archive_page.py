"""The archive in a real headless Chromium: its search finds a chat by an attachment's name; a conversation
page opened from it shows an image the upload held and a visible placeholder for one it lacked, also once
the export folder is moved or unzipped (its CSP kept, nothing fetched from outside the folder)."""

from __future__ import annotations

import shutil
import zipfile

import pytest
from attachments.layouts import DAY, chatgpt_zip, ingested
from headless import chromium, needs_browser

from chatetl.exports.archive import ARCHIVE, ARCHIVE_PAGE
from chatetl.exports.partition import ExportPlan, write_day_exports
from chatetl.layout import EXPORTS_PREFIX, bundle_key
from chatetl.storage import LocalObjectStore


@pytest.fixture
def browser(tmp_path):
    with chromium(tmp_path / "chromium") as driver:
        yield driver


def _check_conversation_page(browser, archive_page):
    from selenium.webdriver.common.by import By

    browser.get(archive_page.as_uri())
    browser.find_element(By.ID, "filter").send_keys("screensh")  # (only an attachment's name holds it)
    assert [r.text for r in browser.find_elements(By.CSS_SELECTOR, "#conversations tbody td.title") if r.is_displayed()] == ["Photo help"]
    browser.find_element(By.LINK_TEXT, "Photo help").click()
    assert browser.title == "Photo help"
    assert "<meta http-equiv=\"Content-Security-Policy\"" in browser.page_source
    images = browser.find_elements(By.CSS_SELECTOR, ".attachments img")
    assert len(images) == 3  # the upload, the old-style upload, the drawn image
    for img in images:
        assert img.is_displayed()
        assert browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth", img) == 4, img.get_attribute("src")
    (missing,) = browser.find_elements(By.CSS_SELECTOR, ".attachments .missing")
    assert missing.is_displayed() and "lost.png: not in the export" in missing.text
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == [], errors  # no Content-Security-Policy violation, no file that did not load


@needs_browser
def test_archive_page_leads_to_images_shown_and_placeholders_after_a_move(tmp_path, browser):
    store = LocalObjectStore(tmp_path / "bucket")
    ingested(store, "raw/chatgpt.zip", chatgpt_zip())
    write_day_exports(store, DAY, ExportPlan(formats=(ARCHIVE,), bundle_formats=(ARCHIVE,)))
    moved = tmp_path / "moved"
    shutil.copytree(tmp_path / "bucket" / EXPORTS_PREFIX, moved)
    _check_conversation_page(browser, moved / ARCHIVE / ARCHIVE_PAGE)
    with zipfile.ZipFile(store.local_path(bundle_key(DAY))) as zf:
        zf.extractall(tmp_path / "unzipped")
    _check_conversation_page(browser, tmp_path / "unzipped" / ARCHIVE / ARCHIVE_PAGE)

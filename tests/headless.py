"""Debian's headless Chromium driven through its chromedriver (Selenium, no driver download), for
the tests that open exported pages in a real browser (the `browser` fixture of conftest.py)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest


def browser_tools() -> tuple[str | None, str | None]:
    return shutil.which("chromium") or shutil.which("chromium-browser"), shutil.which("chromedriver")


needs_browser = pytest.mark.skipif(None in browser_tools(), reason="needs Debian's chromium and chromium-driver (apt-get install -y chromium chromium-driver)")


@contextmanager
def chromium(profile: Path) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, chromedriver = browser_tools()
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-dev-shm-usage",
                "--no-first-run", "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
                "--window-size=1200,900"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(chromedriver), options=options)
    try:
        yield driver
    finally:
        driver.quit()

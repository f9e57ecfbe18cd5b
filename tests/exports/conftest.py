"""What the export tests share: a real headless browser."""

from __future__ import annotations

import pytest
from headless import chromium


@pytest.fixture
def browser(tmp_path):
    """Debian's headless Chromium driven through its chromedriver (Selenium, no driver download)."""
    with chromium(tmp_path / "chromium") as driver:
        yield driver

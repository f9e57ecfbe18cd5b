"""The README's newcomer path, as written: its "no export at hand?" commands run in an empty folder
(the venv's python and chatetl, no service), then the archive page they write opened from disk in
headless Chromium, and one conversation's page opened from it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from headless import chromium, needs_browser

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


def readme_commands() -> list[str]:
    """The commands of the README's block after "No export at hand?", the venv's programs by absolute path."""
    text = (REPO / "README.md").read_text()
    block = re.search(r"No export at hand\?.*?```bash\n(.*?)```", text, re.DOTALL)
    assert block, "the README lost its sample commands"
    return [line.replace(".venv/bin/", f"{VENV_BIN}/") for line in block.group(1).splitlines() if line.strip()]


@needs_browser
def test_the_readme_sample_commands_then_the_archive_page(tmp_path):
    from selenium.webdriver.support.ui import WebDriverWait

    commands = readme_commands()
    assert any("chatetl export" in c and "--format archive" in c for c in commands), commands
    for command in commands:
        done = subprocess.run(command, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{command}\n{done.stderr[-2000:]}"
    summary = json.loads(done.stdout.strip().splitlines()[-1])  # the export's one-line JSON summary
    assert summary["conversations"] == 3 and summary["errors"] == 0

    page = tmp_path / "out" / "archive" / "index.html"
    assert page.is_file()
    with chromium(tmp_path / "chromium") as driver:
        driver.get(page.as_uri())
        WebDriverWait(driver, 30).until(lambda d: "Planning a rail trip" in d.find_element("tag name", "body").text)
        body = driver.find_element("tag name", "body").text
        assert "Mean of a list" in body and "Untitled" in body
        driver.save_screenshot(str(tmp_path / "archive.png"))
        driver.find_element("link text", "Planning a rail trip").click()
        WebDriverWait(driver, 30).until(lambda d: "legroom" in d.find_element("tag name", "body").text)
        assert "/out/html/" in driver.current_url
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert not errors, errors
        driver.save_screenshot(str(tmp_path / "conversation.png"))


"""The archive export: one page for the whole bucket's history (rows, filter, activity chart),
escaped, linking to the html export's files, rebuilt idempotently; and in a real headless Chromium."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import zipfile
from collections import Counter
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

import pytest
from headless import needs_browser

from chatetl.exports.archive import archive_key, day_rows_key, write_archive
from chatetl.exports.formats import parse_formats
from chatetl.exports.partition import ExportPlan, write_partition_exports
from chatetl.layout import bundle_key
from chatetl.model import Conversation, Message, Role, Source
from chatetl.readers.tree import resolve_branches
from chatetl.storage import LocalObjectStore

PLAN = ExportPlan(formats=("archive",), bundle_formats=())
EVIL_TITLE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2"> & "quotes"'
EVIL_PLATFORM = 'x"><script>window.pwned = 3</script>'


def history(n: int = 24, seed: int = 7, evil: bool = True) -> list[Conversation]:
    """`n` generated chats over 14 months on three platforms (and one with a hostile title and platform)."""
    platforms = ("chatgpt", "claude-ai", "grok")
    start = datetime(2025, 2, 10, 12, 0, tzinfo=UTC)
    convs = []
    for i in range(n):
        when = start + timedelta(days=(i * 97 + seed) % 420)
        turns = 2 + (i % 4) * 2
        convs.append(conversation(f"c{i:03d}", platforms[i % 3], f"Topic {i:03d} {['apples', 'rivers', 'engines'][i % 3]}", when, turns))
    if evil:
        convs.append(conversation("evil", EVIL_PLATFORM, EVIL_TITLE, start + timedelta(days=3), 2))
    return convs


def conversation(cid: str, platform: str, title: str | None, when: datetime, turns: int, updated: datetime | None = None) -> Conversation:
    messages, parent = [], None
    for t in range(turns):
        # a long chat runs into the next month: its messages are counted where they were said
        m = Message(message_id=f"{cid}-m{t}", parent_id=parent, role=Role.USER if t % 2 == 0 else Role.ASSISTANT,
                    text=f"turn {t} of {title}", created_at=when + timedelta(days=5 * t))
        messages.append(m)
        parent = m.message_id
    conv = Conversation(source=Source.CHAT_EXPORT, platform=platform, conversation_id=cid, title=title, created_at=when,
                        updated_at=updated or when + timedelta(days=5 * turns), current_node=parent, messages=messages)
    resolve_branches(conv)
    return conv


def expected_months(convs: list[Conversation]) -> Counter:
    """Visible messages per (month, platform), counted here independently of the exporter."""
    out: Counter = Counter()
    for c in convs:
        for m in c.messages:
            if m.seq is not None:
                out[(m.created_at.strftime("%Y-%m"), c.platform)] += 1
    return out


class Page(HTMLParser):
    """What a test reads off the page: rows (title, href, platform), chart bars, the script, the CSP."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.rows: list[dict] = []
        self.bars: list[dict] = []
        self.scripts: list[str] = []
        self.csp = ""
        self._row: dict | None = None
        self._cell = -1
        self._in_script = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "meta" and a.get("http-equiv") == "Content-Security-Policy":
            self.csp = a["content"]
        elif tag == "tr" and "data-platform" in a:
            self._row = {"platform": a["data-platform"], "cells": [], "href": None}
            self.rows.append(self._row)
        elif tag == "td" and self._row is not None:
            self._row["cells"].append("")
        elif tag == "a" and self._row is not None:
            self._row["href"] = a["href"]
        elif tag == "rect":
            self.bars.append({k: a[k] for k in ("data-month", "data-platform", "data-count", "height")})
        elif tag == "script":
            self._in_script = True
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr":
            self._row = None
        elif tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data
        elif self._row is not None and self._row["cells"]:
            self._row["cells"][-1] += data


def _page(store: LocalObjectStore) -> tuple[str, Page]:
    text = store.get_bytes(archive_key()).decode()
    return text, Page(text)


def test_the_page_lists_every_conversation_escaped_with_relative_links_that_resolve(tmp_path):
    store = LocalObjectStore(tmp_path / "bucket")
    convs = history()
    result = write_partition_exports(store, "2026-03-01", [("u1", iter([(c, None) for c in convs]))], PLAN)
    assert result.files == {"html": len(convs), "archive": 1} and result.archive_key == archive_key()
    text, page = _page(store)
    assert len(page.rows) == len(convs)
    # escaped like the html export: the hostile title and platform are text, never markup
    assert "window.pwned" not in "".join(page.scripts) and len(page.scripts) == 1
    assert "&lt;script&gt;window.pwned = 1&lt;/script&gt;&lt;img src=x onerror=&#34;window.pwned = 2&#34;&gt; &amp; &#34;quotes&#34;" in text
    assert 'data-platform="x&#34;&gt;&lt;script&gt;window.pwned = 3&lt;/script&gt;"' in text
    evil = next(r for r in page.rows if r["platform"] == EVIL_PLATFORM)
    assert evil["cells"][0] == EVIL_TITLE
    # the only script is the page's own, allowed by its hash; nothing may load from anywhere
    digest = base64.b64encode(hashlib.sha256(page.scripts[0].encode()).digest()).decode()
    assert page.csp == f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-{digest}'"
    # every row links to its html file, relative to the page, and the file is there
    page_dir = (tmp_path / "bucket" / archive_key()).parent
    for row in page.rows:
        assert row["href"].startswith("../html/") and "//" not in row["href"]
        target = (page_dir / unquote(row["href"])).resolve()
        assert target.is_file(), row["href"]
        assert f"<title>{_escaped(row['cells'][0])}</title>" in target.read_text()
    # newest first, the date column as the rows' order
    dates = [r["cells"][2] for r in page.rows]
    assert dates == sorted(dates, reverse=True)
    assert [int(r["cells"][3]) for r in page.rows] == [len(c.messages) for c in sorted(convs, key=lambda c: (-c.created_at.timestamp(), c.title))]


def _escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&#34;").replace("'", "&#39;")


def test_the_chart_counts_messages_per_month_per_platform(tmp_path):
    store = LocalObjectStore(tmp_path / "bucket")
    convs = history()
    write_partition_exports(store, "2026-03-01", [("u1", iter([(c, None) for c in convs]))], PLAN)
    _, page = _page(store)
    drawn = Counter({(b["data-month"], b["data-platform"]): int(b["data-count"]) for b in page.bars})
    assert drawn == expected_months(convs) and len(page.bars) == len(drawn)
    # stacked bars: a month's bars add up to its height on the same scale in every month
    per_month_height: dict[str, float] = {}
    per_month_count: Counter = Counter()
    for b in page.bars:
        per_month_height[b["data-month"]] = per_month_height.get(b["data-month"], 0.0) + float(b["height"])
        per_month_count[b["data-month"]] += int(b["data-count"])
    scales = {round(per_month_height[m] / per_month_count[m], 1) for m in per_month_count}
    assert len(scales) == 1


def test_one_page_for_the_bucket_newest_state_wins_and_a_rerun_writes_nothing(tmp_path):
    store = LocalObjectStore(tmp_path / "bucket")
    when = datetime(2026, 3, 14, 9, 0, tzinfo=UTC)
    old = conversation("a", "chatgpt", "Old title", when, 2)
    new = conversation("a", "chatgpt", "Renamed", when, 4, updated=when + timedelta(days=30))
    other = conversation("b", "claude-ai", "Another day", when + timedelta(days=2), 2)
    write_partition_exports(store, "2026-03-14", [("u1", iter([(old, None)]))], PLAN)
    write_partition_exports(store, "2026-03-16", [("u2", iter([(other, None)]))], PLAN)
    result = write_partition_exports(store, "2026-04-13", [("u3", iter([(new, None)]))], PLAN)
    assert archive_key() in result.written
    _, page = _page(store)
    titles = sorted(r["cells"][0] for r in page.rows)
    assert titles == ["Another day", "Renamed"]  # every day's conversations, each once, in its newest state
    renamed = next(r for r in page.rows if r["cells"][0] == "Renamed")
    assert renamed["cells"][3] == "4" and "Renamed" in renamed["href"] and "Old" not in renamed["href"]
    assert sorted(o.key for o in store.list("exports/_archive/")) == [day_rows_key(d) for d in ("2026-03-14", "2026-03-16", "2026-04-13")]

    page_etag = store.head(archive_key()).etag
    # a backfill of the older day: its own rows leave out the state a later day superseded (newest state
    # wins in every output), the page was already right; and a second backfill writes nothing at all
    again = write_partition_exports(store, "2026-03-14", [("u1", iter([(old, None)]))], PLAN)
    assert again.written == [day_rows_key("2026-03-14")] and archive_key() in again.unchanged
    assert store.head(archive_key()).etag == page_etag
    etags = {o.key: o.etag for o in store.list("exports/")}
    again = write_partition_exports(store, "2026-03-14", [("u1", iter([(old, None)]))], PLAN)
    assert again.written == [] and archive_key() in again.unchanged
    assert {o.key: o.etag for o in store.list("exports/")} == etags


def test_a_row_links_only_to_an_html_file_that_is_in_the_bucket(tmp_path):
    store = LocalObjectStore(tmp_path / "bucket")
    convs = history(3, evil=False)
    write_partition_exports(store, "2026-03-01", [("u1", iter([(c, None) for c in convs]))], PLAN)
    _, page = _page(store)
    gone = page.rows[0]
    store.delete("exports/" + unquote(gone["href"][3:]))
    assert write_archive(store).linked == len(convs) - 1
    _, page = _page(store)
    row = next(r for r in page.rows if r["cells"][0].startswith(gone["cells"][0]))
    assert row["href"] is None and "(no HTML file)" in row["cells"][0]


def test_a_day_that_lost_its_conversations_leaves_the_page(tmp_path):
    store = LocalObjectStore(tmp_path / "bucket")
    convs = history(4, evil=False)
    write_partition_exports(store, "2026-03-01", [("u1", iter([(c, None) for c in convs[:2]]))], PLAN)
    write_partition_exports(store, "2026-03-02", [("u2", iter([(c, None) for c in convs[2:]]))], PLAN)
    assert len(_page(store)[1].rows) == 4
    write_partition_exports(store, "2026-03-02", [], PLAN)  # its upload was retracted
    assert store.head(day_rows_key("2026-03-02")) is None
    assert sorted(r["cells"][0] for r in _page(store)[1].rows) == sorted(c.title for c in convs[:2])


def test_damaged_rows_of_a_day_are_named_and_the_rest_still_shows(tmp_path):
    store = LocalObjectStore(tmp_path / "bucket")
    write_partition_exports(store, "2026-03-01", [("u1", iter([(c, None) for c in history(3, evil=False)]))], PLAN)
    store.put_bytes(day_rows_key("2026-03-09"), b'{"day": "2026-03-09", "conversations": [{"key": ')
    result = write_archive(store)
    assert result.damaged == [day_rows_key("2026-03-09")] and result.conversations == 3 and result.days == 1


def test_archive_brings_html_and_names_are_checked():
    assert parse_formats("archive") == ("html", "archive")
    assert ExportPlan(formats=("archive",), bundle_formats=("archive",)) == ExportPlan(formats=("html", "archive"), bundle_formats=("html", "archive"))
    with pytest.raises(ValueError, match="unknown export format"):
        ExportPlan(formats=("pdf",))


def test_the_days_zip_holds_a_page_of_its_own_linking_into_the_zip(tmp_path):
    store = LocalObjectStore(tmp_path / "bucket")
    convs = history(5, evil=False)
    write_partition_exports(store, "2026-03-01", [("u1", iter([(c, None) for c in convs]))], ExportPlan(formats=("md",), bundle_formats=("archive",)))
    assert store.head(archive_key()) is None  # the bucket's page only with archive among the written formats
    with zipfile.ZipFile(io.BytesIO(store.get_bytes(bundle_key("2026-03-01")))) as zf:
        zf.extractall(tmp_path / "zip")
    page = Page((tmp_path / "zip" / "archive" / "index.html").read_text())
    assert len(page.rows) == len(convs) and "Chats of 2026-03-01" in (tmp_path / "zip" / "archive" / "index.html").read_text()
    assert all((tmp_path / "zip" / "archive" / unquote(r["href"])).resolve().is_file() for r in page.rows)


# ------------------------------------------------------------------------------- in a real browser


@needs_browser
def test_the_archive_page_in_headless_chromium_filters_and_its_links_open(tmp_path, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    store = LocalObjectStore(tmp_path / "bucket")
    convs = history()
    days = {"2026-03-01": convs[:12], "2026-03-02": convs[12:]}
    for day, part in days.items():
        write_partition_exports(store, day, [(f"u-{day}", iter([(c, None) for c in part]))], PLAN)
    page_path = tmp_path / "bucket" / archive_key()
    browser.get(page_path.as_uri())

    def visible_titles() -> list[str]:
        rows = browser.find_elements(By.CSS_SELECTOR, "#conversations tbody tr")
        return [r.find_element(By.CSS_SELECTOR, "td.title").text for r in rows if r.is_displayed()]

    shown = browser.find_element(By.ID, "shown")
    assert len(visible_titles()) == len(convs) and shown.text == f"all {len(convs)}"
    assert browser.execute_script("return window.pwned === undefined")  # the hostile title ran nothing
    assert EVIL_TITLE in visible_titles()
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg#activity rect")) == len(expected_months(convs))

    # typing hides the rows that do not match, every typed word counts, clearing shows all again
    box = browser.find_element(By.ID, "filter")
    box.send_keys("RIVERS")
    expected = [c.title for c in convs if "rivers" in c.title]
    assert sorted(visible_titles()) == sorted(expected) and shown.text == f"{len(expected)} of {len(convs)}"
    box.send_keys(" 013")
    assert visible_titles() == ["Topic 013 rivers"]
    box.clear()
    box.send_keys(" ")  # an input event with nothing to match: every row again
    assert len(visible_titles()) == len(convs)
    box.clear()
    Select(browser.find_element(By.ID, "platform")).select_by_value("grok")
    grok = sorted(c.title for c in convs if c.platform == "grok")
    assert sorted(visible_titles()) == grok
    box.send_keys("apples")  # grok's chats are about engines: nothing left
    assert visible_titles() == [] and shown.text == f"0 of {len(convs)}"

    # every link resolves to a file on disk; following one opens that conversation's page
    browser.get(page_path.as_uri())
    links = browser.find_elements(By.CSS_SELECTOR, "#conversations tbody a")
    assert len(links) == len(convs)
    targets = {}
    for a in links:
        url = urlsplit(a.get_property("href"))
        assert url.scheme == "file"
        path = Path(url2pathname(url.path))
        assert path.is_file() and path.parent == (tmp_path / "bucket" / "exports" / "html"), path
        targets[a.text] = path
    assert len(set(targets.values())) == len(convs)
    browser.find_element(By.LINK_TEXT, "Topic 013 rivers").click()
    assert browser.title == "Topic 013 rivers" and browser.current_url == targets["Topic 013 rivers"].as_uri()
    assert "turn 1 of Topic 013 rivers" in browser.find_element(By.TAG_NAME, "body").text
    # no Content-Security-Policy violation nor script error on the way
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == [], errors


def test_links_keep_file_names_with_any_character_working(tmp_path):
    """Titles become file names with marks, apostrophes, ampersands ...: the percent-encoded link
    still names the file (checked without a browser: the same decoding a browser does for file:)."""
    store = LocalObjectStore(tmp_path / "bucket")
    titles = ["Grüße & Café 'quoted' (1) + 2, 100%", "日本語のタイトル #1 ?x=y", "tab\tand\nnewline"]
    convs = [conversation(f"t{i}", "chatgpt", t, datetime(2026, 1, 1 + i, tzinfo=UTC), 2) for i, t in enumerate(titles)]
    write_partition_exports(store, "2026-01-05", [("u", iter([(c, None) for c in convs]))], PLAN)
    _, page = _page(store)
    page_dir = (tmp_path / "bucket" / archive_key()).parent
    for row in page.rows:
        assert re.fullmatch(r"\.\./html/[A-Za-z0-9%._~/-]+", row["href"]), row["href"]
        assert (page_dir / unquote(row["href"])).is_file()


def test_cli_export_archive_writes_the_page_beside_the_html_files_it_links(tmp_path):
    from click.testing import CliRunner

    from chatetl.cli import main
    from chatetl.samples import sample_uploads

    src = tmp_path / "in"
    src.mkdir()
    for key, data in sample_uploads().items():
        (src / key.rsplit("/", 1)[-1]).write_bytes(data)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["export", str(src), "--out", str(out), "--format", "archive"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["written"] == {"html": summary["exported"], "archive": 1}
    page = Page((out / "archive" / "index.html").read_text())
    assert len(page.rows) == summary["exported"] > 5
    linked = {(out / "archive" / unquote(r["href"])).resolve() for r in page.rows}
    assert linked == {p.resolve() for p in (out / "html").iterdir()}  # every row's file, and nothing else there


CONTROL_TITLE = "Bell\x07 NUL\x00 \x1b]0;pwned\x07esc \x1b[31mred\x9b2J del\x7f end"
RAW_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x80-\x84\x86-\x9f]")


def _with_controls() -> list[Conversation]:
    start = datetime(2025, 6, 1, tzinfo=UTC)
    return [conversation("ctl", "chat\x1bgpt", CONTROL_TITLE, start, 2), conversation("plain", "grok", "Plain", start, 2)]


def test_no_raw_control_character_reaches_the_page(tmp_path):
    store = LocalObjectStore(tmp_path / "bucket")
    write_partition_exports(store, "2026-03-01", [("u1", iter([(c, None) for c in _with_controls()]))], PLAN)
    text, page = _page(store)
    assert not RAW_CONTROLS.search(text), repr(RAW_CONTROLS.search(text))
    titles = sorted(r["cells"][0] for r in page.rows)
    assert titles == ["Bell NUL ]0;pwnedesc [31mred2J del end", "Plain"]  # the text around the controls stays


@needs_browser
def test_a_title_with_controls_shows_without_them_in_headless_chromium(tmp_path, browser):
    from selenium.webdriver.common.by import By

    store = LocalObjectStore(tmp_path / "bucket")
    write_partition_exports(store, "2026-03-01", [("u1", iter([(c, None) for c in _with_controls()]))], PLAN)
    browser.get((tmp_path / "bucket" / archive_key()).as_uri())
    cells = [td.text for td in browser.find_elements(By.CSS_SELECTOR, "#conversations td.title")]
    assert any(c.startswith("Bell NUL ]0;pwnedesc [31mred2J del end") for c in cells), cells
    assert not RAW_CONTROLS.search(browser.page_source)
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []


def _said(conv: Conversation, text: str) -> Conversation:
    """`conv` with `text` as its first message's text (a word no title holds)."""
    conv.messages[0].text = text
    return conv


@needs_browser
def test_the_page_searches_message_text_sorts_and_its_charts_follow_the_filter(tmp_path, browser):
    from selenium.webdriver.common.by import By

    store = LocalObjectStore(tmp_path / "bucket")
    convs = history(evil=False)
    convs[5] = _said(convs[5], "How do I parse a CSV file in Python?")
    convs[9] = _said(convs[9], "python's asyncio, explained")
    convs[11].model = "gpt-4o"
    write_partition_exports(store, "2026-03-01", [("u1", iter([(c, None) for c in convs]))], PLAN)
    page_path = tmp_path / "bucket" / archive_key()
    browser.get(page_path.as_uri())

    def visible_titles() -> list[str]:
        return [r.find_element(By.CSS_SELECTOR, "td.title").text
                for r in browser.find_elements(By.CSS_SELECTOR, "#conversations tbody tr") if r.is_displayed()]

    def chart(name: str) -> dict[str, int]:
        cells = browser.find_elements(By.CSS_SELECTOR, f"#chart-{name} > span")
        return {cells[i].text: int(cells[i + 1].text) for i in range(0, len(cells), 2)}

    def drawn_months() -> int:
        return sum(int(r.get_attribute("data-shown")) for r in browser.find_elements(By.CSS_SELECTOR, "svg#activity rect"))

    assert drawn_months() == sum(len(c.messages) for c in convs)
    assert chart("platforms") == {"ChatGPT": 8, "Claude AI": 8, "Grok": 8}
    assert sum(chart("lengths").values()) == len(convs)
    assert chart("models") == {"gpt-4o": 1}
    hours = browser.find_elements(By.CSS_SELECTOR, "#chart-hours .col")
    assert len(hours) == 24 and len(browser.find_elements(By.CSS_SELECTOR, "#chart-weekdays .col")) == 7

    # a word of the messages finds its chats (a prefix too), though no title holds it
    box = browser.find_element(By.ID, "filter")
    box.send_keys("pyth")
    assert sorted(visible_titles()) == sorted([convs[5].title, convs[9].title])
    assert browser.find_element(By.ID, "shown").text == f"2 of {len(convs)}"
    # ... and the charts follow: only those two chats' messages and platforms
    assert drawn_months() == len(convs[5].messages) + len(convs[9].messages)
    assert chart("platforms") == {"ChatGPT": 1, "Grok": 1}
    box.send_keys(" csv")
    assert visible_titles() == [convs[5].title]
    box.clear()
    box.send_keys(" ")

    # sorting: by messages (most first), by title (A to Z), then back to the newest first
    header = browser.find_element(By.CSS_SELECTOR, 'th[data-sort="messages"] button')
    header.click()
    counts = [int(r.find_elements(By.TAG_NAME, "td")[3].text) for r in browser.find_elements(By.CSS_SELECTOR, "#conversations tbody tr")]
    assert counts == sorted(counts, reverse=True)
    browser.find_element(By.CSS_SELECTOR, 'th[data-sort="title"] button').click()
    assert visible_titles() == sorted(c.title for c in convs)
    assert browser.find_element(By.CSS_SELECTOR, 'th[data-sort="title"]').get_attribute("aria-sort") == "ascending"

    # a conversation's page: a way back and each message's time
    browser.find_element(By.LINK_TEXT, convs[5].title).click()
    times = [t.get_attribute("datetime") for t in browser.find_elements(By.CSS_SELECTOR, "section time")]
    assert times == [m.created_at.strftime("%Y-%m-%dT%H:%M:%SZ") for m in convs[5].messages]
    browser.find_element(By.LINK_TEXT, "\u2190 All conversations").click()
    assert browser.current_url == page_path.as_uri()
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []


@needs_browser
def test_ten_thousand_conversations_stay_readable(tmp_path, browser):
    from selenium.webdriver.common.by import By

    from chatetl.exports.archive import archive_entry, render_archive

    convs = history(10_000, evil=False)
    convs[7777] = _said(convs[7777], "Rescuing a sourdough starter")
    page = tmp_path / "index.html"
    page.write_text(render_archive([archive_entry(c, f"html/{c.conversation_id}.html") for c in convs]))
    browser.get(page.as_uri())
    shown_titles = "return Array.from(document.querySelectorAll('#conversations tbody tr')).filter(r => !r.hidden).map(r => r.cells[0].textContent)"
    more = browser.find_element(By.ID, "more")
    assert len(browser.execute_script(shown_titles)) == 500 and more.is_displayed()
    assert browser.find_element(By.ID, "shown").text == "all 10000"
    box = browser.find_element(By.ID, "filter")
    box.send_keys("rivers 1042")  # a title's words, among 10,000 chats
    assert browser.execute_script(shown_titles) == ["Topic 1042 rivers"]
    box.clear()
    box.send_keys("sourd")  # the start of a word of one chat's messages
    assert browser.execute_script(shown_titles) == [convs[7777].title]
    box.clear()
    box.send_keys(" ")
    more.click()
    assert len(browser.execute_script(shown_titles)) == 10_000 and not more.is_displayed()
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []

"""A Google Takeout of Gemini activity (generated, never real data): the zip as Takeout ships it.

`Takeout/My Activity/Gemini Apps/MyActivity.json`, newest first: a chat about a CSV script
whose second answer was regenerated (two drafts: a branch, the later one active), a chat with a
Gem and an attached image (the image beside the file), a prompt that names no conversation (its
own conversation), a draft choice (kept in its chat's meta), a canvas naming no chat (kept as the
account's canvas) and a feedback row naming no chat (counted as skipped). Beside it, the archive's index page and another product's activity
(Search), which are no chats and are skipped.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from chatetl.samples.common import zip_files

START = datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC)
FOLDER = "Takeout/My Activity/Gemini Apps"
CSV_CHAT = "5f1e2d3c4b5a6978"
GEM_CHAT = "a1b2c3d4e5f60718"
# a 1x1 transparent PNG: the attached image as Takeout puts it beside the activity file
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360000002"
    "000154a24f5d0000000049454e44ae426082"
)


def _row(title: str, minutes: float, answers: list[str] | None = None, chat: str | None = None, **extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "header": "Gemini Apps",
        "title": title,
        "time": (START + timedelta(minutes=minutes)).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "products": ["Gemini Apps"],
        "activityControls": ["Gemini Apps Activity"],
    }
    if answers is not None:
        row["safeHtmlItem"] = [{"html": html} for html in answers]
    if chat is not None:
        row["details"] = [{"name": "Open this chat", "url": f"https://gemini.google.com/app/{chat}"}]
    row.update(extra)
    return row


def activity_rows() -> list[dict[str, Any]]:
    """The Gemini rows, newest first (as Takeout writes them)."""
    rows = [
        _row("Prompted Can you add a header row check?", 14.25, [
            ("<p>Sure: read the first row with <code>next(reader)</code> and compare it with the names you expect.</p>\n"
            "<pre><code class=\"language-python\">header = next(reader)\nif header != [\"date\", \"amount\"]:\n"
            "    raise ValueError(f\"unexpected header: {header}\")\n</code></pre>"),
        ], CSV_CHAT),
        _row("Selected preferred draft", 12.5, chat=CSV_CHAT),
        _row("Prompted Now sum the amount column", 12.0, [
            "<p>Add each row's amount as a float:</p>\n<pre><code>total = sum(float(row[1]) for row in reader)\n</code></pre>",
            ("<p>Use <code>csv.DictReader</code>, so the column is found by its name:</p>\n<ul>\n"
            "<li>open the file with <code>newline=\"\"</code></li>\n<li>sum <code>float(row[\"amount\"])</code> over the rows</li>\n</ul>"),
        ], CSV_CHAT),
        _row("Prompted Explain the difference between a list and a tuple in one table", 9.0, [
            ("<table><tr><th>list</th><th>tuple</th></tr><tr><td>mutable</td><td>immutable</td></tr>"
            "<tr><td><code>[1, 2]</code></td><td><code>(1, 2)</code></td></tr></table>"),
        ]),
        _row("Created Gemini Canvas titled CSV cheat sheet", 7.0, [
            "<h1>CSV cheat sheet</h1>\n<ul>\n<li><code>csv.reader</code>: rows as lists</li>\n<li><code>csv.DictReader</code>: rows by column name</li>\n</ul>",
        ]),
        _row("Gave feedback: Good response", 6.0),
        _row("Prompted How do I read a CSV file in Python?", 5.0, [
            ("<p>Use the standard library's <strong>csv</strong> module:</p>\n"
            "<pre><code class=\"language-python\">import csv\n\nwith open(\"data.csv\", newline=\"\") as f:\n"
            "    for row in csv.reader(f):\n        print(row)\n</code></pre>\n"
            "<p>See <a href=\"https://docs.python.org/3/library/csv.html\">the csv docs</a>.</p>"),
        ], CSV_CHAT),
        _row("Prompted Make it rhyme", 2.0, [
            "<p><em>Leaves of red and gold,</em><br><em>a story softly told.</em></p>",
        ], GEM_CHAT, subtitles=[
            {"name": "Poet was used in this chat. Manage your Gems.", "url": "https://gemini.google.com/gems/view"},
        ]),
        _row("Prompted Write two lines about this photo", 0.0, [
            "<p>Autumn leaves drift down,<br>painting the quiet path gold.</p>",
        ], GEM_CHAT, imageFile="image_4f2a9c-7d1e0b3a5c6f8e91.png", subtitles=[
            {"name": "Poet was used in this chat. Manage your Gems.", "url": "https://gemini.google.com/gems/view"},
            {"name": "Attached 1 file."},
            {"name": "-  image_4f2a9c.png", "url": "image_4f2a9c-7d1e0b3a5c6f8e91.png"},
        ]),
    ]
    return rows


def sample() -> tuple[str, bytes]:
    search = [{
        "header": "Search", "title": "Searched for csv module python", "titleUrl": "https://www.google.com/search?q=csv+module+python",
        "time": (START + timedelta(minutes=4)).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "products": ["Search"], "activityControls": ["Web & App Activity"],
    }]
    files: dict[str, bytes | str] = {
        "Takeout/archive_browser.html": "<html><head><title>Archive</title></head><body><h1>Your archive</h1></body></html>",
        f"{FOLDER}/MyActivity.json": json.dumps(activity_rows(), ensure_ascii=False, indent=2),
        f"{FOLDER}/image_4f2a9c-7d1e0b3a5c6f8e91.png": PNG,
        "Takeout/My Activity/Search/MyActivity.json": json.dumps(search, indent=2),
    }
    return "raw/samples/gemini-takeout.zip", zip_files(files)

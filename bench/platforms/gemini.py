"""Generate Google Takeout Gemini activity files of a given size, streamed to disk.

`write` makes `MyActivity.json` (what `chatetl.readers.platforms.gemini.read` takes), `write_html` the same
rows as Takeout's `MyActivity.html` (`read_html`). Rows come newest first, as Takeout writes them:
conversations of 1-12 prompts (mostly one after another, now and then an older one taken up
again), answers of about 0.5-3 KB of the HTML the app renders (paragraphs, lists, code, tables),
a regenerated answer now and then, prompts that name no conversation, and activities that are no
prompts (feedback, draft choices).

    .venv/bin/python -c "from bench.platforms.gemini import write; write(__import__('pathlib').Path('/tmp/g.json'), 100 << 20)"
"""

from __future__ import annotations

import html
import json
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

WORDS = [
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "with", "was", "on", "be", "by", "this", "are", "from",
    "at", "or", "an", "have", "not", "which", "but", "can", "more", "data", "file", "list", "value", "table", "code", "run",
    "test", "model", "answer", "question", "read", "write", "line", "time", "result",
]
END = datetime(2026, 6, 1, tzinfo=UTC)
WHY = ('<b>Why is this here?</b><br>&emsp;This activity was saved to your Google Account because the following settings were on:'
       '&nbsp;Gemini Apps Activity.&nbsp;You can control these settings &nbsp;<a href="https://myaccount.google.com/activitycontrols">here</a>.')


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _answer(rng: random.Random) -> str:
    """An answer as the app renders it, about 0.5-3 KB."""
    parts: list[str] = []
    target = rng.randint(500, 3000)
    size = 0
    while size < target:
        kind = rng.random()
        if kind < 0.55:
            part = f"<p>{_words(rng, rng.randint(15, 60))} <strong>{_words(rng, 2)}</strong>.</p>"
        elif kind < 0.75:
            items = "".join(f"<li>{_words(rng, rng.randint(4, 14))}</li>" for _ in range(rng.randint(2, 5)))
            part = f"<ul>\n{items}\n</ul>"
        elif kind < 0.9:
            lines = "\n".join(f"    {rng.choice(WORDS)} = {rng.randint(0, 999)}" for _ in range(rng.randint(2, 8)))
            part = f'<pre><code class="language-python">def f():\n{lines}\n</code></pre>'
        else:
            rows = "".join(f"<tr><td>{rng.choice(WORDS)}</td><td>{rng.randint(0, 99)}</td></tr>" for _ in range(3))
            part = f"<table><tr><th>name</th><th>count</th></tr>{rows}</table>"
        parts.append(part)
        size += len(part)
    return "\n".join(parts)


def rows(seed: int = 11) -> Iterator[dict]:
    """Activity rows, newest first, without end."""
    rng = random.Random(seed)
    t = END
    recent: list[str] = []
    current, left = None, 0
    while True:
        t -= timedelta(seconds=rng.uniform(20, 900))
        time = t.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        if left <= 0:
            if recent and rng.random() < 0.1:
                current = rng.choice(recent[-20:])  # an older conversation taken up again
            else:
                current = None if rng.random() < 0.1 else f"{rng.getrandbits(64):016x}"  # or a prompt of its own
                if current:
                    recent.append(current)
            left = rng.randint(1, 12) if current else 1
        row: dict = {"header": "Gemini Apps", "time": time, "products": ["Gemini Apps"], "activityControls": ["Gemini Apps Activity"]}
        if current and rng.random() < 0.04:
            row["title"] = rng.choice(("Gave feedback: Good response", "Selected preferred draft"))
        else:
            left -= 1
            row["title"] = "Prompted " + _words(rng, rng.randint(5, 40))
            drafts = 2 if rng.random() < 0.03 else 1
            row["safeHtmlItem"] = [{"html": _answer(rng)} for _ in range(drafts)]
        if current:
            row["details"] = [{"name": "Conversation", "url": f"https://gemini.google.com/app/{current}"}]
        yield row


def write(path: Path, size_bytes: int, seed: int = 11) -> None:
    """A MyActivity.json of about `size_bytes`."""
    written = 0
    with open(path, "w", encoding="utf-8") as out:
        out.write("[")
        for i, row in enumerate(rows(seed)):
            text = ("," if i else "") + "\n  " + json.dumps(row, ensure_ascii=False)
            out.write(text)
            written += len(text)
            if written >= size_bytes:
                break
        out.write("\n]\n")


def _takeout_time(value: str) -> str:
    local = datetime.fromisoformat(value) - timedelta(hours=7)
    return f"{local:%b} {local.day}, {local.year}, {local.hour % 12 or 12}:{local:%M:%S}\u202f{'AM' if local.hour < 12 else 'PM'} PDT"


def _cell(row: dict) -> str:
    verb, _, rest = row["title"].partition(" ")
    shown = f"Prompted&nbsp;{html.escape(rest)}" if verb == "Prompted" else html.escape(row["title"])
    answer = "".join(item["html"] for item in row.get("safeHtmlItem", []))
    details = "".join(f'&emsp;<a href="{d["url"]}">{d["name"]}</a><br>' for d in row.get("details", []))
    return (
        '<div class="outer-cell mdl-cell mdl-cell--12-col mdl-shadow--2dp"><div class="mdl-grid">'
        '<div class="header-cell mdl-cell mdl-cell--12-col"><p class="mdl-typography--title">Gemini Apps<br></p></div>'
        f'<div class="content-cell mdl-cell mdl-cell--6-col mdl-typography--body-1">{shown}<br>{_takeout_time(row["time"])}<br>'
        f'{answer}\n<br></div>'
        '<div class="content-cell mdl-cell mdl-cell--6-col mdl-typography--body-1 mdl-typography--text-right"></div>'
        '<div class="content-cell mdl-cell mdl-cell--12-col mdl-typography--caption"><b>Products:</b><br>&emsp;Gemini Apps<br>'
        + (f"<b>Details:</b><br>{details}" if details else "") + WHY + "</div></div></div>"
    )


def write_html(path: Path, size_bytes: int, seed: int = 11) -> None:
    """A MyActivity.html of about `size_bytes`: the rows `write` makes, as Takeout renders them."""
    written = 0
    with open(path, "w", encoding="utf-8") as out:
        out.write('<html><head><meta charset="UTF-8"><title>My Activity</title><style type="text/css">.mdl-grid{display:flex}</style>'
                  '</head><body><div class="mdl-grid">')
        for row in rows(seed):
            cell = _cell(row)
            out.write(cell)
            written += len(cell)
            if written >= size_bytes:
                break
        out.write("</div></body></html>\n")

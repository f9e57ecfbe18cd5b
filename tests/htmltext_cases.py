"""Seeded HTML fragments for tests/readers/test_htmltext.py: answers shaped as Gemini renders them
(paragraphs, headings, nested lists, quotes, code blocks, tables, links, images, entities, code
spans) and hostile ones, cut, spliced and shuffled from the same pieces, so that every branch of the
tokenizer (tags that never end, quotes in attributes, comments, a lone `<`) is met."""

from __future__ import annotations

import json
import lzma
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

_WORDS = ("the", "of", "data", "a", "run", "x", "[note]", "a<b", "`code`", "|", "caf\u00e9", "&amp;", "&lt;tag&gt;",
          "&quot;q&quot;", "&#39;", "&nbsp;", "*", "#", "1.", "-")
_TEXTS = (
    "plain words", "  spaced \n\t out  ", "a < b", "x<y", "[link](u)", "5 &gt; 3", "&lt;b&gt;", "&amp;amp;", "&nbsp;",
    "&#10;", "&#x20;x", "`tick`", "a`b", "&#96;", "caf\u00e9 \u00a0", "\u202f", "|pipe|", "#hash", "- dash", "1. one",
    "&", "&#", "&bogus;", "\r\n", "\f", "**", "", " ", "  ", "\n",
)
_TAGS = (
    "<p>", "</p>", "<div>", "</div>", "<br>", "<br/>", "<br />", "<hr>", "<hr/>", "<h1>", "</h1>", "<h3>", "</h3>",
    "<ul>", "</ul>", "<ol>", '<ol start="3">', "<ol start=x>", "</ol>", "<li>", "</li>", "<blockquote>", "</blockquote>",
    "<pre>", "</pre>", '<pre class="x">', "<PRE>", "</PRE >", '<code class="language-python">', "<code>", "</code>",
    "<strong>", "</strong>", "<b>", "</b>", "<em>", "</em>", "<i>", "</i>", "<del>", "</del>", "<s>", "<strike>",
    '<a href="https://example.org/x">', "<a href='mailto:me@x.org'>", '<a href="javascript:alert(1)">', "<a>", "</a>",
    '<img src="https://x.org/i.png" alt="an [image]">', "<img src=data:x alt=inline>", '<img alt="no src"/>',
    "<table>", "</table>", "<thead>", "</thead>", "<tbody>", "<tr>", "</tr>", "<th>", "</th>", "<td>", "</td>",
    "<script>", "</script>", "<style>", "</style>", "<span>", "</span>", '<span class="x">', "<SPAN>", "<dt>", "<dd>",
    "<summary>", "<caption>", "<template>", "</template>", "<p/>", "<li/>", "<x-y>", "<svg>", "</svg>", "<P>",
    "<!-- note -->", "<!--", "-->", "<!DOCTYPE html>", "<?xml x?>", "<", ">", "</", "<3", '<p title="a>b">',
    "<p title='q'>", '<p title="', "<b ", '<u "', "<a href=\"https://e.org\" title='x'>", "<br\n>", "</p\n>",
)


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) if rng.random() < 0.2 else rng.choice(("word", "and", "text", "it")) for _ in range(n))


def _inline(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(1, 5)):
        kind = rng.random()
        if kind < 0.5:
            parts.append(_words(rng, rng.randint(1, 12)))
        elif kind < 0.65:
            tag = rng.choice(("strong", "em", "b", "i", "code", "del"))
            parts.append(f"<{tag}>{_words(rng, rng.randint(1, 3))}</{tag}>")
        elif kind < 0.75:
            href = rng.choice(("https://example.org/a?b=1&amp;c=2", "mailto:me@example.org", "javascript:x()", "/rel"))
            parts.append(f'<a href="{href}">{_words(rng, rng.randint(0, 3))}</a>')
        elif kind < 0.82:
            parts.append(f'<img src="{rng.choice(("https://x.org/i.png", "pic.png", "data:image/png;base64,AA", ""))}" alt="{_words(rng, 2)}">')
        elif kind < 0.9:
            parts.append("<br>")
        else:
            parts.append(rng.choice(("\n", "  ", " \t")))
    return " ".join(parts)


def _block(rng: random.Random, depth: int = 0) -> str:
    kind = rng.random()
    if kind < 0.35 or depth > 3:
        return f"<p>{_inline(rng)}</p>"
    if kind < 0.45:
        n = rng.randint(1, 6)
        return f"<h{n}>{_inline(rng)}</h{n}>"
    if kind < 0.65:
        tag = rng.choice(("ul", "ol", '<ol start="4">'))
        opening, name = (tag, "ol") if tag.startswith("<") else (f"<{tag}>", tag)
        items = "".join(
            f"<li>{_block(rng, depth + 1) if rng.random() < 0.3 else _inline(rng)}</li>" + rng.choice(("", "\n"))
            for _ in range(rng.randint(1, 4))
        )
        return f"{opening}\n{items}</{name}>"
    if kind < 0.75:
        lines = "\n".join(f"  {_words(rng, 3)} = {rng.randint(0, 99)} &lt; 5" for _ in range(rng.randint(0, 4)))
        language = rng.choice(("", ' class="language-python"'))
        return f"<pre><code{language}>{lines}\n</code></pre>"
    if kind < 0.85:
        head = "".join(f"<th>{_words(rng, 1)}</th>" for _ in range(rng.randint(1, 3)))
        rows = "".join(
            "<tr>" + "".join(f"<td>{_inline(rng)}</td>" for _ in range(rng.randint(1, 3))) + "</tr>"
            for _ in range(rng.randint(0, 3))
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
    if kind < 0.93:
        return f"<blockquote>{_block(rng, depth + 1)}{_block(rng, depth + 1)}</blockquote>"
    return "<hr>"


def answer(rng: random.Random) -> str:
    """An answer as the app renders it (its blocks apart by a line end, or not)."""
    return rng.choice(("\n", "", "\n\n")).join(_block(rng) for _ in range(rng.randint(1, 8)))


def _fragment(rng: random.Random) -> str:
    return "".join(rng.choice(_TAGS) if rng.random() < 0.5 else rng.choice(_TEXTS) for _ in range(rng.randint(1, 40)))


def _mangled(rng: random.Random, html: str) -> str:
    """An answer cut short, spliced with a hostile piece, or with a piece dropped."""
    at = rng.randrange(len(html) + 1)
    kind = rng.random()
    if kind < 0.3:
        return html[:at]
    if kind < 0.7:
        return html[:at] + _fragment(rng) + html[at:]
    return html[:at] + html[min(len(html), at + rng.randint(1, 40)):]


def cases(count: int, seed: int = 38) -> list[str]:
    """`count` fragments: answers, mangled answers and hostile fragments, in turn."""
    rng = random.Random(seed)
    found: list[str] = []
    for i in range(count):
        kind = i % 4
        found.append(answer(rng) if kind < 2 else _mangled(rng, answer(rng)) if kind == 2 else _fragment(rng))
    return found


GOLDEN = Path(__file__).parent / "readers" / "golden" / "htmltext.jsonl.xz"
COUNT = 2400


def outputs(convert: Callable[[str], Any], count: int = COUNT) -> list[list[Any]]:
    """[text, images] of each case, as `convert` (an `html_to_text`) gives them."""
    found = []
    for html in cases(count):
        out = convert(html)
        found.append([out.text, [list(image) for image in out.images]])
    return found


def record(convert: Callable[[str], Any]) -> None:
    """Write GOLDEN from `convert` (run once, with the implementation whose outputs are the reference)."""
    with lzma.open(GOLDEN, "wt", encoding="utf-8") as f:
        for line in outputs(convert):
            f.write(json.dumps(line, ensure_ascii=False) + "\n")


def stored() -> list[list[Any]]:
    with lzma.open(GOLDEN, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]

"""The README is the front door and docs/ the reference: every relative link in README.md and
docs/*.md points at a file that exists, and an anchor at a heading of that file (as GitHub
names headings); the README stays short and its `make` commands are the Makefile's."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.DOTALL)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^()\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)


def prose(text: str) -> str:
    """The text without code: links inside fenced blocks and code spans are not links."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, inline markup and punctuation dropped (but - and _),
    each space a hyphen."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading anchors by its text
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor of a Markdown file's headings; a repeated heading gets -1, -2 ... as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(FENCE.sub("", path.read_text())):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(path: Path) -> list[str]:
    return [t for t in LINK.findall(prose(path.read_text())) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def test_the_slugs_are_githubs():
    assert slug("Claude.ai exports (2026 downloads and older exports)") == "claudeai-exports-2026-downloads-and-older-exports"
    assert slug("gc_pause — the cyclic collector") == "gc_pause--the-cyclic-collector"
    assert slug("The data's path") == "the-datas-path"
    assert slug("Local Neo4j JVM settings (deploy/local_services.py)") == "local-neo4j-jvm-settings-deploylocal_servicespy"


def test_links_in_code_are_not_links():
    text = "see [a](a.md) and `[b](b.md)`\n\n```\n[c](c.md)\n```\n"
    assert LINK.findall(prose(text)) == ["a.md"]


def test_every_relative_link_resolves():
    checked = 0
    for page in PAGES:
        for target in links(page):
            file, _, anchor = target.partition("#")
            dest = (page.parent / file).resolve() if file else page
            assert dest.exists(), f"{page.relative_to(ROOT)}: {target}: no such file"
            if anchor:
                assert dest.suffix == ".md", f"{page.relative_to(ROOT)}: {target}: an anchor into a file that is no Markdown"
                assert anchor in anchors(dest), f"{page.relative_to(ROOT)}: {target}: no such heading in {dest.relative_to(ROOT)}"
            checked += 1
    assert checked >= 40  # the README's and the docs' links are all read (a broken pattern would find none)


def test_every_docs_page_is_in_the_index():
    index = {(ROOT / "docs" / t.partition("#")[0]).resolve() for t in links(ROOT / "docs" / "README.md")}
    for page in PAGES[1:]:
        if page.name != "README.md":
            assert page.resolve() in index, f"docs/{page.name} is not in docs/README.md"


def test_the_readme_is_a_front_door():
    assert len(README.read_bytes()) <= 20_000
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][\w-]*):", makefile, re.MULTILINE))
    blocks = "\n".join(m.group(0) for m in FENCE.finditer(README.read_text()))
    commands = set(re.findall(r"^make ([a-z][\w-]*)", blocks, re.MULTILINE))
    assert {"demo", "test"} <= commands
    assert commands <= targets, commands - targets
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^make lint\b", ci, re.MULTILINE) and re.search(r"^make test$", ci, re.MULTILINE)

"""The export formats: what each is called, where its files go and how one is rendered.

Per conversation (one file each, `exports/<format>/<name>.<ext>` in the bucket):
`chat-export-json`, `sharegpt`, `chat-export-md` (the Chat Export extension's fenced layout),
`md` (Markdown as note apps read it: front matter, then headings), `yaml`, `html`. Per partition (or per
CLI run): `sharegpt-jsonl`, one training file across all conversations. For the whole bucket
(or per CLI run): `archive`, one page listing every conversation and linking to its `html`
file, so choosing `archive` chooses `html` too (`chatetl.exports.archive`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from chatetl.exports.archive import ARCHIVE
from chatetl.exports.chat_export_json import chat_export_json_bytes, to_chat_export_json
from chatetl.exports.html import to_html
from chatetl.exports.markdown import markdown_bytes, to_markdown
from chatetl.exports.markdown_note import to_markdown_note
from chatetl.exports.meta import ExportView, encode
from chatetl.exports.sharegpt import sharegpt1_json_bytes, to_sharegpt1_json
from chatetl.exports.yaml_export import to_yaml


@dataclass(frozen=True)
class FileFormat:
    """A per-conversation format: `render` gives a view's text, `render_bytes` its file's bytes: the
    text encoded (`meta.encode`), or what `to_bytes` makes, the same bytes by a shorter way (the JSON
    formats: orjson's bytes as they come; the fenced Markdown: its common case first)."""

    name: str
    ext: str
    content_type: str
    render: Callable[[ExportView], str]
    to_bytes: Callable[[ExportView], bytes] | None = None

    def render_bytes(self, view: ExportView) -> bytes:
        return self.to_bytes(view) if self.to_bytes is not None else encode(self.render(view))


PER_CONVERSATION: dict[str, FileFormat] = {
    f.name: f
    for f in (
        FileFormat("chat-export-json", "json", "application/json", to_chat_export_json, chat_export_json_bytes),
        FileFormat("sharegpt", "json", "application/json", to_sharegpt1_json, sharegpt1_json_bytes),
        FileFormat("chat-export-md", "md", "text/markdown; charset=utf-8", to_markdown, markdown_bytes),
        FileFormat("md", "md", "text/markdown; charset=utf-8", to_markdown_note),
        FileFormat("yaml", "yaml", "application/yaml", to_yaml),
        FileFormat("html", "html", "text/html; charset=utf-8", to_html),
    )
}
TRAINING = "sharegpt-jsonl"
ALL_FORMATS: tuple[str, ...] = (*PER_CONVERSATION, TRAINING, ARCHIVE)
READABLE = ("chat-export-json", "sharegpt", "chat-export-md", "yaml", TRAINING)  # what chatetl's readers read back
# former names still understood: `md-frontmatter` was the note-app Markdown before `md` became it
# (the fenced layout that `md` used to name is `chat-export-md`)
ALIASES = {"md-frontmatter": "md"}


def parse_formats(values: str | list[str] | tuple[str, ...] | None, default: tuple[str, ...] = ALL_FORMATS) -> tuple[str, ...]:
    """`"md,html"`, `["md", "html"]` or `"all"` as an ordered tuple of known format names (a former
    name, `ALIASES`, as its format's name)."""
    if values is None:
        return default
    items = values.split(",") if isinstance(values, str) else [p for v in values for p in v.split(",")]
    names = [ALIASES.get(v.strip(), v.strip()) for v in items if v.strip()]
    if not names:
        return default
    if "all" in names:
        return ALL_FORMATS
    unknown = [n for n in names if n not in ALL_FORMATS]
    if unknown:
        raise ValueError(f"unknown export format(s): {', '.join(unknown)} (known: {', '.join(ALL_FORMATS)}, all)")
    return with_needed(names)


def with_needed(names: Iterable[str]) -> tuple[str, ...]:
    """Known format names in registry order, with the formats they need (`archive` links to `html` files)."""
    chosen = set(names)
    if ARCHIVE in chosen:
        chosen.add("html")
    return tuple(n for n in ALL_FORMATS if n in chosen)

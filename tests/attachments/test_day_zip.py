"""The day's zip holds the attachments its md and html files link (`files/<sha256><ext>`), so a person who
unzips it sees the images: every `../files/` link resolves, to the stored bytes, each file once."""

from __future__ import annotations

import re
import zipfile

from attachments.layouts import DAY, chatgpt_zip, ingested

from chatetl.exports.partition import ExportPlan, write_day_exports
from chatetl.layout import attachment_key, bundle_key
from chatetl.storage import LocalObjectStore

_LINK = re.compile(r"""(?:\]\(|src="|href=")\.\./files/([^)"]+)""")


def test_unzipped_day_resolves_every_attachment_link(tmp_path):
    store = LocalObjectStore(tmp_path / "bucket")
    ingested(store, "raw/chatgpt.zip", chatgpt_zip())
    result = write_day_exports(store, DAY, ExportPlan(bundle_formats=("md", "html")))
    store.download(bundle_key(DAY), tmp_path / "day.zip")
    with zipfile.ZipFile(tmp_path / "day.zip") as zf:
        names = zf.namelist()
        zf.extractall(tmp_path / "unzipped")
    unzipped = tmp_path / "unzipped"
    pages = [p for p in unzipped.rglob("*") if p.suffix in (".md", ".html")]
    assert {p.parent.name for p in pages} == {"md", "html"}
    linked = set()
    for page in pages:
        links = _LINK.findall(page.read_text())
        assert len(set(links)) == 3, page  # the upload, the old-style upload, the drawn image
        for name in links:
            copy = page.parent / ".." / "files" / name
            assert copy.read_bytes() == store.get_bytes(attachment_key(name.split(".")[0])), name
        linked |= set(links)
    assert sorted(n for n in names if n.startswith("files/")) == sorted(f"files/{n}" for n in linked)  # each once, none else
    assert result.bundle_files == len(names)
    first = store.get_bytes(bundle_key(DAY))
    again = write_day_exports(store, DAY, ExportPlan(bundle_formats=("md", "html")))  # (from the stored pieces)
    assert bundle_key(DAY) in again.unchanged and store.get_bytes(bundle_key(DAY)) == first


def test_zip_of_formats_without_links_holds_no_files(tmp_path):
    store = LocalObjectStore(tmp_path / "bucket")
    ingested(store, "raw/chatgpt.zip", chatgpt_zip())
    write_day_exports(store, DAY, ExportPlan(bundle_formats=("chat-export-json", "chat-export-md")))
    with zipfile.ZipFile(store.local_path(bundle_key(DAY))) as zf:
        assert not [n for n in zf.namelist() if n.startswith("files/")]
        assert zf.namelist()  # (the conversation's files are there)

"""`chatetl normalize` and `chatetl export` on local files resolve attachments as the ingest stage does:
normalize stores the files once under OUT/attachments/sha256/ and the rows name them; export copies them to
OUT/files/ so every md and html link opens, in OUT and in OUT/chats.zip."""

from __future__ import annotations

import hashlib
import json
import re
import zipfile

from attachments.layouts import chatgpt_zip, open_webui_json, png
from click.testing import CliRunner

from chatetl.cli import main
from chatetl.tables import iter_conversations

_LINK = re.compile(r"""(?:\]\(|src="|href=")\.\./files/([^)"]+)""")


def _inputs(tmp_path):
    src = tmp_path / "in"
    (src / "folder").mkdir(parents=True)
    (src / "chatgpt.zip").write_bytes(chatgpt_zip())
    with zipfile.ZipFile(src / "chatgpt.zip") as zf:
        zf.extractall(src / "folder")  # (the same export unzipped: the same files)
    (src / "owui.json").write_bytes(open_webui_json([png(31)]))
    return [str(src / "chatgpt.zip"), str(src / "folder"), str(src / "owui.json")]


def test_normalize_stores_local_attachments_once_and_rows_name_them(tmp_path):
    out = tmp_path / "tables"
    result = CliRunner().invoke(main, ["normalize", *_inputs(tmp_path), "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["attachments"] == {"rows": 2 * 5 + 2, "in_export": 2 * 4 + 1, "files": 4}  # (the drawn image also on the reply)
    stored = sorted(p for p in (out / "attachments" / "sha256").rglob("*") if p.is_file())
    assert [p.name for p in stored] == sorted(hashlib.sha256(p.read_bytes()).hexdigest() for p in stored)
    hashes = set()
    for part in sorted((out / "messages").glob("part-*.parquet")):
        for conv, _ in iter_conversations(out / "conversations" / part.name, part):
            hashes |= {a.content_hash for m in conv.messages for a in m.attachments if a.content_hash}
    assert hashes == {p.name for p in stored}


def test_export_writes_files_beside_md_and_html_and_into_the_zip(tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["export", *_inputs(tmp_path), "--out", str(out), "--format", "md,html", "--zip", "md,html", "--quiet"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["attachments"] == 4
    pages = [p for p in out.rglob("*") if p.suffix in (".md", ".html")]
    linked = set()
    for page in pages:
        for name in _LINK.findall(page.read_text()):
            assert (page.parent / ".." / "files" / name).is_file(), (page, name)
            linked.add(name)
    assert linked == {p.name for p in (out / "files").iterdir()} and len(linked) == 4
    with zipfile.ZipFile(out / "chats.zip") as zf:
        assert sorted(n for n in zf.namelist() if n.startswith("files/")) == sorted(f"files/{n}" for n in linked)

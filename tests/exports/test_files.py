"""Exported files: safe and unique names, escaped HTML, note Markdown, the training file, opt-ins, the zip,
newest-wins in the bucket and the `chatetl export` command."""

from __future__ import annotations

import html.parser
import io
import json
import unicodedata
import zipfile
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from export_inputs import T0, chat, sample_conversations, visible

from chatetl.cli import main
from chatetl.exports.files import conversation_files, training_lines
from chatetl.exports.formats import ALL_FORMATS, PER_CONVERSATION, parse_formats
from chatetl.exports.partition import ExportPlan, write_partition_exports
from chatetl.filenames import RESERVED, conversation_basename, export_basename, slug
from chatetl.layout import bundle_key, export_manifest_key, training_key
from chatetl.model import Citation
from chatetl.readers import ReadReport, read_path
from chatetl.samples import chatgpt_export
from chatetl.selection import ContentOptions
from chatetl.storage import LocalObjectStore

HOSTILE_TITLES = [
    "../x",
    "..\\..\\windows\\system32",
    "/etc/passwd",
    "a\x00b\x01c\x1fd\x7fe",
    "line\nbreak\rand\ttab",
    "\u202eexe.txt",  # right-to-left override
    "zero\u200bwidth\ufeffbom",
    "x" * 500,
    "🚀" * 500,
    "é" * 300,
    "CON",
    "con.txt",
    "NUL",
    "com1",
    "LPT9.md",
    "",
    None,
    "...",
    ". . .",
    "   ",
    "-rf",
    'a:b*c?d"e<f>g|h',
    "\ue200cite\ue201",  # private-use citation markers
]


def _assert_safe(name: str) -> None:
    assert name and "/" not in name and "\\" not in name
    assert not any(unicodedata.category(ch)[0] == "C" for ch in name), repr(name)
    assert not any(ch in '<>:"|?*' or ch.isspace() for ch in name), repr(name)
    assert not name.startswith((".", "-")) and not name.endswith((".", "-", " "))
    assert name.split(".")[0].lower() not in RESERVED
    assert len(name.encode("utf-8")) <= 200  # with a branch suffix and extension, well under 255 bytes


@pytest.mark.parametrize("title", HOSTILE_TITLES)
def test_hostile_titles_give_safe_names_inside_the_target_folder(tmp_path, title):
    conv = chat([("user", "hi"), ("assistant", "hello")], title=title)
    name = conversation_basename(conv)
    _assert_safe(name)
    assert name == conversation_basename(conv)  # deterministic
    assert name.startswith("chatgpt-") and "-2026-03-14-" in name
    for f in conversation_files(conv, PER_CONVERSATION):
        target = (tmp_path / f.path).resolve()
        assert target.parent == (tmp_path / f.format).resolve()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(f.data)  # the file system takes it
        _assert_safe(target.name)


def test_slug_keeps_readable_text_and_bounds_bytes():
    assert slug("Planning a rail trip: Vienna → Zagreb?") == "Planning-a-rail-trip-Vienna-Zagreb"
    assert slug("Привет, мир") == "Привет,-мир"
    assert slug("../x") == "x" and slug("...") == "untitled" and slug(None) == "untitled"
    assert slug("CON") == "CON-chat" and slug("con.txt") == "chat-con.txt"
    long = slug("🚀a" * 200)
    assert len(long.encode()) <= 96 and long.encode().decode() == long


def test_two_equal_titles_get_different_names_and_the_same_chat_always_the_same():
    a = chat([("user", "hi")], title="Same title", conversation_id="one")
    b = chat([("user", "hi")], title="Same title", conversation_id="two")
    c = chat([("user", "hi")], title="Same title", conversation_id="one", platform="claude-ai")
    names = {conversation_basename(x) for x in (a, b, c)}
    assert len(names) == 3
    assert conversation_basename(a) == export_basename("chatgpt", "Same title", T0, "chatgpt:one")
    # a case-insensitive file system cannot merge them either
    assert len({n.lower() for n in names}) == 3


class _Tags(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _html(conv) -> str:
    (f,) = conversation_files(conv, ["html"])
    return f.data.decode()


def test_html_escapes_everything_from_the_chat():
    evil = "<script>alert('title')</script>"
    conv = chat(
        [
            ("user", "<script>alert(1)</script> and <img src=x onerror=alert(2)> and [click](javascript:alert(3))"),
            ("assistant", '<iframe src="https://evil.example"></iframe>\n\n```html\n<script>inside code</script>\n```\n\n"quoted" & \'single\''),
        ],
        title=evil,
        model='<i onmouseover="x">gpt</i>',
        url="javascript:alert(4)",
        citations=[Citation(title="<script>src</script>", url="javascript:alert(5)"), Citation(title="ok", url="https://example.org/?a=1&b=<2>")],
    )
    page = _html(conv)
    assert "<script" not in page.lower() and "<img" not in page.lower() and "<iframe" not in page.lower()
    assert "javascript:" not in "".join(a.get("href") or "" for _, a in _parsed(page))
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # shown, not run
    assert "&lt;script&gt;alert(&#39;title&#39;)&lt;/script&gt;" in page  # the title, in <title> and <h1>
    tags = _parsed(page)
    assert not any(k.startswith("on") for _, attrs in tags for k in attrs)
    assert all(t != "script" for t, _ in tags)
    hrefs = [a["href"] for t, a in tags if t == "a"]
    assert hrefs[0] == "../archive/index.html"  # the page's own link back to the archive page, never from the chat
    hrefs = hrefs[1:]
    assert hrefs == ["https://example.org/?a=1&b=<2>"]  # the only safe link (its & and < escaped in the page)
    assert 'href="https://example.org/?a=1&amp;b=&lt;2&gt;"' in page


def _parsed(page: str) -> list[tuple[str, dict]]:
    p = _Tags()
    p.feed(page)
    return p.tags


def test_html_is_a_standalone_printable_page_with_one_section_per_turn():
    conv = chat([("user", "What is **2+2**?"), ("assistant", "It is 4.\n\n| a | b |\n|---|---|\n| 1 | 2 |")],
                citations=[Citation(title="Arithmetic", url="https://example.org/math")])
    page = _html(conv)
    tags = _parsed(page)
    names = [t for t, _ in tags]
    assert names[:3] == ["html", "head", "meta"] and "article" in names and "header" in names and "dl" in names
    sections = [a for t, a in tags if t == "section"]
    assert [s["data-role"] for s in sections] == ["user", "assistant"]
    assert names.count("h2") == 2 and "<h2>User</h2>" in page and "<h2>Assistant</h2>" in page
    assert "<strong>2+2</strong>" in page and "<table>" in page  # bodies rendered from Markdown
    assert "<ol>" in page and 'href="https://example.org/math"' in page  # sources
    assert "@media print" in page and "Content-Security-Policy" in page


def test_note_markdown_has_front_matter_then_the_visible_turns():
    conv = chat([("user", "hi: there"), ("assistant", "hello\n\n---\n\nmore")], title="yes: a title # with: colons", url="https://chatgpt.com/c/x", extras=True, branch=True)
    (f,) = conversation_files(conv, ["md"])
    text = f.data.decode()
    assert text.startswith("---\n")
    head, body = text[4:].split("\n---\n", 1)
    meta = yaml.safe_load(head)
    assert meta["title"] == "yes: a title # with: colons"
    assert meta["platform"] == "chatgpt" and meta["model"] == "gpt-4o" and meta["source"] == "chatgpt"
    assert meta["created"] == "2026-03-14T09:26:53Z" and meta["updated"] == "2026-03-14T09:31:53Z"
    assert meta["url"] == "https://chatgpt.com/c/x" and meta["messages"] == 2
    assert "## User\n\nhi: there\n" in body and "## Assistant\n\nhello\n\n---\n\nmore\n" in body
    for hidden in ("HIDDEN-CONTEXT", "REASONING-TRACE", "TOOL-CALL-INPUT", "TOOL-RESULT-OUTPUT", "ABANDONED-BRANCH"):
        assert hidden not in text


def _all_text(conv, options: ContentOptions) -> str:
    files = conversation_files(conv, PER_CONVERSATION, options)
    return "\n".join(f.data.decode() for f in files) + b"".join(training_lines(conv, options)).decode()


MARKERS = {
    "include_hidden": "HIDDEN-CONTEXT",
    "include_reasoning": "REASONING-TRACE",
    "include_tools": "TOOL-RESULT-OUTPUT",
    "include_branches": "ABANDONED-BRANCH",
}


def test_files_hold_only_the_visible_branch_by_default():
    conv = chat([("user", "question"), ("assistant", "answer")], extras=True, branch=True)
    text = _all_text(conv, ContentOptions())
    assert "question" in text and "answer" in text
    for marker in MARKERS.values():
        assert marker not in text


@pytest.mark.parametrize("option", sorted(MARKERS))
def test_each_opt_in_lets_exactly_its_part_in(option):
    conv = chat([("user", "question"), ("assistant", "answer")], extras=True, branch=True)
    text = _all_text(conv, ContentOptions(**{option: True}))
    for other, marker in MARKERS.items():
        assert (marker in text) == (other == option), (option, marker)


def test_training_file_conventions_for_opted_in_parts():
    conv = chat([("user", "question"), ("assistant", "answer")], extras=True)
    plain = [json.loads(x) for x in training_lines(conv)]
    assert plain == [{"id": "conv-1", "platform": "chatgpt", "title": "A test chat", "model": "gpt-4o",
                      "conversations": [{"from": "human", "value": "question"}, {"from": "gpt", "value": "answer"}]}]
    (full,) = [json.loads(x) for x in training_lines(conv, ContentOptions(include_reasoning=True, include_tools=True, include_hidden=True))]
    assert full["system"] == "HIDDEN-CONTEXT: custom instructions"
    froms = [m["from"] for m in full["conversations"]]
    assert froms == ["human", "gpt", "function_call", "observation", "gpt"]
    assert full["conversations"][1]["value"] == "<think>\nREASONING-TRACE: think first\n</think>"
    assert json.loads(full["conversations"][2]["value"]) == {"name": "search", "arguments": {"q": "TOOL-CALL-INPUT"}}


def test_branches_become_their_own_files_and_training_records(tmp_path):
    conv = chat([("user", "question"), ("assistant", "kept answer")], branch=True)
    files = conversation_files(conv, ["chat-export-json"], ContentOptions(include_branches=True))
    assert [Path(f.path).name.endswith("-branch-1.json") for f in files] == [False, True]
    branch = json.loads(files[1].data)
    assert branch["chat_id"] == "conv-1~branch-1" and branch["title"] == "A test chat (branch 1)"
    assert [m["text"] for m in branch["messages"]] == ["question", "ABANDONED-BRANCH: an earlier regeneration"]
    assert len(training_lines(conv, ContentOptions(include_branches=True))) == 2


def test_parse_formats():
    assert parse_formats("all") == ALL_FORMATS
    assert parse_formats(["html,md", "yaml"]) == ("md", "yaml", "html")
    with pytest.raises(ValueError, match="unknown export format"):
        parse_formats("pdf")


# ------------------------------------------------------------------------------- the bucket


def _upload(*convs):
    return [("upload-1", iter([(c, None) for c in convs]))]


def _keys(store, prefix="exports/"):
    return sorted(o.key for o in store.list(prefix))


def test_partition_exports_write_every_format_and_a_rerun_writes_nothing(tmp_path):
    store = LocalObjectStore(tmp_path)
    convs = sample_conversations()
    first = write_partition_exports(store, "2026-01-01", _upload(*convs))
    assert first.conversations == 3 and first.empty == 0 and first.skipped_older == 0
    assert first.files == {**{f: 3 for f in PER_CONVERSATION}, "sharegpt-jsonl": 1, "archive": 1}
    keys = _keys(store)
    for fmt in PER_CONVERSATION:
        assert len([k for k in keys if k.startswith(f"exports/{fmt}/")]) == 3
    assert training_key("2026-01-01") in keys and bundle_key("2026-01-01") in keys
    assert first.training_records == 3 and first.bundle_files == 9
    etags = {o.key: o.etag for o in store.list("exports/")}
    second = write_partition_exports(store, "2026-01-01", _upload(*sample_conversations()))
    assert second.written == [] and {o.key: o.etag for o in store.list("exports/")} == etags
    # the zip holds the chosen formats, and it reads back
    with zipfile.ZipFile(io.BytesIO(store.get_bytes(bundle_key("2026-01-01")))) as zf:
        assert sorted({n.split("/")[0] for n in zf.namelist()}) == ["chat-export-json", "chat-export-md", "html"]
        assert {i.date_time for i in zf.infolist()} == {(1980, 1, 1, 0, 0, 0)}
        zf.extractall(tmp_path / "unzipped")
    report = ReadReport()
    back = list(read_path(tmp_path / "unzipped" / "chat-export-md", report))
    assert not report.errors and sorted(c.key for c in back) == sorted(c.key for c in convs)


def test_a_newer_state_replaces_the_files_and_an_older_one_never_regresses(tmp_path):
    store = LocalObjectStore(tmp_path)
    plan = ExportPlan(formats=("md", "html"), bundle_formats=())
    old = chat([("user", "hi"), ("assistant", "old answer")], title="Old title")
    new = chat([("user", "hi"), ("assistant", "new answer")], title="Renamed", updated=T0 + timedelta(days=1))
    write_partition_exports(store, "2026-03-14", _upload(old), plan)
    old_keys = sorted(_keys(store, "exports/md/") + _keys(store, "exports/html/"))
    assert len(old_keys) == 2 and all("Old-title" in k for k in old_keys)

    result = write_partition_exports(store, "2026-03-15", _upload(new), plan)
    assert sorted(result.deleted) == old_keys  # the renamed conversation leaves no stale file
    (md_key,) = _keys(store, "exports/md/")
    assert "Renamed" in md_key and "new answer" in store.get_bytes(md_key).decode()
    manifest = json.loads(store.get_bytes(export_manifest_key(new.key)))
    assert manifest["files"] == {"html": _keys(store, "exports/html/"), "md": [md_key]}

    late = write_partition_exports(store, "2026-03-14", _upload(old), plan)  # a backfill of the older day
    assert late.skipped_older == 1 and late.written == [] and late.deleted == []
    assert _keys(store, "exports/md/") == [md_key] and "new answer" in store.get_bytes(md_key).decode()


def test_training_file_and_zip_hold_each_conversation_once_in_its_newest_state(tmp_path):
    store = LocalObjectStore(tmp_path)
    a_old = chat([("user", "hi"), ("assistant", "first")], conversation_id="a")
    a_new = chat([("user", "hi"), ("assistant", "second")], conversation_id="a", updated=T0 + timedelta(hours=1))
    b = chat([("user", "other"), ("assistant", "chat")], conversation_id="b")
    empty = chat([], conversation_id="c")
    uploads = [("u1", iter([(a_new, None), (b, None)])), ("u2", iter([(a_old, None), (empty, None)]))]
    result = write_partition_exports(store, "2026-03-14", uploads, ExportPlan(bundle_formats=("md", "sharegpt-jsonl")))
    assert result.empty == 1 and result.skipped_older == 1
    lines = [json.loads(x) for x in store.get_bytes(training_key("2026-03-14")).splitlines()]
    assert [(r["id"], r["conversations"][1]["value"]) for r in lines] == [("a", "second"), ("b", "chat")]
    with zipfile.ZipFile(io.BytesIO(store.get_bytes(bundle_key("2026-03-14")))) as zf:
        names = zf.namelist()
        assert len([n for n in names if n.startswith("md/")]) == 2
        assert "sharegpt-jsonl/sharegpt-2026-03-14.jsonl" in names


def test_zip_bytes_do_not_depend_on_the_order_or_the_run(tmp_path):
    convs = sample_conversations()
    s1, s2 = LocalObjectStore(tmp_path / "1"), LocalObjectStore(tmp_path / "2")
    write_partition_exports(s1, "2026-01-01", [("u", iter([(c, None) for c in convs]))])
    write_partition_exports(s2, "2026-01-01", [("u", iter([(c, None) for c in reversed(convs)]))])
    assert s1.get_bytes(bundle_key("2026-01-01")) == s2.get_bytes(bundle_key("2026-01-01"))


def test_export_plan_from_env(monkeypatch):
    monkeypatch.setenv("CHATETL_EXPORT_FORMATS", "md,html")
    monkeypatch.setenv("CHATETL_EXPORT_ZIP_FORMATS", "none")
    assert ExportPlan.from_env() == ExportPlan(formats=("md", "html"), bundle_formats=())
    monkeypatch.delenv("CHATETL_EXPORT_FORMATS")
    monkeypatch.setenv("CHATETL_EXPORT_ZIP_FORMATS", "all")
    assert ExportPlan.from_env() == ExportPlan(formats=ALL_FORMATS, bundle_formats=ALL_FORMATS)


# ------------------------------------------------------------------------------- the command line


def _chat_export_file(path: Path, chat_id: str, title: str, answer: str, exported: str) -> None:
    record = {"schema": "chat-export/1", "platform": "claude", "title": title, "chat_id": chat_id, "exported_at": exported,
              "messages": [{"role": "user", "text": "question"}, {"role": "assistant", "role_tag": "claude", "text": answer}]}
    path.write_text(json.dumps(record))


def test_cli_export_all_formats_with_a_zip(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    _chat_export_file(src / "a.json", "chat-a", "First", "answer a", "2026-03-14T10:00:00Z")
    _chat_export_file(src / "b.json", "chat-b", "../../escape", "answer b", "2026-03-14T10:00:00Z")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["export", str(src), "--out", str(out), "--format", "all", "--zip", "md,sharegpt-jsonl"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert summary["conversations"] == 2 and summary["errors"] == 0
    assert summary["written"] == {**{f: 2 for f in PER_CONVERSATION}, "sharegpt-jsonl": 2, "archive": 1}
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert len(files) == 6 * 2 + 3  # every format, the training file, the archive page, the zip
    assert all(not p.startswith("..") for p in files) and (out / "chats.zip").is_file()
    assert all(Path(p).parent.name in (*ALL_FORMATS, "") for p in files)
    with zipfile.ZipFile(out / "chats.zip") as zf:
        assert max(zf.namelist()) == "sharegpt-jsonl/sharegpt.jsonl"
    report = ReadReport()
    back = list(read_path(out / "yaml", report))
    assert not report.errors and sorted(visible(c)[1][1] for c in back) == ["answer a", "answer b"]


def test_cli_keeps_the_newest_state_of_a_chat_met_twice(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    _chat_export_file(src / "1-old.json", "chat-a", "Old name", "old answer", "2026-03-14T10:00:00Z")
    _chat_export_file(src / "2-new.json", "chat-a", "New name", "new answer", "2026-03-15T10:00:00Z")
    _chat_export_file(src / "3-old-again.json", "chat-a", "Old name", "old answer", "2026-03-14T10:00:00Z")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["export", str(src), "--out", str(out), "--format", "md", "--format", "sharegpt-jsonl"])
    assert result.exit_code == 0, result.output
    (md,) = list((out / "md").iterdir())
    assert "New-name" in md.name and "new answer" in md.read_text()
    (line,) = (out / "sharegpt-jsonl" / "sharegpt.jsonl").read_text().splitlines()
    assert json.loads(line)["conversations"][1]["value"] == "new answer"


def test_cli_opt_in_flags_and_the_environment(tmp_path, monkeypatch):
    src = tmp_path / "chatgpt.zip"
    src.write_bytes(chatgpt_export())  # "Mean of a list" has hidden custom instructions, reasoning and python tool use
    runner = CliRunner()

    def training(*args: str) -> str:
        out = tmp_path / f"out{len(list(tmp_path.iterdir()))}"
        result = runner.invoke(main, ["export", str(src), "--out", str(out), "--format", "sharegpt-jsonl", *args])
        assert result.exit_code == 0, result.output
        return (out / "sharegpt-jsonl" / "sharegpt.jsonl").read_text()

    plain = training()
    assert "<think>" not in plain and "function_call" not in plain and "I teach statistics" not in plain
    assert "<think>" in training("--include-reasoning")
    assert '"function_call"' in training("--include-tools") and "I teach statistics" in training("--include-hidden")
    assert "Regenerated" in training("--include-branches")
    monkeypatch.setenv("CHATETL_INCLUDE_REASONING", "1")
    assert "<think>" in training()
    assert "<think>" not in training("--exclude-reasoning")
    monkeypatch.setenv("CHATETL_EXPORT_INCLUDE_REASONING", "no")  # the scoped setting wins over the general one
    assert "<think>" not in training()


def test_cli_bad_input_and_bad_format(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    _chat_export_file(src / "a.json", "chat-a", "First", "answer a", "2026-03-14T10:00:00Z")
    out = tmp_path / "out"
    runner = CliRunner()
    assert runner.invoke(main, ["export", str(src), "--out", str(out), "--format", "pdf"]).exit_code == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = runner.invoke(main, ["export", str(src), str(bad), "--out", str(out), "--format", "md"])
    assert result.exit_code == 1 and "bad.json" in result.output
    assert len(list((out / "md").iterdir())) == 1  # the good input is still written

"""The CLI a person can guess: `chatetl --help` says what each command produces, each command's help
shows an example, `export` writes the archive page when no format is given, and `md` is the
note-app Markdown (its former name `md-frontmatter` still works; the fenced layout is `chat-export-md`)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from chatetl.cli import main
from chatetl.samples import chatgpt_export


def _help(*args: str) -> str:
    result = CliRunner().invoke(main, [*args, "--help"])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_command_list_says_what_each_command_produces_in_full():
    listing = _help().split("Commands:")[1].split("Exit codes:")[0]
    lines = {line.split()[0]: " ".join(line.split()[1:]) for line in listing.splitlines() if line.strip() and line.startswith("  ") and not line.startswith("   ")}
    assert sorted(lines) == ["collect", "doctor", "export", "load", "mcp", "normalize", "search"]
    text = " ".join(listing.split())
    for produced in ("archive page", "Parquet tables", "Neo4j graph", "ranked list"):
        assert produced in text
    first_words = [" ".join(v.split()[:3]) for v in lines.values()]
    assert len(set(first_words)) == len(first_words)  # no two begin alike


def test_each_command_shows_an_example_of_itself():
    for command in ("normalize", "export", "load", "search", "collect", "doctor"):
        text = _help(command)
        examples = text.split("Examples:")[1].split("Exit codes:")[0]
        assert f"chatetl {command} " in examples, command


def test_workers_is_said_in_a_users_words():
    text = " ".join(_help("normalize").split())
    assert "How many processes read the inputs at once" in text and "chatetl.normalize" not in text


def _export(tmp_path, *formats: str) -> tuple[dict, set[str]]:
    zip_path = tmp_path / "export.zip"
    zip_path.write_bytes(chatgpt_export())
    out = tmp_path / ("out-" + "-".join(formats))
    args = ["export", str(zip_path), "--out", str(out)]
    for f in formats:
        args += ["--format", f]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), {p.name for p in out.iterdir()}


def test_export_without_a_format_writes_the_archive_page_and_its_chats_pages(tmp_path):
    summary, folders = _export(tmp_path)
    assert folders == {"archive", "html"}
    assert summary["written"]["archive"] == 1 and summary["written"]["html"] == summary["exported"] > 0
    assert (tmp_path / "out-" / "archive" / "index.html").is_file()


def test_md_is_the_note_app_markdown_and_its_former_name_still_works(tmp_path):
    _, folders = _export(tmp_path, "md")
    assert folders == {"md"}
    notes = {p.name: p.read_bytes() for p in (tmp_path / "out-md" / "md").iterdir()}
    assert notes and all(data.startswith(b"---\ntitle: ") for data in notes.values())
    _, former = _export(tmp_path, "md-frontmatter")
    assert former == {"md"}
    assert {p.name: p.read_bytes() for p in (tmp_path / "out-md-frontmatter" / "md").iterdir()} == notes


def test_the_fenced_layout_has_its_own_name(tmp_path):
    _, folders = _export(tmp_path, "chat-export-md")
    assert folders == {"chat-export-md"}
    fenced = [p.read_text() for p in (tmp_path / "out-chat-export-md" / "chat-export-md").iterdir()]
    assert fenced and all(text.startswith("```md\nsys\n") for text in fenced)

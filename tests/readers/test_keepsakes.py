"""What people keep beside their chats: Claude.ai projects and memories, Gemini canvases (invented data,
in the public shapes of docs/research/export-layouts.md A13)."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import UTC, datetime

from chatetl.keepsakes import Canvas, Memory, MemoryScope, Project
from chatetl.readers import Entry, ReadReport, read_entry
from chatetl.tables.keepsakes import keepsake_rows

PROJECT = {
    "uuid": "p0000000-0000-4000-8000-000000000001", "name": "Invented project", "description": "A test project",
    "is_private": True, "is_starter_project": False, "prompt_template": "Answer in French.",
    "created_at": "2025-03-01T10:00:00.000000+00:00", "updated_at": "2025-03-02T10:00:00.000000+00:00",
    "creator": {"uuid": "aaaaaaaa-0000-4000-8000-000000000000", "full_name": "Test User"},
    "docs": [{"uuid": "d0000000-0000-4000-8000-000000000001", "filename": "glossary.md",
              "content": "# Glossary\nfold: bend twice", "created_at": "2025-03-01T10:05:00.000000+00:00"},
             {"uuid": "d0000000-0000-4000-8000-000000000002", "filename": "glossary.md", "content": "a second file of the same name"}],
}
MEMORIES = [{"conversations_memory": "**Work context**\n\nThe user tests folding widgets.",
             "project_memories": {PROJECT["uuid"]: "Prefers French answers.", "p-empty": ""},
             "account_uuid": "aaaaaaaa-0000-4000-8000-000000000000"}]


def _zip(members: dict[str, object]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, value in members.items():
            zf.writestr(name, json.dumps(value))
    return buf.getvalue()


def _read(name: str, data: bytes) -> ReadReport:
    report = ReadReport()
    assert list(read_entry(Entry.from_bytes(name, data), report)) == []
    return report


def test_projects_json_keeps_each_project_with_its_prompt_and_docs():
    report = _read("export.zip", _zip({"projects.json": [PROJECT], "users.json": [{"uuid": "u", "full_name": "N", "email_address": "e@x.invalid"}]}))
    assert report.errors == [] and report.skipped["claude-ai-sidecar file"] == 2  # (counted as before)
    [project] = report.kept
    assert isinstance(project, Project)
    assert (project.key, project.name, project.prompt_template, project.is_private, project.is_starter) == (
        "claude-ai:p0000000-0000-4000-8000-000000000001", "Invented project", "Answer in French.", True, False)
    assert project.creator_name == "Test User" and project.created_at == datetime(2025, 3, 1, 10, tzinfo=UTC)
    assert [(d.filename, d.content) for d in project.docs] == [
        ("glossary.md", "# Glossary\nfold: bend twice"), ("glossary.md", "a second file of the same name")]
    assert project.source_file == "export.zip!projects.json"


def test_a_project_file_of_the_2026_layout_and_an_empty_project():
    empty = dict(PROJECT, uuid="p-2", docs=[], prompt_template="", is_starter_project=True)
    report = _read("projects-000.zip", _zip({f"projects/{PROJECT['uuid']}.json": PROJECT, "projects/p-2.json": empty}))
    assert report.errors == []
    assert sorted((p.project_id, len(p.docs), p.prompt_template, p.is_starter) for p in report.kept if isinstance(p, Project)) == [
        ("p-2", 0, None, True), (PROJECT["uuid"], 2, "Answer in French.", False)]


def test_memories_keep_the_account_and_each_project_memory_linked_to_its_project():
    report = _read("export.zip", _zip({"memories.json": MEMORIES}))
    assert report.errors == []
    memories = [m for m in report.kept if isinstance(m, Memory)]
    assert [(m.scope, m.project_id, m.text) for m in memories] == [
        (MemoryScope.ACCOUNT, None, "**Work context**\n\nThe user tests folding widgets."),
        (MemoryScope.PROJECT, PROJECT["uuid"], "Prefers French answers."),  # (an empty one left out)
    ]
    rows = keepsake_rows(report.kept)["memories"]
    assert [r["project_key"] for r in rows] == [None, f"claude-ai:{PROJECT['uuid']}"]


def test_memory_files_of_the_newer_layout_and_an_empty_memories_object():
    newer = {"conversations_memory": "", "project_memories": {}, "memory_files": [{"path": "/profile.md", "content": "- [stated] likes tea"}]}
    report = _read("memories-000.zip", _zip({"memories/aaaa.json": newer, "memories.json": {}}))
    assert report.errors == []
    assert [(m.scope, m.path, m.text, m.key) for m in report.kept if isinstance(m, Memory)] == [
        (MemoryScope.FILE, "/profile.md", "- [stated] likes tea", "claude-ai:account:file:/profile.md")]


def test_the_same_project_twice_in_one_upload_is_one_row():
    report = _read("export.zip", _zip({"projects.json": [PROJECT], f"projects/{PROJECT['uuid']}.json": dict(PROJECT, name="Renamed")}))
    rows = keepsake_rows(report.kept, upload_key="raw/export.zip")
    assert [(r["name"], r["doc_count"], r["upload_key"]) for r in rows["projects"]] == [("Renamed", 2, "raw/export.zip")]
    assert [(r["position"], r["filename"]) for r in rows["project_docs"]] == [(0, "glossary.md"), (1, "glossary.md")]


def _canvas_rows() -> list[dict[str, object]]:
    base = {"header": "Gemini Apps", "products": ["Gemini Apps"], "activityControls": ["Gemini Apps Activity"]}
    return [
        {**base, "title": "Created Gemini Canvas titled Invented trip plan", "time": "2026-03-01T10:05:00.000Z",
         "safeHtmlItem": [{"html": "<h1>Trip plan</h1><p>Day 1: walk.</p>"}]},
        {**base, "title": "Created Gemini Canvas titled Linked canvas", "time": "2026-03-01T10:04:00.000Z",
         "details": [{"name": "From chat", "url": "https://gemini.google.com/app/0123456789abcdef"}]},
        {**base, "title": "Prompted Plan a trip", "time": "2026-03-01T10:03:00.000Z",
         "details": [{"name": "From chat", "url": "https://gemini.google.com/app/0123456789abcdef"}],
         "safeHtmlItem": [{"html": "<p>Sure.</p>"}]},
    ]


def test_gemini_canvas_rows_are_kept_linked_only_where_the_row_names_its_chat():
    report = ReadReport()
    data = json.dumps(_canvas_rows()).encode()
    convs = list(read_entry(Entry.from_bytes("Takeout/My Activity/Gemini Apps/MyActivity.json", data), report))
    assert report.errors == [] and [c.conversation_id for c in convs] == ["0123456789abcdef"]
    canvases = [c for c in report.kept if isinstance(c, Canvas)]
    assert [(c.title, c.text, c.conversation_id) for c in canvases] == [
        ("Invented trip plan", "# Trip plan\n\nDay 1: walk.", None), ("Linked canvas", None, "0123456789abcdef")]
    assert canvases[0].created_at == datetime(2026, 3, 1, 10, 5, tzinfo=UTC)
    assert canvases[0].canvas_id.startswith("canvas-") and canvases[0].canvas_id != canvases[1].canvas_id
    rows = keepsake_rows(report.kept)["canvases"]
    assert [r["conversation_key"] for r in rows] == [None, "gemini:0123456789abcdef"]


def test_worker_processes_hand_back_the_same_keepsakes_in_the_same_order(tmp_path):
    from chatetl.normalize import normalize_into
    from chatetl.tables import TableWriter

    path = tmp_path / "export.zip"
    path.write_bytes(_zip({"memories.json": MEMORIES, "projects.json": [PROJECT], "projects/p-2.json": dict(PROJECT, uuid="p-2")}))
    kept = []
    for workers in (1, 2):
        report = ReadReport()
        with TableWriter(tmp_path / f"c{workers}.parquet", tmp_path / f"m{workers}.parquet") as writer:
            normalize_into(writer, [path], report, workers)
        assert report.errors == []
        kept.append(report.kept)
    assert kept[0] == kept[1] and len(kept[0]) == 4

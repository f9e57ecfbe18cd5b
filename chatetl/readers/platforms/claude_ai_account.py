"""Claude.ai's files beside the conversations: projects (`projects.json`, or `projects/<uuid>.json` one a
project) and the account's memories (`memories.json`, or `memories/<account>.json`).

A project: {uuid, name, description, prompt_template, is_private, is_starter_project, created_at,
updated_at, creator: {uuid, full_name}, docs: [{uuid, filename, content, created_at}]}: a Project with
its docs. Memories: {conversations_memory, project_memories: {<project uuid>: text}, memory_files:
[{path, content}], account_uuid}, an object or an array of them: one Memory per text (empty ones
left out); `project_memories` is the export's one link from a memory to a project. The export's
conversations name no project (an API-shaped conversation's `project_uuid` is read by `claude_ai`).
`users.json` holds no keepsake. They are counted as skipped chat files as before; what they keep
goes to `ReadReport.kept`.

Researched from: Superkikim/nexus-ai-chat-importer (claude-types.ts: ClaudeProject, ClaudeProjectDoc),
modelcaddy/panchat (tests/fixtures/claude_project_dir.json, claude_memories_v2.json, CHANGELOG:
`projects/<uuid>.json`, `memory_files[]`), public ingest tests of `memories.json`
(`conversations_memory`, `project_memories` by project uuid, `account_uuid`).
"""

from __future__ import annotations

from typing import Any

from chatetl.keepsakes import Memory, MemoryScope, Project, ProjectDoc
from chatetl.readers.convert import raw_bytes
from chatetl.readers.entry import Entry
from chatetl.readers.fields import expect_object, keep_unknown, list_field, object_or_empty, text_or_none
from chatetl.readers.jsonscan.records import Shape, iter_records
from chatetl.readers.report import ReadReport
from chatetl.readers.timeutil import parse_iso_time

PLATFORM = "claude-ai"

KNOWN_PROJECT_FIELDS = frozenset(
    {"uuid", "name", "description", "prompt_template", "is_private", "is_starter_project", "created_at", "updated_at", "creator", "docs"}
)
_MEMORY_FIELDS = frozenset({"conversations_memory", "project_memories", "memory_files", "account_uuid"})


def read(entry: Entry, shape: Shape, report: ReadReport) -> None:
    """The projects and memories of one sidecar file, into `report.kept` (other sidecars hold none)."""
    for where, record in iter_records(entry, shape, report):
        try:
            _record(record, entry.name, report)
        except Exception as exc:  # noqa: BLE001 (a bad record must never stop the rest of the file)
            report.error(entry.name, where, f"{type(exc).__name__}: {exc}", raw=raw_bytes(record))


def _record(record: Any, file: str, report: ReadReport) -> None:
    record = expect_object(record, "a project or memories object")
    if record.keys() & {"conversations_memory", "project_memories", "memory_files"}:
        report.kept.extend(memories_from_claude_ai(record, file))
    elif "uuid" in record and record.keys() & {"prompt_template", "docs", "is_private"}:
        report.kept.append(project_from_claude_ai(record, report, file))


def project_from_claude_ai(record: dict[str, Any], report: ReadReport, file: str | None = None) -> Project:
    project_id = text_or_none(record.get("uuid"))
    if project_id is None:
        raise ValueError("project has no uuid")
    creator = object_or_empty(record, "creator")
    docs = []
    for i, doc in enumerate(list_field(record, "docs", "project docs")):
        if not isinstance(doc, dict) or not isinstance(doc.get("content"), str):
            report.unknown("claude-ai.project_doc:not-a-doc")
            continue
        docs.append(ProjectDoc(doc_id=text_or_none(doc.get("uuid")) or f"{project_id}:doc-{i}", filename=text_or_none(doc.get("filename")),
                               content=doc["content"], created_at=parse_iso_time(doc.get("created_at"))))
    extra: dict[str, Any] = {}
    keep_unknown(record, KNOWN_PROJECT_FIELDS, extra, report, "claude-ai.project_field")
    return Project(
        platform=PLATFORM, project_id=project_id, name=text_or_none(record.get("name")), description=text_or_none(record.get("description")),
        prompt_template=text_or_none(record.get("prompt_template")), created_at=parse_iso_time(record.get("created_at")),
        updated_at=parse_iso_time(record.get("updated_at")), is_private=_flag(record.get("is_private")),
        is_starter=_flag(record.get("is_starter_project")), creator_id=text_or_none(creator.get("uuid")),
        creator_name=text_or_none(creator.get("full_name")), docs=tuple(docs), extra=extra, source_file=file,
    )


def memories_from_claude_ai(record: dict[str, Any], file: str | None = None) -> list[Memory]:
    """One Memory per non-empty text of a memories object: the account's, each project's, each file's."""
    account = text_or_none(record.get("account_uuid"))
    found = []
    text = record.get("conversations_memory")
    if isinstance(text, str) and text.strip():
        found.append(Memory(PLATFORM, account, MemoryScope.ACCOUNT, text, source_file=file))
    projects = record.get("project_memories")
    for project_id, text in sorted(projects.items()) if isinstance(projects, dict) else ():
        if isinstance(text, str) and text.strip():
            found.append(Memory(PLATFORM, account, MemoryScope.PROJECT, text, project_id=project_id, source_file=file))
    for item in list_field(record, "memory_files", "memory files"):
        if isinstance(item, dict) and isinstance(item.get("content"), str) and item["content"].strip():
            found.append(Memory(PLATFORM, account, MemoryScope.FILE, item["content"], path=text_or_none(item.get("path")), source_file=file))
    return found


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None

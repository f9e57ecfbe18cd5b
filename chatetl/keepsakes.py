"""What people keep beside their chats: projects with their documents, the account's memories, canvases.

They are data of the account, not turns: the readers hand them over beside the conversations
(`ReadReport.kept`), the tables and the graph keep them. A keepsake names a conversation only where
the export itself links the two (a conversation's project uuid, a canvas row's app link); the
keys are the export's own ids, or, where it has none, a hash of what identifies the thing, so the
same keepsake read twice is one row and one node.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class ProjectDoc:
    """A document a person put in a project (its text as the export carries it)."""

    doc_id: str
    filename: str | None
    content: str
    created_at: datetime | None = None


@dataclass(frozen=True)
class Project:
    platform: str
    project_id: str
    name: str | None
    description: str | None = None
    prompt_template: str | None = None  # the project's instructions, given to every chat in it
    created_at: datetime | None = None
    updated_at: datetime | None = None
    is_private: bool | None = None
    is_starter: bool | None = None  # the platform's own sample project
    creator_id: str | None = None
    creator_name: str | None = None
    docs: tuple[ProjectDoc, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)  # fields the reader did not know, kept raw
    source_file: str | None = None

    @property
    def key(self) -> str:
        return project_key(self.platform, self.project_id)


class MemoryScope:
    ACCOUNT = "account"  # what the platform remembers across the account's chats
    PROJECT = "project"  # what it remembers within one project
    FILE = "file"  # one of the account's memory files (a path and its text)


@dataclass(frozen=True)
class Memory:
    platform: str
    account_id: str | None
    scope: str  # a MemoryScope
    text: str
    project_id: str | None = None  # the project a PROJECT memory belongs to (the export's own link)
    path: str | None = None  # a FILE memory's path
    source_file: str | None = None

    @property
    def key(self) -> str:
        where = self.project_id if self.scope == MemoryScope.PROJECT else self.path if self.scope == MemoryScope.FILE else None
        return ":".join(p for p in (self.platform, self.account_id or "account", self.scope, where) if p is not None)


@dataclass(frozen=True)
class Canvas:
    """A canvas the person created (its title, and its text where the export holds it)."""

    platform: str
    canvas_id: str
    title: str
    created_at: datetime | None = None
    text: str | None = None
    conversation_id: str | None = None  # the chat it was made in, only where the export names it
    source_file: str | None = None

    @property
    def key(self) -> str:
        return f"{self.platform}:{self.canvas_id}"


Keepsake = Project | Memory | Canvas


def project_key(platform: str, project_id: str) -> str:
    return f"{platform}:{project_id}"


def derived_id(prefix: str, *parts: str) -> str:
    """A stable id for a keepsake the export gives none: a hash of what identifies it."""
    return f"{prefix}-{hashlib.sha256(chr(10).join(parts).encode()).hexdigest()[:16]}"

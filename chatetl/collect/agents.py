"""Where each coding agent keeps its sessions on this machine, and the sessions found there.

Each agent's folder is the one the agent itself uses (its environment variable, else below the home
folder), overridable one by one. A session is one file copied as it is (Claude Code, Codex CLI,
Gemini CLI), or a bundle built from opencode's storage; it carries its agent, project and session
names, from which the bucket key is built (`chatetl.layout.agent_session_key`)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from chatetl.collect import opencode_bundles

AGENTS = ("claude-code", "codex-cli", "gemini-cli", "opencode")
_HEX_PROJECT = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Session:
    """One session to collect: a file copied as it is (`path`) or bytes built (`build`)."""

    agent: str
    parts: tuple[str, ...]  # the project, then the agent's own folders and file name below it
    modified: float  # when the agent last wrote it (epoch seconds): what Claude Code's cleanup looks at
    path: Path | None = None
    build: Callable[[], bytes] | None = field(default=None, compare=False)
    append_only: bool = True  # the agent only appends to it: a shorter copy is never newer

    @property
    def origin(self) -> str:
        return str(self.path) if self.path is not None else f"{self.agent}:{'/'.join(self.parts)}"

    @property
    def rewritten(self) -> bool:
        """A whole JSON file rewritten in place (not appended): copied only when it parses."""
        return self.path is not None and self.path.suffix == ".json"

    def read(self) -> bytes:
        if self.build is not None:
            return self.build()
        assert self.path is not None
        return self.path.read_bytes()


@dataclass(frozen=True)
class Roots:
    """Each agent's folder (None: the agent is not looked for)."""

    claude: Path | None
    codex: Path | None
    gemini: Path | None
    opencode: Path | None

    @classmethod
    def of(cls, home: Path | None = None, environ: Mapping[str, str] | None = None, **overrides: Path | None) -> Roots:
        """The agents' own defaults: `$CLAUDE_CONFIG_DIR` or `~/.claude`, `$CODEX_HOME` or `~/.codex`,
        `$GEMINI_CLI_HOME/.gemini` or `~/.gemini`, `$XDG_DATA_HOME/opencode` or `~/.local/share/opencode`;
        an override (`claude=...`) wins."""
        env = os.environ if environ is None else environ
        home = home or Path.home()
        defaults = {
            "claude": Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home / ".claude",
            "codex": Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex",
            "gemini": (Path(env["GEMINI_CLI_HOME"]) if env.get("GEMINI_CLI_HOME") else home) / ".gemini",
            "opencode": (Path(env["XDG_DATA_HOME"]) if env.get("XDG_DATA_HOME") else home / ".local" / "share") / "opencode",
        }
        for name, value in overrides.items():
            if name not in defaults:
                raise TypeError(f"no agent folder named {name!r}")
            if value is not None:
                defaults[name] = value
        return cls(**defaults)

    def only(self, agents: set[str]) -> Roots:
        """These roots for the named agents alone."""
        return Roots(
            claude=self.claude if "claude-code" in agents else None,
            codex=self.codex if "codex-cli" in agents else None,
            gemini=self.gemini if "gemini-cli" in agents else None,
            opencode=self.opencode if "opencode" in agents else None,
        )

    def by_agent(self) -> dict[str, Path | None]:
        return {"claude-code": self.claude, "codex-cli": self.codex, "gemini-cli": self.gemini, "opencode": self.opencode}


def sessions(roots: Roots) -> Iterator[Session]:
    """Every session of every agent whose folder exists, in a stable order."""
    for agent, finder in (("claude-code", _claude), ("codex-cli", _codex), ("gemini-cli", _gemini), ("opencode", _opencode)):
        root = roots.by_agent()[agent]
        if root is not None and root.is_dir():
            yield from finder(root)


def _mtime(path: Path) -> float:
    return path.stat().st_mtime


def _claude(root: Path) -> Iterator[Session]:
    # projects/<slug>/<session>.jsonl (also a legacy agent-<id>.jsonl beside them) and
    # projects/<slug>/<session>/subagents/agent-<id>.jsonl
    projects = root / "projects"
    for path in sorted(projects.glob("*/*.jsonl")):
        yield Session("claude-code", (path.parent.name, path.name), _mtime(path), path=path)
    for path in sorted(projects.glob("*/*/subagents/*.jsonl")):
        yield Session("claude-code", tuple(path.relative_to(projects).parts), _mtime(path), path=path)


def _codex(root: Path) -> Iterator[Session]:
    # sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl (a resumed session grows its old file), archived_sessions/
    # (and the TypeScript CLI's sessions/*.json, one object each)
    paths = [*root.glob("sessions/**/rollout-*.jsonl"), *root.glob("archived_sessions/rollout-*.jsonl"), *root.glob("sessions/*.json")]
    for path in sorted(paths):
        yield Session("codex-cli", (_codex_project(path), path.name), _mtime(path), path=path, append_only=path.suffix == ".jsonl")


def _codex_project(path: Path) -> str:
    """The working directory's name, from the rollout's first line (Codex keeps no project folder)."""
    try:
        with path.open("rb") as f:
            first = f.readline(1024 * 1024)
        record = json.loads(first)
    except (OSError, ValueError):
        return "codex"
    payload = record.get("payload") if isinstance(record, dict) and isinstance(record.get("payload"), dict) else record
    cwd = payload.get("cwd") if isinstance(payload, dict) else None
    if not isinstance(cwd, str) or not cwd:
        return "codex"
    return Path(cwd.replace("\\", "/")).name or "codex"


def _gemini(root: Path) -> Iterator[Session]:
    # tmp/<project>/chats/session-<time>-<id8>.jsonl (or the older .json); a sub-agent's chats/<parent>/<id>.jsonl
    for chats in sorted(root.glob("tmp/*/chats")):
        project = _gemini_project(chats.parent)
        for path in sorted([*chats.glob("session-*.json"), *chats.glob("session-*.jsonl")]):
            legacy = path.suffix == ".json"  # rewritten whole on every change, not appended
            yield Session("gemini-cli", (project, "chats", path.name), _mtime(path), path=path, append_only=not legacy)
        for path in sorted(chats.glob("*/*.jsonl")):  # (the reader finds the parent session in the folder's name)
            yield Session("gemini-cli", (project, "chats", path.parent.name, path.name), _mtime(path), path=path)


def _gemini_project(folder: Path) -> str:
    """The project's folder name: a slug, or (older CLIs) a sha256 whose `.project_root` may name the folder."""
    if _HEX_PROJECT.match(folder.name):
        try:
            named = Path((folder / ".project_root").read_text(encoding="utf-8").strip()).name
        except OSError:
            named = ""
        return named or folder.name[:12]
    return folder.name


def _opencode(root: Path) -> Iterator[Session]:
    for bundle in opencode_bundles.bundles(root):
        yield Session("opencode", (bundle.project, f"{bundle.session_id}.json"), bundle.updated, build=bundle.build, append_only=False)

"""`chatetl doctor`: which agents are here, how many of their sessions are collected, and what is at risk.

A session is collected when the bucket holds its bytes (or a longer copy of an append-only log).
Claude Code deletes session files older than `cleanupPeriodDays` (30 days by default; by the file's
mtime, at each start), Gemini CLI those older than its `general.sessionRetention.maxAge` when enabled:
a session not collected whose deadline is near or past is warned about, so it is collected (or the
setting raised) before it goes.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chatetl.collect.agents import Roots, Session, sessions
from chatetl.collect.run import State, collect

DEFAULT_CLEANUP_DAYS = 30
WARN_DAYS = 3.0  # a session this close to its deadline is at risk


@dataclass
class AgentHealth:
    agent: str
    root: str | None
    found: bool
    sessions: int = 0
    collected: int = 0
    not_collected: int = 0


@dataclass
class Checkup:
    agents: list[AgentHealth] = field(default_factory=list)
    cleanup_days: int | None = None  # Claude Code's effective cleanupPeriodDays
    gemini_retention_days: float | None = None  # Gemini CLI's general.sessionRetention.maxAge, when enabled
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "agents": [vars(a) for a in self.agents],
            "claude_cleanup_period_days": self.cleanup_days,
            "gemini_retention_days": self.gemini_retention_days,
            "warnings": self.warnings,
        }


def cleanup_period_days(claude_root: Path, managed: tuple[Path, ...] = ()) -> int:
    """Claude Code's `cleanupPeriodDays`: a managed settings file's wins over the user's; 30 when unset."""
    days = DEFAULT_CLEANUP_DAYS
    for path in (claude_root / "settings.json", *managed):
        try:
            value = json.loads(path.read_text(encoding="utf-8")).get("cleanupPeriodDays")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            days = value
    return days


_AGE_UNITS = {"h": 1 / 24, "d": 1.0, "w": 7.0, "m": 30.0}


def gemini_retention_days(gemini_root: Path) -> float | None:
    """Gemini CLI's session retention (`general.sessionRetention` of its settings.json: `enabled`, `maxAge`
    such as "30d"), in days; None when it is off or unset (older CLIs keep sessions)."""
    try:
        settings = json.loads((gemini_root / "settings.json").read_text(encoding="utf-8"))
        retention = settings["general"]["sessionRetention"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(retention, dict) or retention.get("enabled") is not True:
        return None
    age = retention.get("maxAge")
    if not isinstance(age, str) or len(age) < 2 or age[-1] not in _AGE_UNITS or not age[:-1].isdigit():
        return None
    return int(age[:-1]) * _AGE_UNITS[age[-1]]


MANAGED_SETTINGS = (
    Path("/etc/claude-code/managed-settings.json"),
    Path("/Library/Application Support/ClaudeCode/managed-settings.json"),
    Path("C:/ProgramData/ClaudeCode/managed-settings.json"),
)


def checkup(store: Any, roots: Roots, state: State, now: float | None = None,
            managed: tuple[Path, ...] = MANAGED_SETTINGS) -> Checkup:
    """The agents' health: a dry collect run (nothing written) tells which sessions are not collected."""
    now = time.time() if now is None else now
    found = list(sessions(roots))
    result = Checkup()
    pending: list[Session] = []
    for agent, root in roots.by_agent().items():
        if root is None:
            continue
        mine = [s for s in found if s.agent == agent]
        health = AgentHealth(agent, str(root), root.is_dir(), sessions=len(mine))
        for s in mine:
            outcome = collect(store, [s], state, dry_run=True)
            if outcome.copied or outcome.retry:
                health.not_collected += 1
                pending.append(s)
            else:
                health.collected += 1
        result.agents.append(health)
    if roots.claude is not None and roots.claude.is_dir():
        days = result.cleanup_days = cleanup_period_days(roots.claude, managed)
        _warn_cleanup(result, [s for s in pending if s.agent == "claude-code"], days, now, "Claude Code", "cleanupPeriodDays")
    if roots.gemini is not None and roots.gemini.is_dir():
        retention = result.gemini_retention_days = gemini_retention_days(roots.gemini)
        if retention is not None:
            _warn_cleanup(result, [s for s in pending if s.agent == "gemini-cli"], retention, now, "Gemini CLI",
                          "general.sessionRetention.maxAge")
    return result


def _warn_cleanup(result: Checkup, pending: list[Session], days: float, now: float, agent: str, setting: str) -> None:
    deadline = days * 86400.0
    past = [s for s in pending if now - s.modified >= deadline]
    near = [s for s in pending if 0 <= deadline - (now - s.modified) < WARN_DAYS * 86400.0]
    if past:
        result.warnings.append(
            f"{len(past)} {agent} session(s) not collected are older than {setting} ({days:g} days): the agent's next "
            f"start deletes them; run `chatetl collect` now"
        )
    if near:
        result.warnings.append(
            f"{len(near)} {agent} session(s) not collected reach {setting} ({days:g} days) within {WARN_DAYS:g} days: "
            f"run `chatetl collect` (or schedule it: docs/collect.md), or raise the setting"
        )

"""`chatetl doctor`: the coding agents found here, their sessions collected and not, and what is at risk.

    chatetl doctor [--to FOLDER|s3://BUCKET/PREFIX] [--agent A ...] [--home DIR] [--claude-dir DIR] ... [--json]

A line per agent (its folder, sessions found, collected, not collected), then a warning when Claude
Code's cleanupPeriodDays (~/.claude/settings.json, 30 days by default) would delete sessions not yet
collected. Nothing is copied: `chatetl collect` does that.
"""

from __future__ import annotations

from pathlib import Path

import click

from chatetl.cli.collect import agent_options, destination, roots_and_state
from chatetl.cli.options import OK, USAGE_OR_GRAPH
from chatetl.cli.terminal import json_line, one_line

EXIT_CODES = """\b
Exit codes:
  0  no session at risk
  1  a warning: sessions not collected that an agent is about to delete
  2  a usage error, or no bucket to compare with (set CHATETL_STORE or --to)"""


@click.command("doctor", epilog=EXIT_CODES)
@agent_options
@click.option("--json", "as_json", is_flag=True, default=False, help="One JSON object on stdout instead of lines.")
def doctor(to: str | None, agents: tuple[str, ...], home: Path | None, claude_dir: Path | None, codex_dir: Path | None,
           gemini_dir: Path | None, opencode_dir: Path | None, state_file: Path | None, as_json: bool) -> None:
    """Which agents are here, how many sessions are collected, and which are about to be purged."""
    from chatetl.collect.doctor import checkup

    try:
        store = destination(to)
    except click.UsageError as exc:
        click.echo(f"error: {exc.message}", err=True)
        raise SystemExit(USAGE_OR_GRAPH) from None
    roots, state = roots_and_state(store, agents, home, state_file, claude_dir=claude_dir, codex_dir=codex_dir,
                                   gemini_dir=gemini_dir, opencode_dir=opencode_dir)
    result = checkup(store, roots, state)
    if as_json:
        click.echo(json_line(result.as_dict()))
    else:
        for a in result.agents:
            where = one_line(a.root or "")
            if not a.found:
                click.echo(f"{a.agent}: not found ({where})")
                continue
            click.echo(f"{a.agent}: {a.sessions} sessions, {a.collected} collected, {a.not_collected} not collected ({where})")
        if result.cleanup_days is not None:
            click.echo(f"claude-code cleanupPeriodDays: {result.cleanup_days}")
        for warning in result.warnings:
            click.echo(f"warning: {warning}", err=True)
    raise SystemExit(1 if result.warnings else OK)

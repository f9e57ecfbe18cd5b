"""`chatetl doctor`: the coding agents found here, their sessions collected and not, and what is at risk.

    chatetl doctor [--to FOLDER|s3://BUCKET/PREFIX] [--agent A ...] [--home DIR] [--claude-dir DIR] ... [--json]

A line per agent (its folder, sessions found, collected, not collected), then a warning when Claude
Code's cleanupPeriodDays (~/.claude/settings.json, 30 days by default) would delete sessions not yet
collected. Nothing is copied: `chatetl collect` does that.
"""

from __future__ import annotations

from typing import Any

import click

from chatetl.cli.collect import agent_options, where_to
from chatetl.cli.options import OK, with_examples
from chatetl.cli.terminal import json_line, one_line

EXIT_CODES = """\b
Exit codes:
  0  no session at risk
  1  a warning: sessions not collected that an agent is about to delete
  2  a usage error, or no bucket to compare with (set CHATETL_STORE or --to)"""


@click.command("doctor", epilog=with_examples("chatetl doctor", "chatetl doctor --json", codes=EXIT_CODES))
@agent_options
@click.option("--json", "as_json", is_flag=True, default=False, help="One JSON object on stdout instead of lines.")
def doctor(as_json: bool, **where: Any) -> None:
    """Which agents are here, how many sessions are collected, and which are about to be purged."""
    from chatetl.collect.doctor import checkup

    store, roots, state = where_to(where)
    result = checkup(store, roots, state)
    if as_json:
        click.echo(json_line(result.as_dict()))
    else:
        for a in result.agents:
            folder = one_line(a.root or "")
            if not a.found:
                click.echo(f"{a.agent}: not found ({folder})")
                continue
            click.echo(f"{a.agent}: {a.sessions} sessions, {a.collected} collected, {a.not_collected} not collected ({folder})")
        if result.cleanup_days is not None:
            click.echo(f"claude-code cleanupPeriodDays: {result.cleanup_days}")
        for warning in result.warnings:
            click.echo(f"warning: {warning}", err=True)
    raise SystemExit(1 if result.warnings else OK)

"""`chatetl collect`: copy coding agents' sessions (Claude Code, Codex CLI, Gemini CLI, opencode) to the bucket.

    chatetl collect [--to FOLDER|s3://BUCKET/PREFIX] [--agent A ...] [--home DIR] [--claude-dir DIR]
                    [--codex-dir DIR] [--gemini-dir DIR] [--opencode-dir DIR] [--state FILE] [--dry-run]
                    [--watch] [--every SECONDS]

New and grown sessions go to `raw/agents/<agent>/<project>/<session>.<ext>` of the configured
bucket (CHATETL_STORE ...) or `--to`; safe to run every few minutes (docs/collect.md gives a
schedule per OS). Prints one JSON summary line a run.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from chatetl.cli.options import OK, USAGE_OR_GRAPH, with_examples
from chatetl.cli.terminal import json_line

EXIT_CODES = """\b
Exit codes:
  0  the run finished (sessions being written are taken by a later run)
  2  a usage error, or no bucket to collect to (set CHATETL_STORE or --to)"""


def agent_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Where to look (each agent's folder) and where to collect to: shared by collect and doctor."""
    options = [
        click.option("--to", "to", default=None, metavar="FOLDER|s3://BUCKET/PREFIX",
                     help="Collect into this folder or bucket (default: the configured bucket, CHATETL_STORE ...)."),
        click.option("--agent", "agents", multiple=True, type=click.Choice(["claude-code", "codex-cli", "gemini-cli", "opencode"]),
                     help="Only these agents (repeatable; default: all)."),
        click.option("--home", type=click.Path(file_okay=False, path_type=Path), default=None,
                     help="The home folder the agents' folders are below (default: yours)."),
        click.option("--claude-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                     help="Claude Code's folder (default: $CLAUDE_CONFIG_DIR or ~/.claude)."),
        click.option("--codex-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                     help="Codex CLI's folder (default: $CODEX_HOME or ~/.codex)."),
        click.option("--gemini-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                     help="Gemini CLI's folder (default: $GEMINI_CLI_HOME/.gemini or ~/.gemini)."),
        click.option("--opencode-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                     help="opencode's data folder (default: $XDG_DATA_HOME/opencode or ~/.local/share/opencode)."),
        click.option("--state", "state_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     help="What was copied, to skip unchanged files unread (default: one per bucket under ~/.local/state/chatetl/)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def destination(to: str | None) -> Any:
    """The store to collect into: `--to` (a folder, or s3://bucket/prefix), else the configured bucket."""
    from chatetl.settings import Settings
    from chatetl.storage import LocalObjectStore, S3ObjectStore, s3_client

    settings = Settings.from_env()
    if to and to.startswith("s3://"):
        bucket, _, prefix = to.removeprefix("s3://").partition("/")
        if not bucket:
            raise click.BadParameter(f"{to!r}: no bucket", param_hint="--to")
        return S3ObjectStore(s3_client(settings.s3_endpoint_url, settings.aws_region), bucket, prefix.strip("/"))
    if to:
        return LocalObjectStore(to)
    from chatetl.cli.search import settings_store

    store = settings_store(settings)
    if store is None:
        raise click.UsageError("no bucket to collect to: set CHATETL_STORE (and its bucket or folder) or give --to")
    return store


def where_to(options: dict[str, Any]) -> tuple[Any, Any, Any]:
    """(store, roots, state) from `agent_options`' values; no bucket to collect to ends the command (exit 2)."""
    from chatetl.collect.agents import AGENTS, Roots
    from chatetl.collect.run import State

    try:
        store = destination(options["to"])
    except click.UsageError as exc:
        click.echo(f"error: {exc.message}", err=True)
        raise SystemExit(USAGE_OR_GRAPH) from None
    home: Path | None = options["home"]
    roots = Roots.of(home, claude=options["claude_dir"], codex=options["codex_dir"], gemini=options["gemini_dir"],
                     opencode=options["opencode_dir"]).only(set(options["agents"] or AGENTS))
    state_file: Path | None = options["state_file"]
    if state_file is None:  # one per destination: what was copied to one bucket says nothing of another
        tag = hashlib.sha256(store.uri("").encode()).hexdigest()[:12]
        state_file = (home or Path.home()) / ".local" / "state" / "chatetl" / f"collect-{tag}.json"
    return store, roots, State(state_file)


@click.command(
    "collect",
    epilog=with_examples(
        "chatetl collect --to ~/agent-sessions",
        "chatetl collect --watch --every 300", codes=EXIT_CODES,
    ),
)
@agent_options
@click.option("--dry-run", is_flag=True, default=False, help="Say what would be copied; copy nothing.")
@click.option("--watch", is_flag=True, default=False, help="Keep collecting, a run every --every seconds, until stopped.")
@click.option("--every", type=click.FloatRange(min=1.0), default=300.0, show_default=True, help="Seconds between runs with --watch.")
def collect(dry_run: bool, watch: bool, every: float, **where: Any) -> None:
    """Copy new and grown coding-agent sessions to the bucket's raw/agents/ (never deleting any)."""
    from chatetl.collect.agents import sessions
    from chatetl.collect.run import collect as collect_run

    store, roots, state = where_to(where)
    while True:
        outcome = collect_run(store, sessions(roots), state, dry_run=dry_run)
        click.echo(json_line({"to": store.uri("raw/agents/"), "dry_run": dry_run, **outcome.summary()}))
        if not watch:
            break
        try:
            time.sleep(every)
        except KeyboardInterrupt:
            break
    raise SystemExit(OK)

"""The command line: the same library functions the Dagster assets call, one module per command.

Each command's module is imported when that command runs (`chatetl normalize` never imports the
exporters' Markdown, Jinja2 and YAML, nor the graph driver). What they share: `options` (`--quiet`,
`--progress`, the exit codes), `inputs` (where they find their inputs) and `progress` (the bar on stderr)."""

from __future__ import annotations

import errno
import importlib
from typing import Any

import click

from chatetl.cli.options import EXIT_CODES, INPUT_ERRORS

_COMMANDS = {
    "normalize": "chatetl.cli.normalize:normalize",
    "export": "chatetl.cli.export:export",
    "load": "chatetl.cli.load:load",
    "search": "chatetl.cli.search:search",
    "collect": "chatetl.cli.collect:collect",
    "doctor": "chatetl.cli.doctor:doctor",
    "mcp": "chatetl.mcp.command:mcp",
}
# what `chatetl --help` says of each command: what it produces, in the order a newcomer uses them
# (listed from here, so the help imports no command)
_SUMMARIES = {
    "export": "Files to open and keep: an archive page, Markdown, HTML, JSON ...",
    "normalize": "Two Parquet tables, conversations and messages, for DuckDB or pandas.",
    "load": "A Neo4j graph of the chats, with their text for search (needs Neo4j).",
    "search": "Search the chats `load` put into Neo4j: a ranked list of conversations.",
    "collect": "Copies of coding agents' sessions (Claude Code, Codex, Gemini CLI, opencode) before they are purged.",
    "doctor": "Which coding agents' sessions are collected, and which would be lost.",
    "mcp": "An MCP server so an AI assistant can search and read your chats (needs Neo4j).",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_COMMANDS})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in _COMMANDS and name not in self.commands:
            module, attr = _COMMANDS[name].split(":")
            self.add_command(getattr(importlib.import_module(module), attr), name)
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl(list(_SUMMARIES.items()))

    def invoke(self, ctx: click.Context) -> Any:
        """The command; an output it cannot write (a full disk, temp or `--out`; a folder it may not
        write) ends it with one line naming the file and the cause, never a traceback (exit 1)."""
        from chatetl.cli.terminal import os_error

        try:
            return super().invoke(ctx)
        except OSError as exc:
            if exc.errno == errno.EPIPE:  # stdout closed (`| head`): click exits quietly
                raise
            click.echo(f"error: {os_error(exc)}", err=True)
            ctx.exit(INPUT_ERRORS)


def version() -> str:
    """The installed distribution's version (pyproject.toml's), or what a source tree without it has."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("chatetl")
    except PackageNotFoundError:
        return "0+unknown (not installed: pip install -e .)"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    # Looked up only when asked: importlib.metadata (and the email package it imports) would add to every
    # other command's start-up (bench/RESULTS.md).
    if value and not ctx.resilient_parsing:
        click.echo(f"chatetl {version()}")
        ctx.exit()


@click.group(cls=_LazyGroup, epilog=EXIT_CODES)
@click.option("-V", "--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and exit.")
def main() -> None:
    """chatetl: your AI-chat exports (ChatGPT, Claude, Gemini, DeepSeek, Grok ...) as files to
    open, tables, a graph and search.

    \b
    Start here:
      chatetl export ~/Downloads/chatgpt-export.zip --out out
      then open out/archive/index.html in a browser.

    INPUT is a zip as the platform gave it, a folder, a file, or s3://bucket/prefix; the format is
    found from the content. Each command prints a one-line JSON summary on stdout; errors, and a
    progress bar when stderr is a terminal, go to stderr. `chatetl COMMAND --help` tells more."""


__all__ = ["main"]

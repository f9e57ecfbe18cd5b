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


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_COMMANDS})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in _COMMANDS and name not in self.commands:
            module, attr = _COMMANDS[name].split(":")
            self.add_command(getattr(importlib.import_module(module), attr), name)
        return super().get_command(ctx, name)

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
    """chatetl: AI-chat exports into normalized tables, a Neo4j graph, RAG text and files.

    Each command prints a one-line JSON summary on stdout; errors, and a progress bar when stderr
    is a terminal, go to stderr. `chatetl COMMAND --help` tells a command's options."""


__all__ = ["main"]

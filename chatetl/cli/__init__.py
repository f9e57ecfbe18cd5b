"""The command line: the same library functions the Dagster assets call, one module per command.

Each command's module is imported when that command runs (`chatetl normalize` never imports
the exporters' Markdown, Jinja2 and YAML, nor the graph driver)."""

from __future__ import annotations

import importlib

import click

from chatetl.cli.normalize import iter_inputs

_COMMANDS = {
    "normalize": "chatetl.cli.normalize:normalize",
    "export": "chatetl.cli.export:export",
    "load": "chatetl.cli.load:load",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_COMMANDS})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in _COMMANDS and name not in self.commands:
            module, attr = _COMMANDS[name].split(":")
            self.add_command(getattr(importlib.import_module(module), attr), name)
        return super().get_command(ctx, name)


@click.group(cls=_LazyGroup)
def main() -> None:
    """chatetl: AI-chat exports into normalized tables, a Neo4j graph, RAG text and files."""


__all__ = ["iter_inputs", "main"]

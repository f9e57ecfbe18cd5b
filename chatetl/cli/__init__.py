"""The command line: the same library functions the Dagster assets call, one module per command."""

from __future__ import annotations

import click

from chatetl.cli.export import export
from chatetl.cli.load import load
from chatetl.cli.normalize import iter_inputs, normalize


@click.group()
def main() -> None:
    """chatetl: AI-chat exports into normalized tables, a Neo4j graph, RAG text and files."""


main.add_command(normalize)
main.add_command(export)
main.add_command(load)

__all__ = ["iter_inputs", "main"]

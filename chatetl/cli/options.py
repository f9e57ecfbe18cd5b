"""What every command shares: `--quiet`, `--progress`, the exit codes and how each command's help ends with them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

# the codes the commands exit with (click's own: 2 for a usage error, 1 for Ctrl-C)
OK, INPUT_ERRORS, USAGE_OR_GRAPH = 0, 1, 2

EXIT_CODES = """\b
Exit codes:
  0  every input was read and everything written
  1  an input had errors: each is on stderr and counted in the summary's
     "errors"; the good inputs were still written. Also: the command
     stopped (Ctrl-C, an output it could not write)
  2  a usage error: an unknown option, a bad value or setting;
     load: the graph could not be written (Neo4j unreachable or refusing)"""


def quiet_and_progress(command: Callable[..., Any]) -> Callable[..., Any]:
    """`--quiet` and `--progress/--no-progress` on a command (keyword arguments `quiet`, `progress`)."""
    command = click.option(
        "--progress/--no-progress", "progress", default=None,
        help="Show a progress bar on stderr (default: when stderr is a terminal, unless --quiet).",
    )(command)
    return click.option(
        "-q", "--quiet", is_flag=True, default=False,
        help="No progress bar and no line per input error on stderr (the summary counts them, the exit code tells); a fatal error is still said.",
    )(command)


def report_errors(errors: list[Any], quiet: bool) -> None:
    """One `error: ...` line per input error on stderr, unless quiet."""
    if quiet:
        return
    for err in errors:
        click.echo(f"error: {err}", err=True)

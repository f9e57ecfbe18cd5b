"""What every command shares: `--quiet`, `--progress`, the exit codes and how each command's help
ends with them, the input errors on stderr, and an output that cannot be written said in one line."""

from __future__ import annotations

import errno
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from chatetl.cli.terminal import one_line, os_error

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


def with_examples(*lines: str, codes: str = EXIT_CODES) -> str:
    """A command's epilog: its examples (kept as written: click does not rewrap them), then its exit codes."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines) + "\n\n" + codes


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
        click.echo(f"error: {one_line(str(err))}", err=True)


class Stop:
    __slots__ = ("reason",)

    def __init__(self) -> None:
        self.reason: str | None = None  # why the command stopped writing, on one line (None: it did not)


@contextmanager
def output_errors(*folders: str) -> Iterator[Stop]:
    """A command's writing into `folders`: an OSError in it (a full disk, temp or the output folder;
    a folder it may not write) ends the block, its cause on one line in `.reason` (with the folders
    when the error names no file), so the command can still say what it did. A closed stdout
    (`| head`) is left to click, which exits quietly."""
    stop = Stop()
    try:
        yield stop
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            raise
        where = "" if exc.filename or not folders else one_line(f"(writing to {' or '.join(folders)})")
        stop.reason = f"{os_error(exc)} {where}".rstrip()

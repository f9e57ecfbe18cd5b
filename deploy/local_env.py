#!/usr/bin/env python3
"""Run a command with deploy/local.env's settings as defaults (the real environment wins).

    python deploy/local_env.py [KEY=VALUE ...] -- COMMAND [ARG ...]

KEY=VALUE pairs are more defaults, between the environment and the file (e.g. `make ui` passes
CHATETL_STORE=s3 and DAGSTER_HOME). The command starts with the environment it needs (boto3
reads the S3 keys from it, Dagster its home); no running process has its os.environ written.
The env file is parsed by chatetl.settings.read_env_file, as everything else that reads it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import NoReturn

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from chatetl.settings import local_environment


def exec_with_local_env(command: list[str], defaults: Mapping[str, str] | None = None) -> NoReturn:
    """Replace this process with `command`, its environment completed from the file."""
    os.execvpe(command[0], command, local_environment(defaults=defaults))


def ensure_local_env(defaults: Mapping[str, str] | None = None) -> None:
    """Run this script again with the local environment unless it already has it (a no-op then)."""
    if local_environment(defaults=defaults) != dict(os.environ):
        exec_with_local_env([sys.executable, *sys.argv], defaults)


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    split = argv.index("--")
    defaults = {}
    for pair in argv[:split]:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            print(f"not KEY=VALUE: {pair!r}", file=sys.stderr)
            return 2
        defaults[key] = value
    exec_with_local_env(argv[split + 1:], defaults)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

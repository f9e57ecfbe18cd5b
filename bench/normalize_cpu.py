"""`chatetl normalize` on one process: the CPU seconds (user + system) of the code checked out beside
other git revisions, runs alternating (the order reversed every other round), median per revision.

CPU time, not wall time: on this shared 2-core machine other jobs change a run's wall time by
several times, its CPU time by a few percent. The tables are not compared here (normalize_throughput.py
does, and the golden tests do). `--instructions` counts instead the instructions of one run of each
revision under valgrind's callgrind (about 50 times slower, the same count whatever the load): what tells
a few percent apart where CPU seconds drift by ten; `--mb 1e-6` leaves the start-up alone.

    .venv/bin/python bench/normalize_cpu.py --revs 219c0a4 --mb 50 --runs 7
    .venv/bin/python bench/normalize_cpu.py --revs 219c0a4 --mb 10 --instructions
"""

from __future__ import annotations

import argparse
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
from chatgpt_shaped import write_chatgpt_file
from normalize_throughput import baseline_checkout, byte_compile_chatetl, normalize_cmd

PY = sys.executable


def cpu_seconds(cmd: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def instructions(cmd: list[str], tmp: Path) -> int:
    """The instructions `cmd` executes (callgrind's `Collected`), its children not followed."""
    grind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp / 'callgrind.out'}"]
    at = cmd.index(PY)  # (valgrind runs the interpreter, after `env` has set its folder and path)
    done = subprocess.run(cmd[:at] + grind + cmd[at:], check=True, capture_output=True, text=True)
    return int(re.findall(r"Collected : (\d+)", done.stderr)[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--revs", default="219c0a4", help="comma-separated git revisions to compare with the checkout")
    parser.add_argument("--mb", type=float, default=50, help="size of the generated ChatGPT-shaped file")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--instructions", action="store_true", help="one run each under callgrind: instructions, not CPU seconds")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        data = tmp / "conversations.json"
        write_chatgpt_file(data, int(args.mb * 1e6))
        byte_compile_chatetl()
        codes = {"now": REPO}
        for rev in args.revs.split(","):
            codes[rev] = baseline_checkout(rev, tmp / f"rev-{rev}")
        seconds: dict[str, list[float]] = {name: [] for name in codes}
        try:
            if args.instructions:
                for name, code in codes.items():
                    shutil.rmtree(tmp / "out", ignore_errors=True)
                    seconds[name].append(instructions(normalize_cmd(code, data, tmp / "out", 1), tmp) / 1e9)
            for r in range(0 if args.instructions else args.runs):
                for name in list(codes)[:: 1 if r % 2 == 0 else -1]:
                    out = tmp / "out"
                    shutil.rmtree(out, ignore_errors=True)
                    seconds[name].append(cpu_seconds(normalize_cmd(codes[name], data, out, 1)))
        finally:
            for name, code in codes.items():
                if name != "now":
                    subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(code)], check=False)
        now = statistics.median(seconds["now"])
        what, unit = ("billion instructions, one run under callgrind", "G") if args.instructions else (
            f"CPU seconds, median of {args.runs} alternating runs", "s")
        print(f"chatetl normalize, {args.mb:g} MB ChatGPT-shaped, 1 process: {what}")
        for name, values in seconds.items():
            median = statistics.median(values)
            print(f"{name:>10}  {median:6.2f} {unit}   speed now/{name}: {median / now:.3f}   runs: {' '.join(f'{v:.2f}' for v in values)}")


if __name__ == "__main__":
    main()

"""Rate and peak RSS of reading a Gemini Takeout `MyActivity.json` of a few sizes, now and at a baseline commit.

The file is generated (bench/platforms/gemini.py: seeded rows, newest first) at each size, then read by
`chatetl.readers.platforms.gemini.read` in a process of its own (peak RSS is the process's), with the
library as it is now and as it was at the baseline (`git archive <baseline> chatetl`, the whole package:
the HTML converter is part of the reader), and beside them the bare `orjson.loads` of the same bytes, in
a process of its own too; the three alternate, and each figure is the median of the runs. The rate is
the bare parse's seconds over the reader's (1.0: as fast as the parse), by the clock and by the process's
CPU time (the steadier of the two on a shared machine, where waiting for a core counts in the clock). Memory flat in the file's size:
the rows past the held budget (MAX_HELD_BYTES of text) and their bookkeeping go to disk.

    .venv/bin/python bench/gemini_memory.py [--sizes 10,40] [--runs 5] [--baseline ed0b4a3]
"""

from __future__ import annotations

import argparse
import io
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# one read in a process of its own, the library taken from argv[1]; prints "<peak RSS MiB> <seconds> <CPU seconds> <conversations>"
_READ = """
import resource, sys, time
sys.path.insert(0, sys.argv[1])
from chatetl.readers import Entry, ReadReport
from chatetl.readers.jsonscan.records import Shape
from chatetl.readers.platforms.gemini import read
start, cpu = time.perf_counter(), time.process_time()
count = sum(1 for _ in read(Entry.from_path(sys.argv[2]), Shape.ARRAY, ReadReport()))
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, time.perf_counter() - start, time.process_time() - cpu, count)
"""
# the bare parse of the same bytes (read before the clock starts), in a process of its own
_PARSE = """
import resource, sys, time
import orjson
data = open(sys.argv[2], "rb").read()
start, cpu = time.perf_counter(), time.process_time()
parsed = orjson.loads(data)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, time.perf_counter() - start, time.process_time() - cpu, len(parsed))
"""


def run_once(script: str, library: Path, data: Path) -> tuple[float, float, float, int]:
    out = subprocess.run([sys.executable, "-c", script, str(library), str(data)], capture_output=True, text=True, check=True)
    rss, seconds, cpu, count = out.stdout.split()
    return float(rss), float(seconds), float(cpu), int(count)


def baseline_library(commit: str, folder: Path) -> Path:
    """The `chatetl` package as it was at `commit`, unpacked under `folder`."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "chatetl"], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10,40", help="file sizes in MB")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", default="ed0b4a3")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from bench.platforms.gemini import write

    with tempfile.TemporaryDirectory() as folder:
        cases = {
            "now": (_READ, ROOT),
            "baseline": (_READ, baseline_library(args.baseline, Path(folder, "baseline"))),
            "parse": (_PARSE, ROOT),
        }
        print(
            "| file MB | conversations | parse s (CPU s) | now s (CPU s) | baseline s (CPU s) | now rate (CPU) "
            "| baseline rate (CPU) | now peak RSS MiB | baseline peak RSS MiB |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        )
        for mb in (int(s) for s in args.sizes.split(",")):
            data = Path(folder, f"MyActivity-{mb}.json")
            write(data, mb << 20)
            runs: dict[str, list[tuple[float, float, float, int]]] = {name: [] for name in cases}
            for _ in range(args.runs):
                for name, (script, library) in cases.items():
                    runs[name].append(run_once(script, library, data))
            rss = {name: statistics.median(r[0] for r in found) for name, found in runs.items()}
            secs = {name: statistics.median(r[1] for r in found) for name, found in runs.items()}
            cpu = {name: statistics.median(r[2] for r in found) for name, found in runs.items()}
            rate = {name: f"{secs['parse'] / secs[name]:.3f} ({cpu['parse'] / cpu[name]:.3f})" for name in ("now", "baseline")}
            print(
                f"| {mb} | {runs['now'][0][3]:,} | {secs['parse']:.3f} ({cpu['parse']:.3f}) | {secs['now']:.2f} ({cpu['now']:.2f}) "
                f"| {secs['baseline']:.2f} ({cpu['baseline']:.2f}) | {rate['now']} | {rate['baseline']} | {rss['now']:.0f} "
                f"| {rss['baseline']:.0f} |",
                flush=True,
            )
            data.unlink()


if __name__ == "__main__":
    main()

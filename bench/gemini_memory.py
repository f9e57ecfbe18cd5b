"""Peak RSS of reading a Gemini Takeout `MyActivity.json` of a few sizes, now and at a baseline commit.

The file is generated (bench/platforms/gemini.py: seeded rows, newest first) at each size, then read by
`chatetl.readers.platforms.gemini.read` in a process of its own (peak RSS is the process's), the current
module and the baseline's (`git show <baseline>:chatetl/readers/platforms/gemini.py`, loaded beside the
rest of the current library) alternating. Memory flat in the file's size: the rows past the held
budget (MAX_HELD_BYTES of text) and their bookkeeping go to disk.

    .venv/bin/python bench/gemini_memory.py [--sizes 25,100,200] [--runs 1] [--baseline 9cca595]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULE = "chatetl/readers/platforms/gemini.py"

# one read in a process of its own: the module file to load, the input; prints "<peak RSS MiB> <seconds> <conversations>"
_READ = """
import importlib.util, resource, sys, time
sys.path.insert(0, sys.argv[3])
from chatetl.readers import Entry, ReadReport
from chatetl.readers.jsonscan.records import Shape
spec = importlib.util.spec_from_file_location("bench_gemini", sys.argv[1])
module = importlib.util.module_from_spec(spec)
sys.modules["bench_gemini"] = module
spec.loader.exec_module(module)
start = time.perf_counter()
count = sum(1 for _ in module.read(Entry.from_path(sys.argv[2]), Shape.ARRAY, ReadReport()))
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, time.perf_counter() - start, count)
"""


def read_once(module: Path, data: Path) -> tuple[float, float, int]:
    out = subprocess.run([sys.executable, "-c", _READ, str(module), str(data), str(ROOT)], capture_output=True, text=True, check=True)
    rss, seconds, count = out.stdout.split()
    return float(rss), float(seconds), int(count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="25,100,200", help="file sizes in MB")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--baseline", default="9cca595")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from bench.platforms.gemini import write

    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder, "gemini_baseline.py")
        base.write_bytes(subprocess.run(["git", "-C", str(ROOT), "show", f"{args.baseline}:{MODULE}"], capture_output=True, check=True).stdout)
        versions = {"now": ROOT / MODULE, "baseline": base}
        print("| file MB | conversations | now peak RSS MiB | baseline peak RSS MiB | now s | baseline s |\n|---:|---:|---:|---:|---:|---:|")
        for mb in (int(s) for s in args.sizes.split(",")):
            data = Path(folder, f"MyActivity-{mb}.json")
            write(data, mb << 20)
            runs: dict[str, list[tuple[float, float, int]]] = {name: [] for name in versions}
            for _ in range(args.runs):
                for name, module in versions.items():
                    runs[name].append(read_once(module, data))
            rss = {name: statistics.median(r[0] for r in found) for name, found in runs.items()}
            secs = {name: statistics.median(r[1] for r in found) for name, found in runs.items()}
            print(f"| {mb} | {runs['now'][0][2]:,} | {rss['now']:.0f} | {rss['baseline']:.0f} | {secs['now']:.1f} | {secs['baseline']:.1f} |", flush=True)
            data.unlink()


if __name__ == "__main__":
    main()

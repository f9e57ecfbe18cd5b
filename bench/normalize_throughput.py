"""Throughput and peak memory of `chatetl normalize` on ChatGPT-shaped files, beside baselines.

Prints, for each size (20 MB and 200 MB by default), MB/s and peak RSS of:
- json.load (the baseline: the whole file in memory),
- ijson item iteration (the streaming parser alone),
- chatetl normalize (detect, stream, canonical model, branch resolution, Parquet).
Each runs in its own process so peak RSS is its own.

    .venv/bin/python bench/normalize_throughput.py [--sizes 20,200] [--keep DIR]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from chatgpt_shaped import write_chatgpt_file  # noqa: E402

PY = sys.executable
CASES = {
    "json.load (baseline)": "import json,sys; d=json.load(open(sys.argv[1],'rb')); print(len(d))",
    "ijson items": "import ijson,sys; print(sum(1 for _ in ijson.items(open(sys.argv[1],'rb'),'item',use_float=True)))",
    "chatetl normalize": None,
}


def run(case: str, path: Path, out: Path) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of one case in a fresh process."""
    if CASES[case] is None:
        cmd = [PY, "-m", "chatetl.cli", "normalize", str(path), "--out", str(out)]
    else:
        cmd = [PY, "-c", CASES[case], str(path)]
    wrapper = [PY, "-c", (
        "import resource,subprocess,sys,time;"
        "t=time.perf_counter();r=subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL);"
        "e=time.perf_counter()-t;"
        "print(e, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss/1024, r.returncode)"
    )] + cmd
    line = subprocess.run(wrapper, capture_output=True, text=True, check=True).stdout.split()
    if line[2] != "0":
        raise SystemExit(f"{case} failed on {path}")
    return float(line[0]), float(line[1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="20,200", help="file sizes in MB")
    ap.add_argument("--keep", type=Path, help="keep generated files here")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="chatetl-bench-"))
    work = args.keep or tmp
    work.mkdir(parents=True, exist_ok=True)
    print(f"{'size':>8}  {'case':<22} {'seconds':>8} {'MB/s':>8} {'peak RSS MB':>12}")
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            path = work / f"chatgpt-{size}mb.json"
            if not path.exists():
                write_chatgpt_file(path, size * 1_000_000)
            mb = path.stat().st_size / 1e6
            for case in CASES:
                out = tmp / f"out-{size}"
                secs, rss = run(case, path, out)
                print(f"{mb:>6.0f}MB  {case:<22} {secs:>8.2f} {mb / secs:>8.1f} {rss:>12.0f}", flush=True)
                shutil.rmtree(out, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Throughput and peak memory of `chatetl normalize`, side by side with the parse ceilings, in one run.

For each input (ChatGPT-shaped files of 20 and 200 MB by default, 1 GB with --sizes 20,200,1000;
a 200 MB Claude.ai conversations.json; a zip of 4 sharded ChatGPT files, read from the zip),
prints MB/s (median of --runs) and peak RSS of:
- bare ijson: `ijson.items` over the records (the streaming parser alone, yajl2_c),
- split+orjson: chatetl.readers.splitter cutting the array, orjson decoding each record (the ceiling),
- normalize 1 proc: `chatetl normalize` (detect, read, canonical model, branches, Parquet),
- normalize 2 cores: not built yet (a process pool over records or members; see the note printed),
and normalize's ratio to bare ijson measured in the same run (the target: >= 0.75 with both cores).
Each case runs in its own process, so peak RSS is its own. With --compare (default on the
200 MB ChatGPT file) the tables of the fast path and of the reference path (ijson behind the
DepthGuard, Table.from_pylist) are compared with Table.equals, row order included.

    .venv/bin/python bench/normalize_throughput.py [--sizes 20,200] [--runs 3] [--keep DIR] [--no-compare]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from chatgpt_shaped import write_chatgpt_file, write_claude_file, write_sharded_zip  # noqa: E402

PY = sys.executable
_MEMBERS = (
    "import sys,zipfile\n"
    "def members(p):\n"
    "    if not p.endswith('.zip'):\n"
    "        yield open(p,'rb'); return\n"
    "    zf=zipfile.ZipFile(p)\n"
    "    for i in zf.infolist():\n"
    "        if i.filename.startswith('conversations-'): yield zf.open(i)\n"
)
CASES = {
    "bare ijson": _MEMBERS + "import ijson\nprint(sum(sum(1 for _ in ijson.items(f,'item',use_float=True)) for f in members(sys.argv[1])))",
    "split+orjson": _MEMBERS + "from chatetl.readers.splitter import ArraySplitter\nprint(sum(sum(1 for _ in ArraySplitter(f)) for f in members(sys.argv[1])))",
    "normalize 1 proc": None,
}
COMPARE = """
import sys
import pyarrow.parquet as pq
from chatetl.readers import ReadReport, jsonstream, read_path
from chatetl.tables import TableWriter
jsonstream.FAST = False
report = ReadReport()
out = sys.argv[2]
with TableWriter(out + "/c.parquet", out + "/m.parquet", columnar=False) as w:
    for conv in read_path(sys.argv[1], report):
        w.add(conv)
fast = sys.argv[3]
ok = all(pq.read_table(f"{out}/{a}.parquet").equals(pq.read_table(f"{fast}/{b}/part-0.parquet"))
         for a, b in (("c", "conversations"), ("m", "messages")))
print("EQUAL" if ok else "DIFFERENT")
"""


def timed(cmd: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of one command in a fresh process."""
    wrapper = [PY, "-c", (
        "import resource,subprocess,sys,time;"
        "t=time.perf_counter();r=subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL);"
        "e=time.perf_counter()-t;"
        "print(e, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss/1024, r.returncode)"
    )] + cmd
    line = subprocess.run(wrapper, capture_output=True, text=True, check=True).stdout.split()
    if line[2] not in ("0",):
        raise SystemExit(f"{cmd} failed")
    return float(line[0]), float(line[1])


def case_cmd(case: str, path: Path, out: Path) -> list[str]:
    if CASES[case] is None:
        return [PY, "-m", "chatetl.cli", "normalize", str(path), "--out", str(out)]
    return [PY, "-c", CASES[case], str(path)]


def inputs(work: Path, sizes: list[int]) -> list[tuple[str, Path, float]]:
    """(label, path, unpacked MB) of every input, generated once (kept with --keep)."""
    out = []
    for size in sizes:
        p = work / f"chatgpt-{size}mb.json"
        if not p.exists():
            write_chatgpt_file(p, size * 1_000_000)
        out.append((f"chatgpt {size}MB", p, p.stat().st_size / 1e6))
    p = work / "claude-200mb.json"
    if not p.exists():
        write_claude_file(p, 200_000_000)
    out.append(("claude-ai 200MB", p, p.stat().st_size / 1e6))
    p = work / "chatgpt-sharded-200mb.zip"
    size_file = work / "chatgpt-sharded-200mb.size"
    if not p.exists() or not size_file.exists():
        size_file.write_text(str(write_sharded_zip(p, 200_000_000)))
    out.append(("sharded zip 200MB", p, int(size_file.read_text()) / 1e6))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="20,200", help="ChatGPT file sizes in MB")
    ap.add_argument("--runs", type=int, default=3, help="runs per case (the median is printed)")
    ap.add_argument("--keep", type=Path, help="keep generated files here")
    ap.add_argument("--no-compare", action="store_true", help="skip the reference-path table comparison")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="chatetl-bench-"))
    work = args.keep or tmp
    work.mkdir(parents=True, exist_ok=True)
    names = list(CASES) + ["normalize 2 cores"]
    print(f"{'input':<18}" + "".join(f" {n + ' MB/s':>22} {'RSS MB':>7}" for n in names) + f" {'1 proc/ijson':>13}")
    try:
        for label, path, mb in inputs(work, [int(s) for s in args.sizes.split(",")]):
            row = {}
            for case in CASES:
                runs = []
                for _ in range(args.runs):
                    out = tmp / "out"
                    runs.append(timed(case_cmd(case, path, out)))
                    if not (case == "normalize 1 proc" and label == "chatgpt 200MB" and not args.no_compare):
                        shutil.rmtree(out, ignore_errors=True)
                row[case] = (mb / statistics.median(r[0] for r in runs), max(r[1] for r in runs))
            cells = "".join(f" {row[n][0]:>22.1f} {row[n][1]:>7.0f}" for n in CASES)
            cells += f" {'n/a':>22} {'':>7}"
            print(f"{label:<18}{cells} {row['normalize 1 proc'][0] / row['bare ijson'][0]:>13.2f}", flush=True)
            if label == "chatgpt 200MB" and not args.no_compare:
                ref = tmp / "ref"
                ref.mkdir(exist_ok=True)
                verdict = subprocess.run([PY, "-c", COMPARE, str(path), str(ref), str(tmp / "out")],
                                         capture_output=True, text=True, check=True).stdout.strip()
                print(f"{'':<18} fast path vs reference path tables on {label}: {verdict}", flush=True)
                shutil.rmtree(tmp / "out", ignore_errors=True)
                shutil.rmtree(ref, ignore_errors=True)
        print("targets: normalize >= 50 MB/s in 1 process, >= 100 MB/s and >= 0.75 x bare ijson on 2 cores, "
              "peak RSS <= 128 MB per process; 'normalize 2 cores' (a process pool) is not built yet")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

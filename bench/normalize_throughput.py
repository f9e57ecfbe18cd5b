"""Throughput and peak memory of `chatetl normalize`, side by side with the parse ceilings, in one run.

For each input (ChatGPT-shaped files of 20 and 200 MB by default, 1 GB with --sizes 20,200,1000;
a 200 MB Claude.ai conversations.json; a zip of 4 sharded ChatGPT files, read from the zip),
prints MB/s (median of --runs) and peak RSS of:
- bare ijson: `ijson.items` over the records (the streaming parser alone, yajl2_c),
- split+orjson: chatetl.readers.jsonscan.splitter cutting the array, orjson decoding each record (the ceiling),
- normalize 1 proc: `chatetl normalize` (detect, read, canonical model, branches, Parquet),
- normalize 2 cores: `chatetl normalize --workers 2` (chatetl.normalize: the file in byte ranges, or the zip's
  members, each to its Parquet part by whichever of this process and its one worker is free),
- 2 x 1 proc at once: two independent one-process runs of the file side by side (both files' bytes
  counted): what the two cores give this work at all, shared caches and all (the 2-core ceiling),
and normalize's ratios to bare ijson, of 2 cores to 1 process and of 2 cores to that ceiling, measured in the
same run (the targets: >= 0.75 of bare ijson with both cores, and faster than one process). Under the zip: bare
ijson over its members inflated by ISA-L, as normalize inflates them (chatetl.readers.inputs.member_stream; the row's bare
ijson inflates with zipfile's zlib, about half as fast), and 2 cores' ratio to it. Each case runs in its
own process; peak RSS is the largest of its processes (the workers' too, sampled from /proc while it
runs), the target being per process; beside it, in brackets, the largest anonymous memory (RssAnon, sampled
every 50 ms) of one process: RSS less the pages of the shared libraries it maps (pyarrow's are 48 MB on disk,
and how much of them a process holds mapped depends on the kernel: 69 MB of files on this one). Under each
input: whether the 2-core tables equal the one process's (Table.equals, row order included).
--baseline REV: first, the same inputs normalized by the code of a git revision (a worktree of its own) beside the
code checked out, on 1 process and 2 cores, the four cases alternating in each run, their tables compared
(`against_baseline`); --only-baseline: that table alone.
chatetl's modules are byte-compiled first, as an install does (byte_compile_chatetl).
Under the table: the start-up every case pays (`chatetl normalize` of a one-conversation file, beside bare ijson on
it) and each ChatGPT file's one-process rate without it; the floor of this design on 2 cores (`floor`: what any
reader that decodes each record with orjson and writes these Parquet tables costs with no logic of its own, as a
rate and as a ratio to bare ijson: where it is under 0.75, no change to the readers' Python reaches that target);
and (--one-conversation MB, default 200, 0 to skip) what a file holding one conversation that long costs: one
record, held whole while it is read.
--profile N: the top N functions of the one-process normalize of the largest ChatGPT file up to
200 MB by cumulative share of samples (py-spy, from the venv; the Parquet thread's own samples apart).
--s3: the 200 MB ChatGPT file and the sharded zip read from the S3 server of the environment (deploy/local.env's
local SeaweedFS unless set; `make services` starts it), put under a prefix of their own and removed after:
`chatetl normalize s3://...` in one process and by default (two cores: the array file from the stream, the zip
copied first: chatetl.normalize.sources), and the normalize asset's step (chatetl.ingest.upload, its
tables written under that prefix) with one and two workers; runs alternate, medians of --runs; the tables of each
pair compared.

    .venv/bin/python bench/normalize_throughput.py [--sizes 20,200] [--runs 3] [--keep DIR] [--profile 5]
        [--one-conversation 200] [--s3] [--baseline REV [--only-baseline]]
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from chatgpt_shaped import (
    write_chatgpt_file,
    write_claude_file,
    write_one_conversation,
    write_sharded_zip,
)

PY = sys.executable
REPO = Path(__file__).resolve().parent.parent
# `members(path)`: the file, or a zip's conversations-* members opened by `opener` (zipfile's own: its zlib)
_MEMBERS = (
    "import sys,zipfile\n"
    "def members(p):\n"
    "    if not p.endswith('.zip'):\n"
    "        yield open(p,'rb'); return\n"
    "    zf=zipfile.ZipFile(p)\n"
    "    for i in zf.infolist():\n"
    "        if i.filename.startswith('conversations-'): yield {opener}(i)\n"
)
_BARE_IJSON = "import ijson\nprint(sum(sum(1 for _ in ijson.items(f,'item',use_float=True)) for f in members(sys.argv[1])))"
CASES = {
    "bare ijson": _MEMBERS.format(opener="zf.open") + _BARE_IJSON,
    "split+orjson": _MEMBERS.format(opener="zf.open") + "from chatetl.readers.jsonscan.splitter import ArraySplitter\nprint(sum(sum(1 for _ in ArraySplitter(f)) for f in members(sys.argv[1])))",
    "normalize 1 proc": None,
    "normalize 2 cores": None,
    "2 x 1 proc at once": None,
}
# bare ijson over the zip's members inflated as normalize inflates them (ISA-L: chatetl.readers.inputs.member_stream), beside
# the row's bare ijson (zipfile's own zlib): the zip's ceiling with normalize's inflater
_ISAL_MEMBERS = "from chatetl.readers.inputs.member_stream import open_member\n" + _MEMBERS.format(opener="(lambda i: open_member(zf,i))")
ISAL_IJSON = _ISAL_MEMBERS + _BARE_IJSON
# Runs a command; prints its seconds, the peak RSS (MB) of the largest of its processes (VmHWM of
# every descendant, sampled every 50 ms: forkserver workers are not children of the command) and its exit code.
_TIMED = r"""
import os, resource, subprocess, sys, threading, time
def tree(root):
    kids = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                kids.setdefault(int(open(f"/proc/{p}/stat").read().rsplit(") ", 1)[1].split()[1]), []).append(int(p))
            except (OSError, IndexError, ValueError):
                pass
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += kids.get(p, [])
    return out
peak = anon = 0
def watch(pid):
    global peak, anon
    while True:
        for p in tree(pid):
            try:
                for line in open(f"/proc/{p}/status"):
                    if line.startswith("VmHWM"):
                        peak = max(peak, int(line.split()[1]) / 1024)
                    elif line.startswith("RssAnon"):
                        anon = max(anon, int(line.split()[1]) / 1024)
            except OSError:
                pass
        time.sleep(0.05)
t = time.perf_counter()
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
threading.Thread(target=watch, args=(proc.pid,), daemon=True).start()
rc = proc.wait()
e = time.perf_counter() - t
print(e, max(peak, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024), rc, anon)
"""


SAME_TABLES = """
import sys
import pyarrow.parquet as pq
a, b = sys.argv[1], sys.argv[2]
ok = all(pq.read_table(f"{a}/{t}").equals(pq.read_table(f"{b}/{t}")) for t in ("conversations", "messages"))  # (every part)
print("EQUAL" if ok else "DIFFERENT")
"""


# The floor of this design: CPU seconds of what any reader that decodes each record with orjson and writes these
# tables pays whatever its own logic costs: the split+orjson pass over the records, and the Parquet writing of the
# tables normalize wrote (read back, written again by a TableWriter, a batch's row groups at a time)
_CPU = "import resource\ndef cpu():\n    r = resource.getrusage(resource.RUSAGE_SELF)\n    return r.ru_utime + r.ru_stime\n"
SPLIT_CPU = (_CPU + _ISAL_MEMBERS
             + "from chatetl.readers.jsonscan.splitter import ArraySplitter\nc = cpu()\n"
               "n = sum(sum(1 for _ in ArraySplitter(f)) for f in members(sys.argv[1]))\nprint(cpu() - c)\n")
WRITE_CPU = _CPU + """
import sys
from pathlib import Path
import pyarrow.parquet as pq
from chatetl.tables import TableWriter
def groups(table):
    return [f.read_row_group(i) for p in sorted(Path(sys.argv[1], table).glob("*.parquet")) for f in [pq.ParquetFile(p)]
            for i in range(f.num_row_groups)]
convs, msgs = groups("conversations"), groups("messages")
assert len(convs) == len(msgs)  # (a batch: one row group of each)
c = cpu()
with TableWriter(sys.argv[2] + "/c.parquet", sys.argv[2] + "/m.parquet") as w:
    for pair in zip(convs, msgs):
        w.write_tables(*pair)
print(cpu() - c)
"""


def cpu_seconds(script: str, *args: str) -> float:
    return float(subprocess.run([PY, "-c", script, *args], capture_output=True, text=True, check=True).stdout.split()[-1])


def timed(cmd: list[str]) -> tuple[float, float, float]:
    """(seconds, peak RSS in MB of its largest process, the largest anonymous memory in MB of one) of one command in a
    fresh process."""
    wrapper = [PY, "-c", _TIMED] + cmd
    line = subprocess.run(wrapper, capture_output=True, text=True, check=True).stdout.split()
    if line[2] not in ("0",):
        raise SystemExit(f"{cmd} failed")
    return float(line[0]), float(line[1]), float(line[3])


def case_cmd(case: str, path: Path, out: Path) -> list[str]:
    if case == "normalize 1 proc":
        return [PY, "-m", "chatetl.cli", "normalize", str(path), "--out", str(out), "--workers", "1"]
    if case == "normalize 2 cores":
        return [PY, "-m", "chatetl.cli", "normalize", str(path), "--out", str(out), "--workers", "2"]
    if case == "2 x 1 proc at once":  # two independent one-process runs of the file side by side: what 2 cores give this work
        one = f"{PY} -m chatetl.cli normalize {shlex.quote(str(path))} --workers 1 --out"
        a, b = (shlex.quote(str(out / n)) for n in ("a", "b"))
        return ["sh", "-c", f"{one} {a} >/dev/null & p=$!; {one} {b} >/dev/null; r=$?; wait $p && exit $r"]
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


def byte_compile_chatetl() -> None:
    """Byte-compile chatetl's modules (into their __pycache__, ignored by git) as pip does when it installs a package:
    where PYTHONDONTWRITEBYTECODE is set (this machine sets it) an editable install otherwise compiles every
    module it imports again in each run, ~0.08 s of each `chatetl normalize` here that an installed one never pays."""
    import compileall

    import chatetl

    compileall.compile_dir(Path(chatetl.__file__).parent, quiet=1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="20,200", help="ChatGPT file sizes in MB")
    ap.add_argument("--runs", type=int, default=3, help="runs per case (the median is printed)")
    ap.add_argument("--keep", type=Path, help="keep generated files here")
    ap.add_argument("--baseline", metavar="REV", help="first, `chatetl normalize` on 1 process and 2 cores with the code of this "
                    "git revision (a worktree of its own) beside the code checked out, runs alternating, tables compared")
    ap.add_argument("--only-baseline", action="store_true", help="with --baseline: that table alone")
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="print the top N of a py-spy profile")
    ap.add_argument("--one-conversation", type=int, default=200, metavar="MB",
                    help="also time a file holding one conversation of this many MB (0: skip)")
    ap.add_argument("--s3", action="store_true", help="also read the 200 MB files from the environment's S3 server")
    args = ap.parse_args()
    if args.s3:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "deploy"))
        from local_env import ensure_local_env

        ensure_local_env()  # (the local services' settings, as every bench that talks to them)
    byte_compile_chatetl()
    tmp = Path(tempfile.mkdtemp(prefix="chatetl-bench-"))
    work = args.keep or tmp
    work.mkdir(parents=True, exist_ok=True)
    try:
        files = inputs(work, [int(s) for s in args.sizes.split(",")])
        if args.baseline:
            against_baseline(files, args.baseline, args.runs, tmp)
            if args.only_baseline:
                return
        names = list(CASES)
        print(f"{'input':<18}" + "".join(f" {n + ' MB/s':>22} {'RSS (anon)':>10}" for n in names)
              + f" {'1 proc/ijson':>13} {'2 cores/ijson':>14} {'2 cores/1 proc':>15} {'2 cores/2x1 at once':>20}")
        one_proc_seconds = {}
        floors: dict[str, tuple[float, float, float, float]] = {}
        for label, path, mb in files:
            row = {}
            for case in CASES:
                runs = []
                for _ in range(args.runs):
                    out = tmp / {"normalize 2 cores": "out2", "2 x 1 proc at once": "outx"}.get(case, "out")
                    shutil.rmtree(out, ignore_errors=True)
                    runs.append(timed(case_cmd(case, path, out)))
                done = 2 * mb if case == "2 x 1 proc at once" else mb  # (that case reads the file twice)
                row[case] = (done / statistics.median(r[0] for r in runs), max(r[1] for r in runs), max(r[2] for r in runs))
            one_proc_seconds[label] = mb / row["normalize 1 proc"][0]
            cells = "".join(f" {row[n][0]:>22.1f} {f'{row[n][1]:.0f} ({row[n][2]:.0f})':>10}" for n in CASES)
            ijson_rate, one, two = row["bare ijson"][0], row["normalize 1 proc"][0], row["normalize 2 cores"][0]
            pair = row["2 x 1 proc at once"][0]
            print(f"{label:<18}{cells} {one / ijson_rate:>13.2f} {two / ijson_rate:>14.2f} {two / one:>15.2f} {two / pair:>20.2f}", flush=True)
            same = subprocess.run([PY, "-c", SAME_TABLES, str(tmp / "out"), str(tmp / "out2")],
                                  capture_output=True, text=True, check=True).stdout.strip()
            print(f"{'':<18} 2 cores vs 1 process tables: {same}", flush=True)
            with tempfile.TemporaryDirectory(dir=tmp) as again:
                floors[label] = (mb, ijson_rate, statistics.median(cpu_seconds(SPLIT_CPU, str(path)) for _ in range(args.runs)),
                                 statistics.median(cpu_seconds(WRITE_CPU, str(tmp / "out"), again) for _ in range(args.runs)))
            if path.suffix == ".zip":
                seconds = statistics.median(timed([PY, "-c", ISAL_IJSON, str(path)])[0] for _ in range(args.runs))
                print(f"{'':<18} bare ijson over the members inflated by ISA-L, as normalize inflates them: {mb / seconds:.1f} MB/s; "
                      f"2 cores / it: {two * seconds / mb:.2f}", flush=True)
        start = start_up(work, tmp, args.runs, files, one_proc_seconds)
        floor(floors, start)
        if args.one_conversation:
            one_conversation(work, tmp, args.runs, args.one_conversation)
        if args.s3:
            from_s3(files, tmp, args.runs)
        print("targets: normalize >= 50 MB/s in 1 process, >= 100 MB/s and >= 0.75 x bare ijson on 2 cores (and "
              "faster than 1 process), peak RSS <= 128 MB per process")
        if args.profile:
            chatgpt = [f for f in files if f[0].startswith("chatgpt ") and f[2] <= 201] or files[:1]  # the largest to 200 MB
            profile(chatgpt[-1][1], tmp / "out", args.profile)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def baseline_checkout(rev: str, where: Path) -> Path:
    """The code of `rev` in a worktree of its own (removed by the caller), byte-compiled like the one checked out."""
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(where), rev], check=True)
    subprocess.run([PY, "-m", "compileall", "-q", str(where / "chatetl")], check=True, capture_output=True)
    return where


def normalize_cmd(code: Path, path: Path, out: Path, workers: int | None) -> list[str]:
    """`chatetl normalize` run with the chatetl package of `code`: from its folder (`-m` puts the working folder first
    on the path, ahead of the installed package) and on PYTHONPATH (for the processes it starts)."""
    cmd = ["env", "-C", str(code), f"PYTHONPATH={code}", PY, "-m", "chatetl.cli", "normalize", "-q", str(path), "--out", str(out)]
    return cmd + (["--workers", str(workers)] if workers else [])


def against_baseline(files: list[tuple[str, Path, float]], rev: str, runs: int, tmp: Path) -> None:
    """`chatetl normalize` with the code of `rev` and with the code checked out, on 1 process and on 2 cores, the four
    cases alternating within each run (the host's drift falls on all of them alike): MB/s, median of `runs`, and the
    ratios now / baseline; under each input, whether the tables of all four are equal (Table.equals, row order)."""
    short = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", rev], capture_output=True, text=True, check=True).stdout.strip()
    base = baseline_checkout(short, tmp / "baseline")
    cases = {"baseline 1 proc": (base, 1), "now 1 proc": (REPO, 1), "baseline 2 cores": (base, 2), "now 2 cores": (REPO, 2)}
    print(f"normalize now against {short}: MB/s, median of {runs} alternating runs (peak RSS of the largest process)", flush=True)
    print(f"{'input':<18}" + "".join(f" {c:>22}" for c in cases) + f" {'now/base 1 proc':>16} {'now/base 2 cores':>17}", flush=True)
    try:
        for label, path, mb in files:
            seconds: dict[str, list[float]] = {c: [] for c in cases}
            peak = dict.fromkeys(cases, 0.0)
            for _ in range(runs):
                for case, (code, workers) in cases.items():
                    out = tmp / "vs" / case.replace(" ", "-")
                    shutil.rmtree(out, ignore_errors=True)
                    s, rss, _ = timed(normalize_cmd(code, path, out, workers))
                    seconds[case].append(s)
                    peak[case] = max(peak[case], rss)
            rate = {c: mb / statistics.median(seconds[c]) for c in cases}
            print(f"{label:<18}" + "".join(f" {rate[c]:>13.1f} ({peak[c]:>4.0f} MB)" for c in cases)
                  + f" {rate['now 1 proc'] / rate['baseline 1 proc']:>16.3f} {rate['now 2 cores'] / rate['baseline 2 cores']:>17.3f}", flush=True)
            first = tmp / "vs" / "baseline-1-proc"
            same = [subprocess.run([PY, "-c", SAME_TABLES, str(first), str(tmp / "vs" / c.replace(" ", "-"))], capture_output=True,
                                   text=True, check=True).stdout.strip() for c in list(cases)[1:]]
            print(f"{'':<18} tables against baseline 1 proc: " + ", ".join(f"{c} {s}" for c, s in zip(list(cases)[1:], same, strict=True)),
                  flush=True)
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(base)], check=False)


def start_up(work: Path, tmp: Path, runs: int, files: list[tuple[str, Path, float]], one_proc_seconds: dict[str, float]) -> float:
    """What every run above pays before its first record: `chatetl normalize` (one process) of a one-conversation
    ChatGPT file, beside bare ijson on it (Python and ijson's start-up), median of `runs`; and each ChatGPT file's
    one-process rate without that start-up (the 20 MB target's 0.4 s is about what the start-up alone takes)."""
    path = work / "chatgpt-one-conversation.json"
    if not path.exists():
        write_chatgpt_file(path, 1)
    seconds = {}
    for case in ("bare ijson", "normalize 1 proc"):
        times = []
        for _ in range(runs):
            out = tmp / "out"
            shutil.rmtree(out, ignore_errors=True)
            times.append(timed(case_cmd(case, path, out))[0])
        seconds[case] = statistics.median(times)
    net = ", ".join(f"{label} {mb / (one_proc_seconds[label] - seconds['normalize 1 proc']):.1f} MB/s"
                    for label, _, mb in files
                    if label.startswith("chatgpt ") and one_proc_seconds[label] > seconds["normalize 1 proc"])
    print(f"start-up (one-conversation file): normalize 1 proc {seconds['normalize 1 proc']:.2f} s, bare ijson "
          f"{seconds['bare ijson']:.2f} s; normalize 1 proc without its start-up: {net}", flush=True)
    return seconds["normalize 1 proc"]


def floor(floors: dict[str, tuple[float, float, float, float]], start: float) -> None:
    """The fastest this design can go on 2 cores, whatever its readers do: the CPU seconds every such run pays
    (split+orjson over the records, and writing the tables normalize wrote: SPLIT_CPU, WRITE_CPU, medians) shared
    perfectly by both cores, after the start-up, with no reader logic, no Arrow conversion and no hashing at all;
    beside it, that rate's ratio to bare ijson (the target: 0.75)."""
    print("floor on 2 cores (split+orjson CPU + Parquet writing CPU, shared perfectly by both cores, + the start-up; "
          "no reader logic at all):", flush=True)
    for label, (mb, ijson_rate, split, write) in floors.items():
        seconds = start + (split + write) / 2
        print(f"{'':<18} {label}: {split:.2f} + {write:.2f} CPU s -> {seconds:.2f} s, {mb / seconds:.1f} MB/s, "
              f"{mb / seconds / ijson_rate:.2f} x bare ijson", flush=True)


STEP = """
import sys, tempfile, time
from chatetl.ingest.upload import normalize_upload
from chatetl.settings import Settings
from chatetl.storage import S3ObjectStore, s3_client
store = S3ObjectStore(s3_client(Settings.from_env().s3_endpoint_url), sys.argv[1], sys.argv[2])
info = store.head(sys.argv[3])
with tempfile.TemporaryDirectory() as workdir:
    normalize_upload(store, info, "2000-01-0" + sys.argv[4], workdir, workers=int(sys.argv[4]))
"""
STEP_TABLES = """
import io, sys
import pyarrow.parquet as pq
from chatetl.settings import Settings
from chatetl.storage import S3ObjectStore, s3_client
store = S3ObjectStore(s3_client(Settings.from_env().s3_endpoint_url), sys.argv[1], sys.argv[2])
keys = sorted(i.key for i in store.list("normalized/"))
by_day = {d: [k for k in keys if f"date=2000-01-0{d}/" in k] for d in ("1", "2")}
same = len(by_day["1"]) == len(by_day["2"]) == 2 and all(
    pq.read_table(io.BytesIO(store.get_bytes(a))).equals(pq.read_table(io.BytesIO(store.get_bytes(b))))
    for a, b in zip(by_day["1"], by_day["2"]))
print("EQUAL" if same else "DIFFERENT")
"""


def from_s3(files: list[tuple[str, Path, float]], tmp: Path, runs: int) -> None:
    """The 200 MB ChatGPT file and the sharded zip from the environment's S3 server (see the module's docstring)."""
    import uuid

    from chatetl.settings import Settings
    from chatetl.storage import S3ObjectStore, s3_client

    bucket = Settings.from_env().s3_bucket or "chatetl"
    prefix = f"bench-normalize-{uuid.uuid4().hex[:8]}"
    store = S3ObjectStore(s3_client(Settings.from_env().s3_endpoint_url), bucket, prefix)
    chosen = [f for f in files if f[0] in ("chatgpt 200MB", "sharded zip 200MB")]
    try:
        for label, path, mb in chosen:
            key = f"uploads/{path.name}"
            store.put_file(key, path)
            uri = store.uri(key)
            out1, out2 = tmp / "s3-out1", tmp / "s3-out2"
            cases = {
                "normalize 1 proc": [PY, "-m", "chatetl.cli", "normalize", uri, "--out", str(out1), "--workers", "1"],
                "normalize (default: 2 cores)": [PY, "-m", "chatetl.cli", "normalize", uri, "--out", str(out2)],
                "asset step, 1 worker": [PY, "-c", STEP, bucket, prefix, key, "1"],
                "asset step, 2 workers": [PY, "-c", STEP, bucket, prefix, key, "2"],
            }
            times: dict[str, list[float]] = {case: [] for case in cases}
            for _ in range(runs):  # alternating, so the host's drift falls on every case alike
                for case, cmd in cases.items():
                    for out in (out1, out2):
                        if str(out) in cmd:
                            shutil.rmtree(out, ignore_errors=True)
                    times[case].append(timed(cmd)[0])
            rates = {case: mb / statistics.median(t) for case, t in times.items()}
            same_cli = subprocess.run([PY, "-c", SAME_TABLES, str(tmp / "s3-out1"), str(tmp / "s3-out2")],
                                      capture_output=True, text=True, check=True).stdout.strip()
            same_step = subprocess.run([PY, "-c", STEP_TABLES, bucket, prefix], capture_output=True, text=True, check=True).stdout.strip()
            print(f"from S3, {label}: " + ", ".join(f"{case} {rate:.1f} MB/s" for case, rate in rates.items())
                  + f"; 2 cores / 1 proc: command {rates['normalize (default: 2 cores)'] / rates['normalize 1 proc']:.2f}, "
                  f"asset step {rates['asset step, 2 workers'] / rates['asset step, 1 worker']:.2f}; tables: command {same_cli}, "
                  f"step {same_step}", flush=True)
            for info in list(store.list("normalized/")) + list(store.list("quarantine/")):
                store.delete(info.key)
    finally:
        for info in list(store.list("")):
            store.delete(info.key)


def one_conversation(work: Path, tmp: Path, runs: int, mb: int) -> None:
    """A file holding one conversation of `mb` MB (a chain of messages): one record, so its bytes and its
    decoded values are in memory at once, and one process reads it whatever --workers says. Its cost:
    normalize's seconds, MB/s and peak RSS, beside the split+orjson of the same file, median of `runs`."""
    path = work / f"chatgpt-one-{mb}mb-conversation.json"
    if not path.exists():
        write_one_conversation(path, mb * 1_000_000)
    size = path.stat().st_size / 1e6
    row = {}
    for case in ("split+orjson", "normalize 1 proc"):
        results = []
        for _ in range(runs):
            shutil.rmtree(tmp / "out", ignore_errors=True)
            results.append(timed(case_cmd(case, path, tmp / "out")))
        row[case] = (statistics.median(r[0] for r in results), max(r[1] for r in results))
    (split_s, split_rss), (norm_s, norm_rss) = row["split+orjson"], row["normalize 1 proc"]
    print(f"one {size:.0f} MB conversation: normalize 1 proc {norm_s:.1f} s ({size / norm_s:.1f} MB/s), peak RSS "
          f"{norm_rss:.0f} MB ({norm_rss / size:.1f} x the file); split+orjson {split_s:.1f} s, peak RSS {split_rss:.0f} MB",
          flush=True)


def profile(path: Path, out: Path, top: int) -> None:
    """The top functions of one normalize by cumulative share of its main thread's samples."""
    spy = Path(PY).parent / "py-spy"
    if not spy.exists():
        print(f"(no profile: {spy} is not installed)")
        return
    raw = out.parent / "profile.txt"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [str(spy), "record", "-r", "250", "-f", "raw", "-o", str(raw), "--", *case_cmd("normalize 1 proc", path, out)]
    subprocess.run(cmd, capture_output=True, check=True)
    cumulative: dict[str, int] = {}
    own: dict[str, int] = {}
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        frames = [f.split(" (")[0] + " (" + f.split(" (")[1].split(":")[0].split("/main/")[-1] + ")" for f in stack.split(";") if " (" in f]
        if not frames or any("thread.py" in f or "threading.py" in f for f in frames):
            continue  # the Parquet thread, which runs beside the main one
        total += int(n)
        for f in set(frames):
            cumulative[f] = cumulative.get(f, 0) + int(n)
        own[frames[-1]] = own.get(frames[-1], 0) + int(n)
    shown = ("chatetl/", "pyarrow/", "orjson", "ijson")
    print(f"profile of normalize 1 proc on {path.name} (py-spy, main thread, {total} samples):")
    for title, counts in (("cumulative", cumulative), ("self", own)):
        top_n = sorted(((n, f) for f, n in counts.items() if any(s in f for s in shown) and "cli/" not in f), reverse=True)[:top]
        print(f"  top {top} by {title} share: " + "; ".join(f"{100 * n / total:.1f}% {f}" for n, f in top_n))


if __name__ == "__main__":
    main()

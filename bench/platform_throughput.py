"""Throughput of `chatetl normalize` on each platform's generated export, beside a baseline revision and the parse
ceiling, in one run.

For each platform (bench/platforms: Gemini's MyActivity.json, a Drive Takeout zip of AI Studio prompt files,
DeepSeek's and Grok's JSON, Le Chat's zip of chat files, Open WebUI's JSON; about --mb MB each on disk, generated
once, kept with --keep) prints MB/s of the JSON bytes parsed (a zip's members inflated), median of --runs, with the
peak RSS of the largest process:
- bare ijson: `ijson.items` over the file, or over each zip member that holds JSON (the streaming parser alone,
  building each value; its ceiling as normalize_throughput.py's is),
- baseline 1 proc: `chatetl normalize --workers 1` with the code of --baseline (a git revision, checked out in a
  temporary worktree; default: the revision before the one checked out now),
- normalize 1 proc: the same command with the code checked out now,
- baseline auto, normalize auto: `chatetl normalize` with its default workers (chatetl.normalize.processes),
and the ratios of now to the baseline and to bare ijson. The cases alternate within each run, so the host's drift
falls on all of them alike. Under each row: whether the tables now equal the baseline's (Table.equals, row order
included), which proves a speed-up changed nothing of what is written.

    .venv/bin/python bench/platform_throughput.py [--mb 50] [--runs 3] [--baseline REV] [--keep DIR] [--only gemini,...]
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))
from normalize_throughput import SAME_TABLES, baseline_checkout, byte_compile_chatetl, normalize_cmd, timed

PY = sys.executable
# (platform, its generator's module in bench/platforms, the file name its reader knows)
PLATFORMS = (
    ("gemini", "gemini", "MyActivity.json"),
    ("ai-studio", "ai_studio", "ai-studio-takeout.zip"),
    ("deepseek", "deepseek", "deepseek-conversations.json"),
    ("grok", "grok", "prod-grok-backend.json"),
    ("le-chat", "le_chat", "le-chat-export.zip"),
    ("open-webui", "open_webui", "open-webui-chats.json"),
)

# ijson over the file, or over each member of a zip that opens like JSON: one value each ('' takes the whole value)
_BARE_IJSON = r"""
import sys, zipfile, ijson
def sources(p):
    if not p.endswith('.zip'):
        yield open(p, 'rb'); return
    zf = zipfile.ZipFile(p)
    for i in zf.infolist():
        if not i.is_dir() and zf.open(i).read(64).lstrip()[:1] in (b'{', b'['):
            yield zf.open(i)
print(sum(sum(1 for _ in ijson.items(f, '', use_float=True)) for f in sources(sys.argv[1])))
"""


def json_bytes(path: Path) -> int:
    """The JSON bytes normalize parses: the file's, or a zip's members that open like JSON, inflated."""
    if path.suffix != ".zip":
        return path.stat().st_size
    with zipfile.ZipFile(path) as zf:
        return sum(i.file_size for i in zf.infolist() if not i.is_dir() and zf.open(i).read(64).lstrip()[:1] in (b"{", b"["))


def generated(work: Path, mb: int, only: set[str] | None) -> list[tuple[str, Path]]:
    out = []
    for platform, module, name in PLATFORMS:
        if only and platform not in only:
            continue
        path = work / f"{mb}mb-{name}"
        if not path.exists():
            importlib.import_module(f"platforms.{module}").write(path, mb * 1_000_000)
        out.append((platform, path))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=50)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline", default="HEAD~1", help="git revision to compare with (default: HEAD~1)")
    ap.add_argument("--keep", type=Path, help="generate the inputs here and keep them")
    ap.add_argument("--only", help="comma-separated platforms (default: all)")
    args = ap.parse_args()
    byte_compile_chatetl()
    only = set(args.only.split(",")) if args.only else None
    tmp = Path(tempfile.mkdtemp(prefix="chatetl-platforms-"))
    work = args.keep or tmp / "inputs"
    work.mkdir(parents=True, exist_ok=True)
    rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", args.baseline], capture_output=True, text=True,
                         check=True).stdout.strip()
    base = baseline_checkout(rev, tmp / "baseline")
    try:
        files = generated(work, args.mb, only)
        cases = ("bare ijson", "baseline 1 proc", "normalize 1 proc", "baseline auto", "normalize auto")
        print(f"chatetl normalize per platform, about {args.mb} MB on disk each; MB/s of the JSON bytes parsed (a zip's "
              f"members inflated), median of {args.runs}; baseline: {rev}", flush=True)
        print(f"{'platform':<12}{'JSON MB':>8}" + "".join(f" {c:>17}" for c in cases)
              + f" {'now/baseline':>13} {'(auto)':>10} {'now/ijson':>10} {'peak RSS now':>13}", flush=True)
        for platform, path in files:
            mb = json_bytes(path) / 1e6
            outs = {c: tmp / "out" / c.replace(" ", "-") for c in cases[1:]}
            commands = {
                "bare ijson": [PY, "-c", _BARE_IJSON, str(path)],
                "baseline 1 proc": normalize_cmd(base, path, outs["baseline 1 proc"], 1),
                "normalize 1 proc": normalize_cmd(REPO, path, outs["normalize 1 proc"], 1),
                "baseline auto": normalize_cmd(base, path, outs["baseline auto"], None),
                "normalize auto": normalize_cmd(REPO, path, outs["normalize auto"], None),
            }
            seconds: dict[str, list[float]] = {c: [] for c in cases}
            peak: dict[str, float] = {c: 0.0 for c in cases}
            for _ in range(args.runs):
                for case in cases:
                    if case in outs:
                        shutil.rmtree(outs[case], ignore_errors=True)
                    s, rss, _ = timed(commands[case])
                    seconds[case].append(s)
                    peak[case] = max(peak[case], rss)
            rate = {c: mb / statistics.median(seconds[c]) for c in cases}
            print(f"{platform:<12}{mb:>8.1f}" + "".join(f" {rate[c]:>10.1f} ({peak[c]:>3.0f}M)" for c in cases)
                  + f" {rate['normalize 1 proc'] / rate['baseline 1 proc']:>13.2f} {rate['normalize auto'] / rate['baseline auto']:>10.2f}"
                  + f" {rate['normalize 1 proc'] / rate['bare ijson']:>10.2f} {peak['normalize 1 proc']:>11.0f} MB", flush=True)
            same = [subprocess.run([PY, "-c", SAME_TABLES, str(outs["baseline 1 proc"]), str(outs[c])], capture_output=True,
                                   text=True, check=True).stdout.strip() for c in ("normalize 1 proc", "baseline auto", "normalize auto")]
            print(f"{'':<12}tables against baseline 1 proc: now 1 proc {same[0]}, baseline auto {same[1]}, now auto {same[2]}", flush=True)
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(base)], check=False)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

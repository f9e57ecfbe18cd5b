"""Seconds per MB of reading one long JSON string, before and after issue 14, path by path.

For each path and string length (10, 50 and 200 MB by default), in its own process (peak RSS is
the process's), a file holding one record around one string of that length, the records before
and after it small:
- array: a ChatGPT conversations.json. Before: the record splitter reading in fixed 2 MB chunks
  and copying its buffer on each (the splitter's `_more` as it was); now: reads as big as the
  record held so far.
- object: one object then another (JSON Lines read as one). Before: ijson behind the DepthGuard
  (jsonstream's Shape.OBJECT path as it was); now: chatetl.readers.jsonscan.values.ValueSplitter.
- grok: a Grok export whose `conversations` come after a section holding the string. Before:
  ijson streaming `conversations.item`; now: the section scanned past unheld (values.seek_member).
- guard: the DepthGuard alone over the file. Before: its string patterns as they were (they
  backtrack over a string not closed in the chunk); now: possessive ones.
`now` reads the string (the value cap raised past it); `refused` is the default cap (64 MiB): a
longer string is scanned past and its record reported, the rest read. A `before` run longer than
--before-max-mb is not run: its projection from the two largest runs, at the growth they show
(time ~ length^k, k between 1 and 2), is printed in brackets.

    .venv/bin/python bench/long_values.py [--sizes 10,50,200] [--before-max-mb 50] [--paths array,object,grok,guard]
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MB = 1024 * 1024
PATHS = ("array", "object", "grok", "guard")


def write_input(path: Path, kind: str, mb: int) -> None:
    """The file of `kind` around one string of `mb` MB (written a MB at a time)."""
    if kind == "grok":
        conv = {"conversation": {"id": "g1", "title": "T"}, "responses": [
            {"response": {"_id": "r1", "sender": "human", "message": "hi", "create_time": "2026-01-01T00:00:00Z"}}]}
        head, tail = b'{"projects": [{"name": "', b'"}], "conversations": [' + json.dumps(conv).encode() + b"]}"
    elif kind == "object":
        head, tail = b'{"id": "a", "title": "t", "text": "', b'"}\n{"id": "b", "title": "after"}\n'
    else:
        head, tail = b'[{"id": "0", "title": "first"}, {"id": "a", "title": "t", "text": "', b'"}, {"id": "b", "title": "after"}]'
    with open(path, "wb") as f:
        f.write(head)
        f.writelines(b"x" * MB for _ in range(mb))
        f.write(tail)


def _old_more(self) -> bool:
    """ArraySplitter._more before issue 14: fixed reads, the whole buffer copied on each."""
    if self.eof:
        return False
    data = self.stream.read(self.chunk)
    if not data:
        self.eof = True
        return False
    self.consumed += self.start
    self.buf = self.buf[self.start:] + data
    self.start = 0
    return True


def run_one(kind: str, mode: str, path: str) -> dict:
    """Read `path` the `mode` way (before, now, refused); what came out and how long it took."""
    import os
    import re

    if mode in ("before", "now"):  # (before issue 14 there was no cap)
        os.environ["CHATETL_MAX_VALUE_BYTES"] = str(64 * 1024 * MB)
    from chatetl.readers import Entry, ReadReport
    from chatetl.readers.jsonscan import depthguard, records
    from chatetl.readers.jsonscan.records import Shape
    from chatetl.readers.jsonscan.splitter import ArraySplitter
    from chatetl.readers.platforms.grok import iter_conversation_records

    entry = Entry.from_path(path)
    report = ReadReport()
    start = time.perf_counter()
    if kind == "guard":
        if mode == "before":
            depthguard._STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
            depthguard._STRING_END = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
        with depthguard.DepthGuard(entry.open()) as f:
            while f.read(65536):
                pass
        out = []
    elif kind == "array":
        if mode == "before":
            ArraySplitter._more = _old_more  # type: ignore[method-assign]
        out = [where for where, _ in records.iter_records(entry, Shape.ARRAY, report)]
    elif kind == "object":
        if mode == "before":
            import ijson

            with depthguard.DepthGuard(entry.open()) as f:
                out = [str(i) for i, _ in enumerate(ijson.items(f, "", use_float=True, multiple_values=True))]
        else:
            out = [where for where, _ in records.iter_records(entry, Shape.OBJECT, report)]
    else:
        if mode == "before":
            import ijson

            with depthguard.DepthGuard(entry.open()) as f:
                out = [str(i) for i, _ in enumerate(ijson.items(f, "conversations.item", use_float=True))]
        else:
            out = [where for where, _ in iter_conversation_records(entry, Shape.OBJECT, report)]
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "records": len(out), "errors": [e.reason[:60] for e in report.errors],
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def projected(runs: list[tuple[int, float]], mb: int) -> float:
    """Seconds for `mb` MB from the last two runs' growth (time ~ length^k, 1 <= k <= 2; 2 from one run)."""
    (m2, t2) = runs[-1]
    k = 2.0
    if len(runs) > 1:
        m1, t1 = runs[-2]
        k = min(max(math.log(t2 / t1) / math.log(m2 / m1), 1.0), 2.0)
    return t2 * (mb / m2) ** k


def measure(kind: str, mode: str, path: Path) -> dict:
    done = subprocess.run([sys.executable, __file__, "--one", kind, mode, str(path)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10,50,200", help="string lengths in MB")
    ap.add_argument("--before-max-mb", type=int, default=50, help="longest string the before paths run on")
    ap.add_argument("--paths", default=",".join(PATHS))
    ap.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(*args.one)))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{'path':<8}{'MB':>6}{'before s/MB':>14}{'now s/MB':>11}{'refused s/MB':>14}{'RSS MB before/now/refused':>28}  refused:")
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.paths.split(","):
            runs: list[tuple[int, float]] = []
            for mb in sizes:
                path = Path(tmp, f"{kind}-{mb}.json")
                write_input(path, kind, mb)
                before = measure(kind, "before", path) if mb <= args.before_max_mb else None
                now = measure(kind, "now", path)
                refused = measure(kind, "refused", path)
                if before is not None:
                    runs.append((mb, before["seconds"]))
                    before_text = f"{before['seconds'] / mb:.4f}"
                elif runs:
                    before_text = f"[{projected(runs, mb) / mb:.3f}]"
                else:
                    before_text = "-"
                rss = f"{before['rss_mb']:.0f}" if before else "-"
                print(f"{kind:<8}{mb:>6}{before_text:>14}{now['seconds'] / mb:>11.4f}{refused['seconds'] / mb:>14.4f}"
                      f"{rss + '/' + format(now['rss_mb'], '.0f') + '/' + format(refused['rss_mb'], '.0f'):>28}  "
                      f"{'; '.join(refused['errors']) or '(read)'}", flush=True)
                path.unlink()


if __name__ == "__main__":
    main()

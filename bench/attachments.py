"""Time and peak memory of ingesting a ChatGPT export that holds many images, with and without the
attachment stage (chatetl.attachments: each image found, hashed, sniffed and stored once).

The export is generated: `--conversations` chats of `--per-chat` uploaded images each (2026 layout:
`file_<hex>.dat` members named by `conversation_asset_file_names.json`), every image a distinct PNG of
about `--kb` KiB (incompressible, stored). Each run is `chatetl.ingest.upload.normalize_upload` of that
zip into a fresh local bucket, in a process of its own (peak RSS is the process's); "without" replaces
the attachment stage by a no-op, the baseline. Runs alternate; medians. A last run ingests the same
export again into the bucket the "with" run filled: it must store nothing new.

    .venv/bin/python bench/attachments.py [--conversations 1000] [--per-chat 5] [--kb 64] [--runs 5]

Then the day's zip (`chatetl.exports.partition.write_day_exports`, md and html, every file rendered anew) of
each of those buckets, in a process of its own, alternating: "with" holds the 5,000 images under `files/`,
"without" the same pages with placeholders only (the baseline).

    .venv/bin/python bench/attachments.py --trees DIR [DIR ...] [--runs 5]

only times the ingest with the attachment stage, once per run with the code of each DIR (a folder holding a
`chatetl/`, e.g. `git archive <commit> chatetl | tar -x -C DIR`), alternating: one version beside another.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_RUN = """
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from chatetl.storage import LocalObjectStore
import chatetl.ingest.upload as upload
from chatetl.attachments import AttachmentCounts
if sys.argv[4] == "without":
    upload.resolve_attachments = lambda *args: AttachmentCounts()
store = LocalObjectStore(sys.argv[3])
key = "raw/export.zip"
if store.head(key) is None:
    store.put_file(key, sys.argv[2])
start = time.perf_counter()
result = upload.normalize_upload(store, store.head(key), "2026-03-01", workers=1)
seconds = time.perf_counter() - start
a = result.attachments
print(json.dumps({"rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "s": seconds,
                  "attachments": a.attachments, "in_export": a.in_export, "new_files": a.new_files}))
"""


_ZIP = """
import json, resource, shutil, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from chatetl.storage import LocalObjectStore
from chatetl.exports.partition import ExportPlan, write_day_exports
from chatetl.layout import bundle_key
for folder in ("exports", "cache"):
    shutil.rmtree(Path(sys.argv[2], folder), ignore_errors=True)
store = LocalObjectStore(sys.argv[2])
start = time.perf_counter()
result = write_day_exports(store, "2026-03-01", ExportPlan(formats=("md", "html"), bundle_formats=("md", "html")))
seconds = time.perf_counter() - start
print(json.dumps({"rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "s": seconds,
                  "members": result.bundle_files, "mib": store.head(bundle_key("2026-03-01")).size / 1024**2}))
"""


def write_export(path: Path, conversations: int, per_chat: int, kb: int) -> int:
    spec = importlib.util.spec_from_file_location("layouts", ROOT / "tests" / "attachments" / "layouts.py")  # (the tests' layouts)
    assert spec is not None and spec.loader is not None
    layouts = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(layouts)
    chatgpt_conversation, image_part = layouts.chatgpt_conversation, layouts.image_part

    names = {}
    convs = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for c in range(conversations):
            conv = chatgpt_conversation(f"bench-{c}", 1_767_225_600.0 + c * 600)
            user = next(n for n in conv["mapping"].values() if n["message"] and n["message"]["author"]["role"] == "user")
            ids = [f"file_{c:016x}{i:016x}" for i in range(per_chat)]
            user["message"]["content"]["parts"] = [image_part(f"sediment://{i}") for i in ids] + ["What are these?"]
            user["message"]["metadata"] = {"attachments": [{"id": i, "name": f"photo-{c}-{n}.png", "mime_type": "image/png"} for n, i in enumerate(ids)]}
            convs.append(conv)
            for i in ids:
                zf.writestr(f"{i}.dat", b"\x89PNG\r\n\x1a\n" + os.urandom(kb * 1024))
                names[f"{i}.dat"] = f"photo-{i}.png"
        zf.writestr("conversations.json", json.dumps(convs))
        zf.writestr("conversation_asset_file_names.json", json.dumps(names))
    return conversations * per_chat


def run(export: Path, bucket: Path, mode: str, root: Path = ROOT) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", _RUN, str(root), str(export), str(bucket), mode], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def day_zip(bucket: Path) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", _ZIP, str(ROOT), str(bucket)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def _table(results: dict[str, list[dict[str, float]]]) -> None:
    print("| | without | with |\n|---|---:|---:|")
    for what, key in (("seconds (median)", "s"), ("peak RSS MiB (median)", "rss")):
        row = [statistics.median(r[key] for r in results[m]) for m in ("without", "with")]
        print(f"| {what} | {row[0]:.1f} | {row[1]:.1f} |")


def compare_trees(export: Path, bucket: Path, trees: list[Path], runs: int) -> None:
    """The ingest with the attachment stage, with each tree's code in turn (the order reversed every other run)."""
    seconds: dict[Path, list[float]] = {t: [] for t in trees}
    for n in range(runs):
        for tree in trees if n % 2 == 0 else trees[::-1]:
            subprocess.run(["rm", "-rf", str(bucket)], check=True)
            seconds[tree].append(run(export, bucket, "with", tree.resolve())["s"])
    print("| | seconds (median) | runs |\n|---|---:|---|")
    for tree, times in seconds.items():
        print(f"| {tree} | {statistics.median(times):.1f} | {' '.join(f'{t:.1f}' for t in times)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=1000)
    parser.add_argument("--per-chat", type=int, default=5)
    parser.add_argument("--kb", type=int, default=64)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--trees", type=Path, nargs="+", help="time the ingest only, with the code of each folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        export = Path(folder, "export.zip")
        images = write_export(export, args.conversations, args.per_chat, args.kb)
        print(f"export: {images} images, {export.stat().st_size / 1024**2:.0f} MiB")
        if args.trees:
            compare_trees(export, Path(folder, "bucket"), args.trees, args.runs)
            return
        results: dict[str, list[dict[str, float]]] = {"without": [], "with": []}
        for n in range(args.runs):
            for mode in ("without", "with") if n % 2 == 0 else ("with", "without"):
                bucket = Path(folder, f"bucket-{mode}")
                subprocess.run(["rm", "-rf", str(bucket)], check=True)
                results[mode].append(run(export, bucket, mode))
        again = [run(export, Path(folder, "bucket-with"), "with") for _ in range(args.runs)]
        print("ingest (without: the attachment stage a no-op)")
        _table(results)
        last = results["with"][-1]
        print(f"with: {last['attachments']} attachments, {last['in_export']} in the export, {last['new_files']} files stored; "
              f"the same export again: {sum(a['new_files'] for a in again)} new files, "
              f"{statistics.median(a['s'] for a in again):.1f} s (median)")
        zips: dict[str, list[dict[str, float]]] = {"without": [], "with": []}
        for n in range(args.runs):
            for mode in ("without", "with") if n % 2 == 0 else ("with", "without"):
                zips[mode].append(day_zip(Path(folder, f"bucket-{mode}")))
        print("the day's zip, md and html (without: no attachment resolved, placeholders only)")
        _table(zips)
        for mode in ("without", "with"):
            print(f"{mode}: {zips[mode][-1]['members']} members, {zips[mode][-1]['mib']:.0f} MiB")


if __name__ == "__main__":
    main()

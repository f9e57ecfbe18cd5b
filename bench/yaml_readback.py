"""Reading back chatetl's own YAML exports: the streaming reader beside the old whole-document one.

For each size (20, 100 and 200 MB by default) it writes one generated conversation of ~100 KB
messages (never real chats) through the real exporter (`chatetl.exports.files.conversation_files`,
format `yaml`) and reads it back, each case in its own process, printing MB/s (file MB over the
read's seconds) and peak RSS (the process's own VmHWM: ru_maxrss would start at this parent's
peak, inherited across fork and exec), medians of --runs:

- stream (LibYAML): `chatetl.readers.read_path`, i.e. chatetl/readers/chat_export/yaml.py as it is:
  LibYAML's events, PyYAML's Composer and SafeConstructor one value at a time;
- stream (Python parser): the same reader on PyYAML's pure-Python parser (sizes up to --python-up-to);
- old whole-document: the reader before streaming (the file read whole, `yaml.load` with a SafeLoader
  refusing aliases, typed scalars restored from a second `yaml.compose`, the builder stripping the
  block newline), its 64 MB cap lifted to show what it would take.

"over text" is peak RSS growth past the imports less the conversation's own text (which
`read_path` hands back whole): what the read itself holds, which for the streaming reader should
stay flat as the file grows.

    .venv/bin/python bench/yaml_readback.py [--sizes 20,100,200] [--runs 3] [--python-up-to 20] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chatetl.exports.files import conversation_files
from chatetl.model import Conversation, Message, MessageKind, Role, Source
from chatetl.readers.tree import resolve_branches

MB = 1_000_000

_RUN = r"""
import json, resource, sys, time
def peak_kb():  # this process's own peak RSS: ru_maxrss would start at the parent's, inherited across fork and exec
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
case, path = sys.argv[1], sys.argv[2]
from chatetl.readers import ReadReport, read_path
from chatetl.readers.platforms.chat_export import yaml as reader
if case == "old":
    from datetime import date
    import yaml
    from chatetl.readers.platforms.chat_export.builder import conversation_from_export

    class NoAlias(yaml.SafeLoader):
        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                raise yaml.composer.ComposerError(None, None, "alias", self.peek_event().start_mark)
            return super().compose_node(parent, index)

    def read_old(path, report):
        with open(path, "rb") as f:
            text = f.read().decode("utf-8-sig", errors="replace")
        data = yaml.load(text, Loader=NoAlias)
        typed = (bool, int, float, date)
        walk, has_typed = [data], False  # the old _has_typed_scalars, then _restore_scalar_text
        while walk and not has_typed:
            v = walk.pop()
            if isinstance(v, dict):
                walk.extend(v.values())
            elif isinstance(v, list):
                walk.extend(v)
            else:
                has_typed = isinstance(v, typed)
        stack = [(data, yaml.compose(text, Loader=NoAlias))] if has_typed else []
        while stack:
            value, node = stack.pop()
            if isinstance(value, dict) and isinstance(node, yaml.MappingNode):
                pairs = [(k.value, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value in value]
            elif isinstance(value, list) and isinstance(node, yaml.SequenceNode):
                pairs = list(enumerate(node.value))
            else:
                continue
            for key, child_node in pairs:
                child = value[key]
                if isinstance(child, (dict, list)):
                    stack.append((child, child_node))
                elif isinstance(child, typed) and isinstance(child_node, yaml.ScalarNode):
                    value[key] = child_node.value
        return [conversation_from_export(data, report, rendering="yaml", file=path, strip_block_newline=True)]
elif case == "python":
    reader.STREAM_LOADER = reader._PythonStreamLoader
base = peak_kb()
report = ReadReport()
start = time.perf_counter()
convs = read_old(path, report) if case == "old" else list(read_path(path, report))
seconds = time.perf_counter() - start
peak = peak_kb()
print(json.dumps({"seconds": seconds, "base_kb": base, "peak_kb": peak, "errors": len(report.errors),
                  "text": sum(sys.getsizeof(m.text) for c in convs for m in c.messages),
                  "messages": sum(len(c.messages) for c in convs)}))
"""

CASES = {"stream (LibYAML)": "stream", "stream (Python parser)": "python", "old whole-document": "old"}


def conversation(total_bytes: int, message_bytes: int = 100_000) -> Conversation:
    """One chat of ~100 KB bodies: lines of words YAML would retype or misread, distinct per message."""
    from datetime import UTC, datetime, timedelta

    rng = random.Random(14)
    words = ["alpha", "beta", "yes", "0123", "3:25", "null", "# not a comment", "- item", "key: value", "naïve", "«quoted»"]
    pool = [" ".join(rng.choice(words) for _ in range(12)) for _ in range(500)]
    per_body = message_bytes // (len(pool[0]) + 1) + 1
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    messages, parent = [], None
    for i in range(max(2, round(total_bytes / (message_bytes * 1.085)))):  # the YAML indents each line: ~8.5% on top
        mid = f"m{i}"
        text = f"message {i}\n" + "\n".join(rng.choices(pool, k=per_body))
        messages.append(Message(message_id=mid, parent_id=parent, role=Role.USER if i % 2 == 0 else Role.ASSISTANT,
                                kind=MessageKind.TURN, text=text, created_at=t0 + timedelta(seconds=i)))
        parent = mid
    conv = Conversation(source=Source.CHATGPT, platform="chatgpt", conversation_id="bench-yaml", title="Bench: yes",
                        created_at=t0, updated_at=t0, model="gpt-4o", current_node=parent, messages=messages)
    resolve_branches(conv)  # the active branch: what an export shows
    return conv


def write_yaml(path: Path, target_mb: int) -> int:
    (f,) = conversation_files(conversation(target_mb * MB), ["yaml"])
    path.write_bytes(f.data)
    return len(f.data)


def run_case(case: str, path: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", _RUN, case, str(path)], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parent.parent)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="20,100,200", help="file sizes in MB")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--python-up-to", type=int, default=20, help="also time the pure-Python parser up to this size (MB)")
    ap.add_argument("--keep", help="write the files here and keep them")
    args = ap.parse_args()
    workdir = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="yaml-readback-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"{'file':>8}  {'case':<24}{'MB/s':>8}{'peak RSS MB':>13}{'over text MB':>14}  messages", flush=True)
    try:
        for mb in (int(s) for s in args.sizes.split(",")):
            path = workdir / f"chat-{mb}mb.yaml"
            size = write_yaml(path, mb)
            for label, case in CASES.items():
                if case == "python" and mb > args.python_up_to:
                    continue
                runs = [run_case(case, path) for _ in range(args.runs)]
                seconds = statistics.median(r["seconds"] for r in runs)
                peak = statistics.median(r["peak_kb"] for r in runs) / 1024
                over = statistics.median((r["peak_kb"] - r["base_kb"]) * 1024 - r["text"] for r in runs) / 2**20
                errors = "" if not runs[0]["errors"] else f"  ({runs[0]['errors']} errors)"
                print(f"{size / MB:>6.0f}MB  {label:<24}{size / MB / seconds:>8.1f}{peak:>13.0f}{over:>14.0f}  {runs[0]['messages']}{errors}", flush=True)
            if not args.keep:
                path.unlink()
    finally:
        if not args.keep:
            for p in workdir.glob("*"):
                p.unlink()
            workdir.rmdir()


if __name__ == "__main__":
    main()

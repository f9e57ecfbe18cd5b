"""Seconds to read markup that leaves every tag open, now and at a baseline commit, at two sizes.

Each case is one message text of N repetitions of an opening that never closes, read by the
function of the reader that scans it: a Gemini answer (`'<b ' * N`, htmltext), a Gemini HTML
Takeout title line (`<a href=...>` * N, never closed), a Claude.ai answer (`'<antThinking ' * N`),
an Open WebUI answer (`'<details>' * N + '</details>'`). Linear reading grows 4x when N does;
the baseline's re-scans grow 16x, so it is run at smaller sizes only. Each figure is the median
of --runs runs, the baseline's and the current code's alternating.

    .venv/bin/python bench/markup_scans.py [--sizes 100000,400000] [--baseline-sizes 4000,16000] [--runs 5] [--baseline 9cca595]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MODULES = {
    "htmltext": "chatetl/readers/htmltext.py",
    "gemini": "chatetl/readers/platforms/gemini.py",
    "claude_ai": "chatetl/readers/platforms/claude_ai.py",
    "open_webui": "chatetl/readers/platforms/open_webui.py",
}


def load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def versions(baseline: str, folder: Path) -> dict[str, dict[str, ModuleType]]:
    """The four modules as they are and as the baseline commit had them (loaded under other names)."""
    out: dict[str, dict[str, ModuleType]] = {"now": {}, "baseline": {}}
    for key, rel in MODULES.items():
        out["now"][key] = load(f"bench_now_{key}", ROOT / rel)
        old = folder / f"{key}.py"
        old.write_bytes(subprocess.run(["git", "-C", str(ROOT), "show", f"{baseline}:{rel}"], capture_output=True, check=True).stdout)
        out["baseline"][key] = load(f"bench_baseline_{key}", old)
    return out


def cases(m: dict[str, ModuleType]) -> dict[str, tuple[Callable[[str], Any], Callable[[int], str]]]:
    anchor = '<a href="https://gemini.google.com/app/7b0000000000aaaa">'
    return {
        "gemini answer": (m["htmltext"].html_to_text, lambda n: "<b " * n),
        "gemini html title": (lambda s: list(m["gemini"]._anchors(s)) if hasattr(m["gemini"], "_anchors") else m["gemini"]._ANCHOR.findall(s),
                              lambda n: anchor * n),
        "claude.ai answer": (lambda s: m["claude_ai"]._take_inline_markup(s, [], [], []), lambda n: "<antThinking " * n),
        "open webui answer": (lambda s: m["open_webui"]._fold_details(s, [], [], [], []), lambda n: "<details>" * n + "</details>"),
    }


def timed(fn: Callable[[str], Any], text: str) -> float:
    start = time.perf_counter()
    fn(text)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000,400000")
    parser.add_argument("--baseline-sizes", default="4000,16000")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", default="9cca595")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    small = [int(s) for s in args.baseline_sizes.split(",")]
    with tempfile.TemporaryDirectory() as folder:
        mods = versions(args.baseline, Path(folder))
        now, before = cases(mods["now"]), cases(mods["baseline"])
        print("| case | N | chars | now s | baseline s |\n|---|---:|---:|---:|---:|")
        for name in now:
            for n in sorted(set(small + sizes)):
                text = now[name][1](n)
                runs_now: list[float] = []
                runs_before: list[float] = []
                for _ in range(args.runs):
                    if n in small:
                        runs_before.append(timed(before[name][0], text))
                    runs_now.append(timed(now[name][0], text))
                old = f"{statistics.median(runs_before):.3f}" if runs_before else "-"
                print(f"| {name} | {n:,} | {len(text):,} | {statistics.median(runs_now):.3f} | {old} |", flush=True)


if __name__ == "__main__":
    main()

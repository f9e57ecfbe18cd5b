"""Seconds to read one Grok response whose text and thinking trace are unclosed card openers, at
two or more sizes: `<grok:render ...>` openers in `message` and `<xai:tool_usage_card>` with
`<xai:tool_args>` openers in `thinking_trace`, none closed (the case a scan from each opener to
the end makes quadratic). Each size read `--runs` times, alternating the sizes; the median, and the
growth between the two largest sizes (time ~ size^k: k near 1 is linear, near 2 quadratic).

    .venv/bin/python bench/grok_cards.py [--sizes-kb 200,800] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time

from chatetl.readers import Entry, ReadReport, read_entry


def export(kb: int) -> bytes:
    """A Grok export of one response of about `kb` KB of unclosed openers (half text, half trace)."""
    render = '<grok:render type="render_inline_citation">'
    text = render * (kb * 512 // len(render))
    trace = "<xai:tool_usage_card><xai:tool_name>" + "<xai:tool_args>" * (kb * 512 // 15)
    response = {"_id": "r", "sender": "assistant", "message": text, "thinking_trace": trace}
    return json.dumps({"conversations": [{"conversation": {"id": "c"}, "responses": [{"response": response}]}]}).encode()


def read_seconds(data: bytes) -> float:
    started = time.perf_counter()
    report = ReadReport()
    [conv] = read_entry(Entry.from_bytes("prod-grok-backend.json", data), report)
    assert not report.errors and conv.messages
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes-kb", default="200,800")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes_kb.split(",")]
    inputs = {kb: export(kb) for kb in sizes}
    times: dict[int, list[float]] = {kb: [] for kb in sizes}
    for _ in range(args.runs):
        for kb in sizes:
            times[kb].append(read_seconds(inputs[kb]))
    print("| value | bytes | median s | ms per 100 KB |")
    print("| --- | ---: | ---: | ---: |")
    for kb in sizes:
        median = statistics.median(times[kb])
        print(f"| {kb} KB | {len(inputs[kb]):,} | {median:.4f} | {median * 1000 * 100 / kb:.2f} |")
    if len(sizes) >= 2:
        small, large = sorted(sizes)[-2:]
        k = math.log(statistics.median(times[large]) / statistics.median(times[small])) / math.log(large / small)
        print(f"\ngrowth {small} KB -> {large} KB: time ~ size^{k:.2f}")


if __name__ == "__main__":
    main()

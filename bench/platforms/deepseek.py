"""A generated DeepSeek conversations.json of about a given size, written conversation by conversation.

Realistic shapes (chatetl/readers/deepseek.py): a `mapping` rooted at "root", REQUEST/RESPONSE
messages of 0.5-3 KB, THINK on a third of the answers, SEARCH results on some, a regenerated
answer (a branch) in one conversation of five.

    .venv/bin/python bench/platforms/deepseek.py /tmp/deepseek.json 100   # MB
"""

from __future__ import annotations

import json
import random
import sys
import uuid
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

WORDS = ["the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "with", "was", "on", "be", "by", "this", "are", "from", "at", "or", "an", "have", "not", "which", "but", "can", "more"]
START = datetime(2026, 1, 1, tzinfo=UTC)
BEIJING = timezone(timedelta(hours=8))  # the export's times carry DeepSeek's +08:00


def _text(rng: random.Random, size: int) -> str:
    words: list[str] = []
    n = 0
    while n < size:
        w = rng.choice(WORDS)
        words.append(w)
        n += len(w) + 1
    return " ".join(words)


def _iso(t: datetime) -> str:
    return t.astimezone(BEIJING).isoformat(timespec="milliseconds")


def conversation(rng: random.Random, index: int) -> dict:
    t = START + timedelta(hours=index)
    mapping: dict[str, dict] = {"root": {"id": "root", "parent": None, "children": [], "message": None}}
    parent = "root"
    next_id = 1

    def add(fragments: list[dict], model: str, under: str) -> str:
        nonlocal next_id, t
        node_id = str(next_id)
        next_id += 1
        t += timedelta(seconds=rng.uniform(2, 90))
        mapping[node_id] = {
            "id": node_id, "parent": under, "children": [],
            "message": {"files": [], "model": model, "inserted_at": _iso(t), "fragments": fragments},
        }
        mapping[under]["children"].append(node_id)
        return node_id

    for turn in range(rng.randint(3, 12)):
        model = "deepseek-reasoner" if turn % 3 == 0 else "deepseek-chat"
        question = add([{"type": "REQUEST", "content": _text(rng, rng.randint(500, 1500))}], model, parent)
        answers = 2 if turn == 1 and index % 5 == 0 else 1  # a regenerated answer: a branch
        for _ in range(answers):
            fragments: list[dict] = []
            if model == "deepseek-reasoner":
                fragments.append({"type": "THINK", "content": _text(rng, rng.randint(500, 2000))})
            if turn % 4 == 2:
                fragments.append({"type": "SEARCH", "results": [
                    {"url": f"https://example.org/{index}/{turn}/{k}", "title": _text(rng, 40), "snippet": _text(rng, 160), "cite_index": k + 1}
                    for k in range(3)
                ]})
            fragments.append({"type": "RESPONSE", "content": _text(rng, rng.randint(800, 3000))})
            parent = add(fragments, model, question)
    return {
        "id": str(uuid.UUID(int=rng.getrandbits(128))),
        "title": f"Generated chat {index}",
        "inserted_at": _iso(START + timedelta(hours=index)),
        "updated_at": _iso(t),
        "mapping": mapping,
    }


def write(path: Path, size_bytes: int) -> None:
    """Write a conversations.json of about `size_bytes`, streamed (one conversation in memory at a time)."""
    rng = random.Random(12)
    written = 0
    with open(path, "w", encoding="utf-8") as out:
        out.write("[")
        index = 0
        while written < size_bytes:
            text = json.dumps(conversation(rng, index), ensure_ascii=False)
            out.write(("," if index else "") + "\n" + text)
            written += len(text) + 2
            index += 1
        out.write("\n]\n")


if __name__ == "__main__":
    write(Path(sys.argv[1]), int(float(sys.argv[2]) * 1_000_000))

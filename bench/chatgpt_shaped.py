"""Generate ChatGPT-export-shaped files of a given size, streamed to disk (shared by the benchmarks)."""

from __future__ import annotations

import json
import random
import uuid
from pathlib import Path

WORDS = "the of and to in is that for it as with was on be by this are from at or an have not which but can more".split()


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def conversation(rng: random.Random, index: int, turns: int = 20) -> dict:
    conv_id = str(uuid.UUID(int=rng.getrandbits(128)))
    mapping = {"client-created-root": {"id": "client-created-root", "message": None, "parent": None, "children": []}}
    parent = "client-created-root"
    t = 1_700_000_000.0 + index * 3600
    for i in range(turns * 2):
        mid = str(uuid.UUID(int=rng.getrandbits(128)))
        role = "user" if i % 2 == 0 else "assistant"
        t += rng.uniform(1, 60)
        mapping[mid] = {
            "id": mid,
            "message": {
                "id": mid,
                "author": {"role": role, "name": None, "metadata": {}},
                "create_time": t,
                "update_time": None,
                "content": {"content_type": "text", "parts": [_text(rng, rng.randint(20, 300))]},
                "status": "finished_successfully",
                "end_turn": role == "assistant",
                "weight": 1.0,
                "metadata": {"model_slug": "gpt-4o"} if role == "assistant" else {},
                "recipient": "all",
                "channel": None,
            },
            "parent": parent,
            "children": [],
        }
        mapping[parent]["children"].append(mid)
        parent = mid
    return {
        "title": f"Generated conversation {index}",
        "create_time": 1_700_000_000.0 + index * 3600,
        "update_time": t,
        "mapping": mapping,
        "current_node": parent,
        "conversation_id": conv_id,
        "id": conv_id,
        "default_model_slug": "gpt-4o",
    }


def write_chatgpt_file(path: Path, target_bytes: int, seed: int = 7) -> tuple[int, int]:
    """Write a conversations.json of about `target_bytes`; returns (conversations, bytes)."""
    rng = random.Random(seed)
    written = 0
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        f.write("[")
        while written < target_bytes:
            chunk = ("," if n else "") + json.dumps(conversation(rng, n))
            f.write(chunk)
            written += len(chunk)
            n += 1
        f.write("]")
    return n, path.stat().st_size

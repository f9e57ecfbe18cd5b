"""Generate an Open WebUI chat export (`chat-export-<time>.json`: a JSON array of chat rows) of
about a given size, streamed to disk one chat at a time: realistic message sizes (0.5-3 KB),
regenerated answers (siblings in `history`), reasoning and tool-call `<details>` blocks, sources.

    .venv/bin/python bench/platforms/open_webui.py /tmp/open-webui.json 100   # MB
"""

from __future__ import annotations

import html
import json
import random
import sys
import uuid
from pathlib import Path

WORDS = ["the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "with", "was", "on", "be", "by", "this", "are", "from", "at", "or", "an", "have", "not", "which", "but", "can", "more"]
T0 = 1_767_225_600


def _text(rng: random.Random, low: int = 500, high: int = 3000) -> str:
    size, words = rng.randint(low, high), []
    while size > 0:
        word = rng.choice(WORDS)
        words.append(word)
        size -= len(word) + 1
    return " ".join(words)


def _uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128)))


def _answer(rng: random.Random) -> str:
    parts = []
    if rng.random() < 0.3:
        thought = html.escape("\n".join(f"> {_text(rng, 80, 300)}" for _ in range(3)))
        parts.append(f'<details type="reasoning" done="true" duration="4">\n<summary>Thought for 4 seconds</summary>\n{thought}\n</details>\n')
    if rng.random() < 0.15:
        args, result = html.escape(json.dumps(json.dumps({"q": _text(rng, 20, 60)}))), html.escape(json.dumps(_text(rng, 100, 400)))
        parts.append(f'<details type="tool_calls" done="true" id="call_{rng.randint(1, 10**9)}" name="search" arguments="{args}" '
                     f'result="{result}" files="" embeds="">\n<summary>Tool Executed</summary>\n</details>\n')
    parts.append(_text(rng))
    return "".join(parts)


def chat_row(rng: random.Random, index: int, turns: int) -> dict:
    messages: dict[str, dict] = {}
    t, parent, current = T0 + index * 3600, None, None
    for _ in range(turns):
        uid = _uid(rng)
        t += rng.randint(5, 90)
        messages[uid] = {"id": uid, "parentId": parent, "childrenIds": [], "role": "user", "content": _text(rng, 100, 1200),
                         "timestamp": t, "models": ["llama3.1:8b"]}
        if parent:
            messages[parent]["childrenIds"].append(uid)
        answers = 2 if rng.random() < 0.1 else 1  # a regenerated answer now and then
        for _a in range(answers):
            aid = _uid(rng)
            t += rng.randint(2, 30)
            messages[aid] = {"id": aid, "parentId": uid, "childrenIds": [], "role": "assistant", "content": _answer(rng), "timestamp": t,
                             "model": "llama3.1:8b", "modelName": "Llama3.1 8B", "modelIdx": 0, "userContext": None, "done": True,
                             "usage": {"prompt_tokens": rng.randint(10, 900), "completion_tokens": rng.randint(50, 900)}}
            if rng.random() < 0.1:
                messages[aid]["sources"] = [{"source": {"name": "https://docs.example.org/page", "type": "web_search"},
                                             "document": [_text(rng, 200, 600)], "metadata": [{"source": "https://docs.example.org/page", "title": "Docs"}]}]
            messages[uid]["childrenIds"].append(aid)
            current = aid
        parent = current
    cid = _uid(rng)
    return {"id": cid, "user_id": "bench-user", "title": f"Generated chat {index}",
            "chat": {"id": cid, "title": f"Generated chat {index}", "models": ["llama3.1:8b"], "params": {},
                     "history": {"messages": messages, "currentId": current}, "messages": [], "tags": [],
                     "timestamp": (T0 + index * 3600) * 1000, "files": []},
            "updated_at": t, "created_at": T0 + index * 3600, "share_id": None, "archived": False, "pinned": False,
            "meta": {"tags": []}, "folder_id": None}


def write(path: Path, size_bytes: int, seed: int = 7) -> None:
    """An Open WebUI export of about `size_bytes`, written one chat at a time."""
    rng = random.Random(seed)
    written = n = 0
    with open(path, "w", encoding="utf-8") as f:
        f.write("[")
        while written < size_bytes:
            chunk = ("," if n else "") + json.dumps(chat_row(rng, n, rng.randint(3, 20)), ensure_ascii=False)
            f.write(chunk)
            written += len(chunk)
            n += 1
        f.write("]")


if __name__ == "__main__":
    write(Path(sys.argv[1]), int(float(sys.argv[2]) * 1024 * 1024))

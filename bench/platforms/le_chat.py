"""Generate a Mistral Le Chat export zip (`chat-<uuid>.json` files, each the unordered messages of
one chat, and `chat-<uuid>-files/` folders) of about a given size on disk, one chat written at a
time: realistic message sizes (0.5-3 KB), web-search tool calls with references, uploads.

    .venv/bin/python bench/platforms/le_chat.py /tmp/le-chat.zip 100   # MB
"""

from __future__ import annotations

import json
import random
import sys
import uuid
import zipfile
from datetime import UTC, datetime
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


def _message(rng: random.Random, chat_id: str, role: str, t: float, **fields) -> dict:
    m = {"id": str(uuid.UUID(int=rng.getrandbits(128))), "version": 0, "chatId": chat_id, "content": "", "contentChunks": None,
         "role": role, "createdAt": datetime.fromtimestamp(t, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
         "reaction": "neutral", "reactionDetail": None, "reactionComment": None, "preference": None, "preferenceOver": None,
         "context": None, "canvas": [], "quotes": [], "files": []}
    m.update(fields)
    return m


def chat(rng: random.Random, index: int, turns: int) -> tuple[str, list[dict], list[str]]:
    chat_id = str(uuid.UUID(int=rng.getrandbits(128)))
    t, messages, uploads = T0 + index * 3600, [], []
    for _ in range(turns):
        t += rng.randint(5, 90)
        files = []
        if rng.random() < 0.05:
            name = f"upload-{len(uploads)}.pdf"
            files, uploads = [{"type": "document", "name": name}], uploads + [name]
        messages.append(_message(rng, chat_id, "user", t, content=_text(rng, 100, 1200), files=files))
        answer = _text(rng)
        extra = {}
        if rng.random() < 0.2:
            head, tail = answer[: len(answer) // 2], answer[len(answer) // 2:]
            extra = {"contentChunks": [
                {"type": "tool_call", "id": str(rng.getrandbits(64)), "name": "web_search", "isDone": True, "success": True,
                 "toolType": "rag", "publicArguments": _text(rng, 20, 60), "publicResult": {"results": 3}},
                {"type": "text", "text": head}, {"type": "reference", "referenceIds": [0]}, {"type": "text", "text": tail}],
                "references": [{"title": "A source", "url": "https://www.example.org/a", "description": _text(rng, 100, 300)}]}
        messages.append(_message(rng, chat_id, "assistant", t + rng.randint(1, 20), content=answer, **extra))
    rng.shuffle(messages)  # the export lists them out of order
    return chat_id, messages, uploads


def write(path: Path, size_bytes: int, seed: int = 7) -> None:
    """A Le Chat export zip of about `size_bytes` on disk (deflated), one chat at a time."""
    rng = random.Random(seed)
    n = 0
    with open(path, "wb") as raw, zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as zf:
        while raw.tell() < size_bytes:
            chat_id, messages, uploads = chat(rng, n, rng.randint(2, 20))
            zf.writestr(f"chat-{chat_id}.json", json.dumps(messages, indent=2))
            for name in uploads:
                zf.writestr(f"chat-{chat_id}-files/{name}", b"%PDF-1.4\n" + rng.randbytes(2048) + b"\n%%EOF\n")
            n += 1


if __name__ == "__main__":
    write(Path(sys.argv[1]), int(float(sys.argv[2]) * 1024 * 1024))

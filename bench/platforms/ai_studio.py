"""Generate a Drive Takeout zip of Google AI Studio prompt files (`Takeout/Drive/Google AI Studio/<title>`,
no extension) of about a given size on disk, one prompt written at a time: realistic chunk sizes
(0.5-3 KB), thought chunks, uploads, code execution now and then.

    .venv/bin/python bench/platforms/ai_studio.py /tmp/ai-studio.zip 100   # MB
"""

from __future__ import annotations

import json
import random
import sys
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


def _time(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).isoformat().replace("+00:00", "Z")


def prompt(rng: random.Random, index: int, turns: int) -> dict:
    t = T0 + index * 3600
    chunks = []
    for _ in range(turns):
        t += rng.randint(5, 90)
        if rng.random() < 0.1:
            chunks.append({"driveDocument": {"id": f"1drive{rng.getrandbits(60):x}"}, "role": "user", "tokenCount": rng.randint(100, 9000), "createTime": _time(t)})
        chunks.append({"text": _text(rng, 100, 1200), "role": "user", "tokenCount": rng.randint(10, 300), "createTime": _time(t)})
        if rng.random() < 0.5:
            thought = _text(rng, 300, 1500)
            chunks.append({"text": thought, "role": "model", "isThought": True, "thinkingBudget": -1, "tokenCount": rng.randint(100, 900),
                           "createTime": _time(t + 2), "thoughtSignatures": ["c2ln"], "parts": [{"text": thought, "thought": True}]})
        if rng.random() < 0.1:
            chunks.append({"executableCode": {"language": "PYTHON", "code": "print(sum(range(10)))"}, "role": "model", "tokenCount": 20, "createTime": _time(t + 3)})
            chunks.append({"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "45\n"}, "role": "model", "tokenCount": 3, "createTime": _time(t + 4)})
        chunks.append({"text": _text(rng), "role": "model", "finishReason": "STOP", "tokenCount": rng.randint(50, 900), "createTime": _time(t + 5)})
    return {"runSettings": {"temperature": 1.0, "model": "models/gemini-2.5-pro", "topP": 0.95, "topK": 64, "maxOutputTokens": 65536},
            "systemInstruction": {"text": _text(rng, 100, 400)} if rng.random() < 0.3 else {},
            "chunkedPrompt": {"chunks": chunks, "pendingInputs": [{"text": "", "role": "user"}]}}


def write(path: Path, size_bytes: int, seed: int = 7) -> None:
    """A Takeout zip of prompt files of about `size_bytes` on disk (deflated), one prompt at a time."""
    rng = random.Random(seed)
    n = 0
    with open(path, "wb") as raw, zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as zf:
        while raw.tell() < size_bytes:
            zf.writestr(f"Takeout/Drive/Google AI Studio/Generated prompt {n}", json.dumps(prompt(rng, n, rng.randint(2, 15)), indent=2))
            n += 1


if __name__ == "__main__":
    write(Path(sys.argv[1]), int(float(sys.argv[2]) * 1024 * 1024))

"""pretty_json writes exactly what json.dumps(ensure_ascii=False, indent=2) writes."""

from __future__ import annotations

import json
import random

from chatetl.exports.jsontext import pretty_json


def _text(rng: random.Random) -> str:
    pools = [(0, 0x80), (0x80, 0x800), (0x800, 0x3000), (0x1F300, 0x1F700)]
    chars = []
    for _ in range(rng.randrange(0, 24)):
        lo, hi = rng.choice(pools)
        chars.append(chr(rng.choice([rng.randrange(lo, hi), 0x2028, 0x2029, 0x7F, 0xFEFF, 0x00, 0x1B, 0x22, 0x5C])))
    return "".join(chars)


def test_same_bytes_as_the_standard_library_on_random_text():
    rng = random.Random(7)
    for _ in range(5000):
        text = _text(rng)
        value = {
            "schema": "chat-export/1",
            "title": text,
            "messages": [{"role": "user", "text": text, "sources": [], "n": rng.randrange(-10**9, 10**9), "f": rng.random() * 1e6}],
            "flags": [True, False, None],
            "empty": {},
        }
        assert pretty_json(value) == json.dumps(value, ensure_ascii=False, indent=2)


def test_a_lone_surrogate_is_written_as_the_standard_library_writes_it():
    value = {"text": "half \ud83d of an emoji"}
    assert pretty_json(value) == json.dumps(value, ensure_ascii=False, indent=2)

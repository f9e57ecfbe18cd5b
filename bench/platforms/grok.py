"""A generated xAI Grok prod-grok-backend.json of about a given size, written conversation by conversation.

Realistic shapes (chatetl/readers/grok.py): one object whose `conversations` hold
{conversation, responses}, senders in mixed case, Mongo `{"$date": {"$numberLong"}}` times,
`parent_response_id` trees (a regenerated answer in one conversation of five), thinking traces
with a tool card on some answers, web search results, messages of 0.5-3 KB; then the
`projects`, `tasks` and `media_posts` sections the real file ends with.

    .venv/bin/python bench/platforms/grok.py /tmp/prod-grok-backend.json 100   # MB
"""

from __future__ import annotations

import json
import random
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

WORDS = ["the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "with", "was", "on", "be", "by", "this", "are", "from", "at", "or", "an", "have", "not", "which", "but", "can", "more"]
START = datetime(2026, 1, 1, tzinfo=UTC)


def _text(rng: random.Random, size: int) -> str:
    words: list[str] = []
    n = 0
    while n < size:
        w = rng.choice(WORDS)
        words.append(w)
        n += len(w) + 1
    return " ".join(words)


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128)))


def _mongo(t: datetime) -> dict:
    return {"$date": {"$numberLong": str(int(t.timestamp() * 1000))}}


def conversation(rng: random.Random, index: int) -> dict:
    conv_id = _uuid(rng)
    t = START + timedelta(hours=index)
    created = t
    responses: list[dict] = []
    parent: str | None = None

    def add(sender: str, message: str, under: str | None, **fields) -> str:
        nonlocal t
        rid = _uuid(rng)
        t += timedelta(seconds=rng.uniform(2, 90))
        response = {"_id": rid, "conversation_id": conv_id, "message": message, "sender": sender,
                    "create_time": _mongo(t), "model": fields.pop("model", ""), **fields}
        if under is not None:
            response["parent_response_id"] = under
        responses.append({"response": response, "share_link": None})
        return rid

    for turn in range(rng.randint(3, 12)):
        question = add(rng.choice(["human", "Human"]), _text(rng, rng.randint(500, 1500)), parent)
        answers = 2 if turn == 1 and index % 5 == 0 else 1
        for _ in range(answers):
            fields: dict = {"model": rng.choice(["grok-3", "grok-4", "grok-4-auto"])}
            if turn % 3 == 0:
                card = (f"<xai:tool_usage_card><xai:tool_usage_card_id>{_uuid(rng)}</xai:tool_usage_card_id>"
                        "<xai:tool_name>web_search</xai:tool_name>"
                        f"<xai:tool_args><![CDATA[{json.dumps({'query': _text(rng, 30)})}]]></xai:tool_args></xai:tool_usage_card>")
                fields["thinking_trace"] = _text(rng, rng.randint(400, 1500)) + card
            if turn % 4 == 2:
                fields["web_search_results"] = [
                    {"url": f"https://example.org/{index}/{turn}/{k}", "title": _text(rng, 40), "preview": _text(rng, 160)}
                    for k in range(3)
                ]
            parent = add(rng.choice(["assistant", "ASSISTANT"]), _text(rng, rng.randint(800, 3000)), question, **fields)
    return {
        "conversation": {
            "id": conv_id, "user_id": "00000000-0000-4000-8000-000000000001", "create_time": created.isoformat().replace("+00:00", "Z"),
            "modify_time": t.isoformat().replace("+00:00", "Z"), "title": f"Generated chat {index}", "summary": "",
            "starred": False, "temporary": False, "leaf_response_id": parent if index % 2 else None,
            "system_prompt_name": "", "media_types": [], "asset_ids": [],
        },
        "responses": responses,
    }


def write(path: Path, size_bytes: int) -> None:
    """Write a prod-grok-backend.json of about `size_bytes`, streamed (one conversation in memory at a time)."""
    rng = random.Random(21)
    written = 0
    with open(path, "w", encoding="utf-8") as out:
        out.write('{"conversations": [')
        index = 0
        while written < size_bytes:
            text = json.dumps(conversation(rng, index), ensure_ascii=False)
            out.write(("," if index else "") + "\n" + text)
            written += len(text) + 2
            index += 1
        out.write('\n],\n"projects": [], "tasks": [], "media_posts": []}\n')


if __name__ == "__main__":
    write(Path(sys.argv[1]), int(float(sys.argv[2]) * 1_000_000))

"""A generated Mistral Le Chat export: a zip of `chat-<uuid>.json` files (each the messages of one
chat, not in order) and a `chat-<uuid>-files/` folder with an upload. One chat has a web search
with references, the other an answer the user preferred over a second one. Never real data."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from chatetl.samples.common import BASE_TIME, sample_id, zip_files

START = BASE_TIME + 7 * 86400  # 2026-01-08
PDF = b"%PDF-1.4\n% a generated one-page sample\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"


def _message(chat: str, n: int, role: str, content: str, offset: float, **fields: Any) -> dict[str, Any]:
    message = {
        "id": sample_id("le-chat", chat, n),
        "version": 0,
        "chatId": sample_id("le-chat-chat", chat),
        "content": content,
        "contentChunks": None,
        "role": role,
        "createdAt": datetime.fromtimestamp(START + offset, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "reaction": "neutral",
        "reactionDetail": None,
        "reactionComment": None,
        "preference": None,
        "preferenceOver": None,
        "context": None,
        "canvas": [],
        "quotes": [],
        "files": [],
    }
    message.update(fields)
    return message


def _recipe_chat() -> list[dict[str, Any]]:
    chat = "recipe"
    answer = "Yes: the recipe works with oat milk. Use the same amount and add a teaspoon of lemon juice so it curdles like buttermilk."
    search = {
        "type": "tool_call", "id": sample_id("le-chat-tool", chat, 1), "name": "web_search", "turn": 0, "isDone": True, "success": True,
        "toolType": "rag", "publicArguments": "oat milk instead of buttermilk pancakes", "isInterrupted": False,
        "publicResult": {"results": 2}, "requiresConfirmation": False,
    }
    return [
        # (the export lists a chat's messages out of order)
        _message(chat, 1, "assistant", answer, 6, contentChunks=[
            search,
            {"type": "text", "text": "Yes: the recipe works with oat milk."},
            {"type": "reference", "referenceIds": [0]},
            {"type": "text", "text": " Use the same amount and add a teaspoon of lemon juice so it curdles like buttermilk."},
        ], references=[{"title": "Dairy-free baking swaps", "url": "https://baking.example.org/dairy-free-swaps",
                        "description": "Plant milks with an acid stand in for buttermilk."}]),
        _message(chat, 0, "user", "Can I make the pancakes in this recipe with oat milk?", 0,
                 files=[{"type": "document", "name": "pancakes.pdf"}]),
        _message(chat, 3, "assistant", "About 12 minutes: 2-3 minutes a side, four batches in a large pan.", 40),
        _message(chat, 2, "user", "How long will it take for eight pancakes?", 30),
    ]


def _naming_chat() -> list[dict[str, Any]]:
    chat = "naming"
    passed_over = sample_id("le-chat", chat, 2)
    return [
        _message(chat, 0, "user", "Suggest a name for a bakery that only sells rye bread.", 0),
        _message(chat, 1, "assistant", "How about \"Rye & Shine\"?", 5, preference="preferred", preferenceOver=passed_over),
        _message(chat, 2, "assistant", "\"The Rye Loft\" has a warm ring to it.", 5),
        _message(chat, 3, "user", "Rye & Shine it is. A slogan?", 50),
        _message(chat, 4, "assistant", "\"Rise and shine, the rye is fine.\"", 54, reaction="like"),
    ]


def sample() -> tuple[str, bytes]:
    recipe, naming = sample_id("le-chat-chat", "recipe"), sample_id("le-chat-chat", "naming")
    files: dict[str, bytes | str] = {
        f"chat-{recipe}.json": json.dumps(_recipe_chat(), indent=2, ensure_ascii=False),
        f"chat-{recipe}-files/pancakes.pdf": PDF,
        f"chat-{naming}.json": json.dumps(_naming_chat(), indent=2, ensure_ascii=False),
    }
    return "raw/samples/le-chat-export.zip", zip_files(files)

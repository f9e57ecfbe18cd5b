"""A generated xAI Grok account export: a zip of ttl/30d/export_data/<user>/prod-grok-backend.json
(one object: `conversations`, `projects`, `tasks`, `media_posts`) with its account and billing
files and an uploaded asset. One chat thinks, calls web search and cites what it found; the other
has a regenerated answer that `leaf_response_id` names as the active one, and a photo upload.
Senders in mixed case and Mongo dates, as xAI writes them. Beside it, `mid_2025_export`: an older
export's chats file, spelled as mid-2025 exports spell it (`conversation_id`, `response_id`), its
first prompt's parent a response the export does not hold; and `web_capture`: one chat as a
grok.com capture saves it (camelCase REST bodies). Never real data."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from chatetl.samples.common import BASE_TIME, sample_id, zip_files

START = BASE_TIME + 11 * 86400  # 2026-01-12
USER = sample_id("grok-user", "sample")
FOLDER = f"ttl/30d/export_data/{USER}"
PHOTO = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"


def _iso(offset: float) -> str:
    return datetime.fromtimestamp(START + offset, tz=UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _mongo(offset: float) -> dict[str, Any]:
    return {"$date": {"$numberLong": str(int((START + offset) * 1000))}}


def _response(chat: str, n: int, sender: str, message: str, offset: float, parent: int | None, **fields: Any) -> dict[str, Any]:
    response = {
        "_id": sample_id("grok-response", chat, n), "conversation_id": sample_id("grok", chat), "message": message, "sender": sender,
        "create_time": _mongo(offset), "xai_user_id": USER, "metadata": {}, "model": fields.pop("model", ""), **fields,
    }
    if parent is not None:
        response["parent_response_id"] = sample_id("grok-response", chat, parent)
    return {"response": response, "share_link": None}


def _conversation(chat: str, title: str, responses: list[dict[str, Any]], leaf: int | None = None) -> dict[str, Any]:
    times = [r["response"]["create_time"]["$date"]["$numberLong"] for r in responses]
    return {
        "conversation": {
            "id": sample_id("grok", chat), "user_id": USER, "anon_user_id": None, "create_time": _iso(int(times[0]) / 1000 - START),
            "modify_time": _iso(int(times[-1]) / 1000 - START), "system_prompt_id": None, "temporary": False,
            "leaf_response_id": sample_id("grok-response", chat, leaf) if leaf is not None else None, "title": title, "summary": "",
            "asset_ids": [], "root_asset_id": None, "x_user_id": None, "starred": False, "system_prompt_name": "",
            "media_types": [], "controller": None, "task_result_id": None, "team_id": None, "shared_with_team": None,
            "shared_with_user_ids": [],
        },
        "responses": responses,
    }


def _search_chat() -> dict[str, Any]:
    chat = "volcano"
    card = ("<xai:tool_usage_card><xai:tool_usage_card_id>" + sample_id("grok-card", chat, 1) + "</xai:tool_usage_card_id>"
            "<xai:tool_name>web_search</xai:tool_name><xai:tool_args><![CDATA[{\"query\": \"tallest volcano solar system\"}]]>"
            "</xai:tool_args></xai:tool_usage_card>")
    results = [
        {"url": "https://planets.example.org/olympus-mons", "title": "Olympus Mons", "preview": "About 22 km high, on Mars.",
         "site_name": "Planets Encyclopedia"},
        {"url": "https://space.example.net/volcanoes", "title": "Volcanoes beyond Earth", "preview": "Mars, Venus and Io all have volcanoes."},
    ]
    return _conversation(chat, "Tallest volcano in the solar system", [
        _response(chat, 0, "human", "What is the tallest volcano in the solar system?", 0, None),
        _response(chat, 1, "ASSISTANT", "Olympus Mons on Mars: about 22 km high, roughly two and a half times Mount Everest.", 9, 0,
                  model="grok-4", thinking_trace="The user wants the tallest volcano. I'll check the current figure." + card,
                  thinking_start_time=_mongo(2), thinking_end_time=_mongo(7),
                  steps=[{"tag_order": ["header", "summary"], "tagged_text": {"header": "Searching the web", "summary": "Found Olympus Mons"},
                          "tool_usage_results": [{"tool_usage_card_id": sample_id("grok-card", chat, 1), "web_results": results}]}],
                  web_search_results=results, cited_web_search_results=results[:1]),
        _response(chat, 2, "Human", "Is it still active?", 40, 1),
        _response(chat, 3, "assistant", "Probably not: its youngest lava flows are tens of millions of years old, so it is considered dormant.", 47, 2,
                  model="grok-4"),
    ])


def _branch_chat() -> dict[str, Any]:
    chat = "cat"
    base = 5400.0
    return _conversation(chat, "A name for a grey cat", [
        _response(chat, 0, "human", "Here is my new cat. What should I call her?", base, None, file_attachments=[sample_id("grok-asset", "cat")]),
        _response(chat, 1, "assistant", "She looks like a \"Misty\".", base + 5, 0, model="grok-3"),
        # regenerated: the user kept this second answer and went on from it
        _response(chat, 2, "assistant", "With that grey coat: \"Ash\" or \"Pebble\".", base + 30, 0, model="grok-3"),
        _response(chat, 3, "human", "Pebble it is. What does she need on day one?", base + 80, 2),
        _response(chat, 4, "assistant", "Water, food she already knows, a litter box far from the food, and a quiet room to hide in.",
                  base + 86, 3, model="grok-3"),
    ], leaf=4)


def _mid_2025_chat() -> dict[str, Any]:
    """A chat in the mid-2025 spelling: the ids under `conversation_id` and `response_id`."""
    chat = "tide"
    base = 9000.0
    item = _conversation(chat, "Why the tide comes twice a day", [
        _response(chat, 0, "human", "Why are there two high tides a day?", base, None),
        _response(chat, 1, "assistant", "The Moon pulls the near side's water; the far side is pulled less and lags behind: "
                  "two bulges, and the Earth turns under both.", base + 6, 0, model="grok-3"),
    ])
    conversation = item["conversation"]
    conversation["conversation_id"] = conversation.pop("id")
    for n, wrapper in enumerate(item["responses"]):
        response = wrapper["response"]
        response["response_id"] = response.pop("_id")
        if n == 0:  # an earlier response of the chat the export does not hold: the prompt is read as the root
            response["parent_response_id"] = sample_id("grok-response", chat, "before")
    return item


def sample() -> tuple[str, bytes]:
    backend = {"conversations": [_search_chat(), _branch_chat()], "projects": [], "tasks": [], "media_posts": []}
    files: dict[str, bytes | str] = {
        f"{FOLDER}/prod-grok-backend.json": json.dumps(backend, ensure_ascii=False, indent=2),
        f"{FOLDER}/prod-mc-auth-mgmt-api.json": json.dumps({"user": {"userId": USER, "givenName": "Sample"}, "sessions": []}, indent=2),
        f"{FOLDER}/prod-mc-billing.json": json.dumps({"balance": {"credits": 0}}, indent=2),
        f"{FOLDER}/prod-mc-asset-server/{sample_id('grok-asset', 'cat')}/content": PHOTO,
    }
    return "raw/samples/grok-export.zip", zip_files(files)


def mid_2025_export() -> tuple[str, bytes]:
    """An older export's chats file alone, in the mid-2025 spelling (see `_mid_2025_chat`)."""
    backend = {"conversations": [_mid_2025_chat()], "projects": [], "tasks": [], "media_posts": []}
    return "raw/samples/grok-2025/prod-grok-backend.json", json.dumps(backend, ensure_ascii=False, indent=2).encode()


def web_capture() -> tuple[str, bytes]:
    """One chat as a grok.com web capture saves it: the conversation's REST body and its loaded responses
    (camelCase keys; `parentResponseId` "" for the first prompt), with a regenerated answer."""
    chat = "sky"
    base = 12000.0
    conversation = {"conversationId": sample_id("grok", chat), "title": "Why the sky is blue", "starred": False,
                    "createTime": _iso(base), "modifyTime": _iso(base + 70), "systemPromptName": "", "temporary": False}

    def response(n: int, sender: str, message: str, offset: float, parent: int | None, **fields: Any) -> dict[str, Any]:
        return {"responseId": sample_id("grok-response", chat, n), "message": message, "sender": sender, "createTime": _iso(base + offset),
                "parentResponseId": sample_id("grok-response", chat, parent) if parent is not None else "", "partial": False, **fields}

    responses = [
        response(0, "human", "Why is the sky blue?", 0, None),
        response(1, "assistant", "Air scatters short (blue) wavelengths far more than long (red) ones: Rayleigh scattering.", 5, 0,
                 model="grok-4", thinkingTrace="Recall why short wavelengths scatter more."),
        response(2, "assistant", "Sunlight bounces off air molecules, and blue light bounces the most, so it comes from every "
                 "direction of the sky.", 60, 0, model="grok-4"),
        response(3, "human", "And sunsets?", 70, 2),
        response(4, "assistant", "At sunset the light crosses much more air: the blue is scattered away before it reaches you, "
                 "the reds are left.", 75, 3, model="grok-4"),
    ]
    capture = {"conversation": conversation, "responses": {"responses": responses}}
    return "raw/samples/grok-web-capture.json", json.dumps(capture, ensure_ascii=False, indent=2).encode()

"""A generated DeepSeek account export: a zip of `conversations.json` (the `mapping` trees rooted
at "root", messages made of fragments) and `user.json`. One chat thinks, searches the web and cites
it, with a PDF attached; the other has a regenerated answer (a branch, the later one active) and
an agent search step. Never real data."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

from chatetl.samples.common import BASE_TIME, sample_id, zip_files

START = BASE_TIME + 9 * 86400  # 2026-01-10
BEIJING = timezone(timedelta(hours=8))  # the export's times carry DeepSeek's +08:00


def _iso(offset: float) -> str:
    return datetime.fromtimestamp(START + offset, tz=BEIJING).isoformat(timespec="milliseconds")


class _Tree:
    """One conversation's `mapping`: nodes numbered as DeepSeek numbers them, under "root"."""

    def __init__(self) -> None:
        self.mapping: dict[str, dict[str, Any]] = {"root": {"id": "root", "parent": None, "children": [], "message": None}}

    def add(self, parent: str, offset: float, fragments: list[dict[str, Any]], model: str = "deepseek-chat", files: list[dict[str, Any]] | None = None) -> str:
        node_id = str(len(self.mapping))
        for n, fragment in enumerate(fragments, 1):
            fragment.setdefault("id", n)
        self.mapping[node_id] = {
            "id": node_id, "parent": parent, "children": [],
            "message": {"files": files or [], "model": model, "inserted_at": _iso(offset), "fragments": fragments},
        }
        self.mapping[parent]["children"].append(node_id)
        return node_id


def _search_chat() -> dict[str, Any]:
    tree = _Tree()
    results = [
        {"url": "https://tides.example.org/spring-neap", "title": "Spring and neap tides explained",
         "snippet": "When the Sun and Moon line up, their pulls add up: spring tides.", "cite_index": 1,
         "site_name": "Tides Explained", "published_at": None},
        {"url": "https://ocean.example.net/moon", "title": "How the Moon moves the sea",
         "snippet": "The Moon's gravity raises a bulge of water on the near and far side.", "cite_index": 2,
         "site_name": "Ocean Notes", "published_at": None},
    ]
    q1 = tree.add("root", 0, [{"type": "REQUEST", "content": "Why are some tides much higher than others? My notes are attached."}],
                  model="deepseek-reasoner",
                  files=[{"id": sample_id("deepseek-file", "tides"), "file_name": "tide-notes.pdf", "file_size": 48213, "status": "SUCCESS"}])
    a1 = tree.add(q1, 14, [
        {"type": "THINK", "content": "The user asks about tide heights. Spring and neap tides come from the Sun-Moon alignment; "
                                     "I should search to cite a clear explanation."},
        {"type": "SEARCH", "results": results},
        {"type": "RESPONSE", "content": "Tides are highest when the Sun and Moon line up (new and full moon): their pulls add up, "
                                        "giving spring tides [citation:1]. At quarter moons they pull at right angles and the "
                                        "tides are smaller, neap tides [citation:2]."},
    ], model="deepseek-reasoner")
    q2 = tree.add(a1, 60, [{"type": "REQUEST", "content": "How often do spring tides happen?"}], model="deepseek-reasoner")
    tree.add(q2, 71, [
        {"type": "THINK", "content": "Twice a lunar month: at every new and full moon."},
        {"type": "RESPONSE", "content": "About twice a month: a day or two after each new moon and each full moon, "
                                        "so roughly every two weeks."},
    ], model="deepseek-reasoner")
    return {"id": sample_id("deepseek", "tides"), "title": "Why tides differ in height", "inserted_at": _iso(0),
            "updated_at": _iso(71), "mapping": tree.mapping}


def _branch_chat() -> dict[str, Any]:
    tree = _Tree()
    base = 3600.0
    q1 = tree.add("root", base, [{"type": "REQUEST", "content": "Suggest a name for a small bakery that only sells sourdough."}])
    tree.add(q1, base + 6, [{"type": "RESPONSE", "content": "How about \"The Daily Crumb\"?"}])
    # the user asked for another answer: a sibling of the first, the one they went on from
    a2 = tree.add(q1, base + 40, [
        {"type": "TOOL_SEARCH", "queries": ["bakery names sourdough"], "status": "FINISHED",
         "results": [{"url": "https://names.example.com/bakeries", "title": "Bakery name ideas", "snippet": "Short names that say what you bake."}]},
        {"type": "RESPONSE", "content": "\"Wild Rise\": short, and it says the bread is leavened with wild yeast."},
    ])
    q2 = tree.add(a2, base + 90, [{"type": "REQUEST", "content": "Great, and a slogan to go with it?"}])
    tree.add(q2, base + 97, [{"type": "RESPONSE", "content": "\"Slow bread, wild yeast, baked this morning.\""}])
    return {"id": sample_id("deepseek", "bakery"), "title": "Naming a sourdough bakery", "inserted_at": _iso(base),
            "updated_at": _iso(base + 97), "mapping": tree.mapping}


def sample() -> tuple[str, bytes]:
    user = {"id": sample_id("deepseek-user", "sample"), "email": "sample.user@example.com", "mobile": None}
    files = {
        "conversations.json": json.dumps([_search_chat(), _branch_chat()], ensure_ascii=False, indent=2),
        "user.json": json.dumps(user, indent=2),
    }
    return "raw/samples/deepseek-export.zip", zip_files(files)


def web_api() -> tuple[str, bytes]:
    """One chat as a userscript saves DeepSeek's web API answer (`history_messages`): the whole response
    (`data.biz_data`), integer message ids, a regenerated answer, the active leaf `current_message_id`."""
    chat_id = sample_id("deepseek", "web-api")
    start = 1767500000.0  # epoch seconds, as the web API writes them

    def message(n: int, parent: int | None, role: str, offset: float, fragments: list[dict[str, Any]]) -> dict[str, Any]:
        return {"message_id": n, "parent_id": parent, "model": "", "role": role, "thinking_enabled": False, "status": "FINISHED",
                "accumulated_token_usage": 20 * n, "files": [], "inserted_at": start + offset, "search_enabled": False,
                "feedback": None, "conversation_mode": "DEFAULT",
                "fragments": [{"id": i + 1, **fragment} for i, fragment in enumerate(fragments)]}

    session = {"id": chat_id, "seq_id": 7, "agent": "chat", "title": "A week of dinners", "title_type": "SYSTEM", "version": 4,
               "current_message_id": 5, "pinned": False, "inserted_at": start, "updated_at": start + 95}
    messages = [
        message(1, None, "USER", 1, [{"type": "REQUEST", "content": "Plan three cheap dinners for this week."}]),
        message(2, 1, "ASSISTANT", 8, [{"type": "RESPONSE", "content": "Lentil soup, egg fried rice and a tray of roast vegetables."}]),
        message(3, 1, "ASSISTANT", 40, [{"type": "THINK", "content": "Cheap, quick, little washing up."},
                                         {"type": "RESPONSE", "content": "Bean chilli, pasta with peas and an omelette night."}]),
        message(4, 3, "USER", 95, [{"type": "REQUEST", "content": "Bean chilli it is: what do I buy?"}]),
        message(5, 4, "ASSISTANT", 99, [{"type": "RESPONSE", "content": "Two tins of beans, a tin of tomatoes, an onion, garlic, "
                                        "cumin and rice."}]),
    ]
    body = {"code": 0, "msg": "", "data": {"biz_code": 0, "biz_msg": "", "biz_data": {"chat_session": session, "chat_messages": messages}},
            "url": f"https://chat.deepseek.com/a/chat/s/{chat_id}"}
    return "raw/samples/deepseek-web-api.json", json.dumps(body, ensure_ascii=False, indent=2).encode()

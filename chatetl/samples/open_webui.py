"""A generated Open WebUI chat export (Settings > Chats > Export): two chats, one with a
regenerated answer the user went back from, reasoning and tool calls folded in `<details>`
blocks, web-search sources, a system prompt and an uploaded image. Never real data."""

from __future__ import annotations

import html
import json
from typing import Any

from chatetl.samples.common import BASE_TIME, sample_id

START = int(BASE_TIME) + 5 * 86400  # 2026-01-06


def _reasoning(text: str, seconds: int) -> str:
    quoted = html.escape("\n".join(f"> {line}" for line in text.splitlines()))
    return f'<details type="reasoning" done="true" duration="{seconds}">\n<summary>Thought for {seconds} seconds</summary>\n{quoted}\n</details>\n'


def _tool_call(call_id: str, name: str, arguments: dict[str, Any], result: Any) -> str:
    args = html.escape(json.dumps(json.dumps(arguments)))
    res = html.escape(json.dumps(result, ensure_ascii=False))
    return (
        f'<details type="tool_calls" done="true" id="{call_id}" name="{name}" arguments="{args}" result="{res}" files="" '
        f'embeds="{html.escape(json.dumps(""))}">\n<summary>Tool Executed</summary>\n</details>\n'
    )


class _Chat:
    """One chat row with its `history` tree."""

    def __init__(self, name: str, title: str, model: str, start: int) -> None:
        self.name, self.title, self.model, self.t = name, title, model, start
        self.start = start
        self.messages: dict[str, dict[str, Any]] = {}

    def add(self, role: str, content: str, parent: str | None, **fields: Any) -> str:
        mid = sample_id("open-webui", self.name, len(self.messages))
        self.t += 9
        message: dict[str, Any] = {"id": mid, "parentId": parent, "childrenIds": [], "role": role, "content": content, "timestamp": self.t}
        if role == "user":
            message["models"] = [self.model]
        else:
            message.update({"model": self.model, "modelName": self.model.title(), "modelIdx": 0, "userContext": None, "done": True})
        message.update(fields)
        if parent is not None:
            self.messages[parent]["childrenIds"].append(mid)
        self.messages[mid] = message
        return mid

    def row(self, current: str, params: dict[str, Any] | None = None, tags: list[str] | None = None) -> dict[str, Any]:
        chat_id = sample_id("open-webui-chat", self.name)
        branch: list[dict[str, Any]] = []
        node: str | None = current
        while node is not None:
            branch.append(self.messages[node])
            node = self.messages[node]["parentId"]
        return {
            "id": chat_id,
            "user_id": sample_id("open-webui-user", "sample"),
            "title": self.title,
            "chat": {
                "id": chat_id,
                "title": self.title,
                "models": [self.model],
                "params": params or {},
                "history": {"messages": self.messages, "currentId": current},
                "messages": list(reversed(branch)),
                "tags": [],
                "timestamp": self.start * 1000,
                "files": [],
            },
            "updated_at": self.t,
            "created_at": self.start,
            "share_id": None,
            "archived": False,
            "pinned": False,
            "meta": {"tags": tags or []},
            "folder_id": None,
        }


def _sourdough() -> dict[str, Any]:
    chat = _Chat("sourdough", "Sourdough starter tips", "llama3.1:8b", START)
    q1 = chat.add("user", "My sourdough starter smells like nail polish remover. Is it ruined?", None)
    first = chat.add("assistant", "It is not ruined: the acetone smell means it is hungry. Feed it more often, twice a day.", q1)
    chat.add("assistant", "Probably not. Try discarding half and feeding it with equal parts flour and water.", q1)  # the regenerated one
    q2 = chat.add("user", "How warm should I keep it?", first)
    answer = _reasoning("The user asks about temperature.\nStarters are most active around 24-26 C.", 3)
    a2 = chat.add("assistant", answer + "Keep it around 24-26 C; cooler slows it down, which is fine between bakes.", q2)
    return chat.row(a2, tags=["baking"])  # the user went back to the first answer


def _weather() -> dict[str, Any]:
    chat = _Chat("weather", "Packing for Lisbon", "qwen2.5:14b", START + 3600)
    photo = {
        "type": "image", "url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
    }
    q1 = chat.add("user", "I fly to Lisbon tomorrow with this jacket. What weather should I expect?", None, files=[photo])
    call = _tool_call("call_1", "get_weather", {"city": "Lisbon", "days": 2}, "Tomorrow: 19 C, light rain in the afternoon.")
    sources = [{
        "source": {"name": "https://weather.example.org/lisbon", "type": "web_search"},
        "document": ["Lisbon forecast: 19 C, showers in the afternoon, wind 15 km/h."],
        "metadata": [{"source": "https://weather.example.org/lisbon", "title": "Lisbon forecast", "name": "Lisbon forecast"}],
    }]
    a1 = chat.add("assistant", call + "Expect about 19 C with light rain in the afternoon: the jacket works, add an umbrella.", q1, sources=sources)
    q2 = chat.add("user", "And shoes?", a1)
    a2 = chat.add("assistant", "Waterproof sneakers: the cobblestones get slippery when wet.", q2)
    return chat.row(a2, params={"system": "You are a concise travel assistant.", "temperature": 0.4})


def sample() -> tuple[str, bytes]:
    rows = [_sourdough(), _weather()]
    return "raw/samples/open-webui-chat-export.json", (json.dumps(rows, indent=1, ensure_ascii=False) + "\n").encode()

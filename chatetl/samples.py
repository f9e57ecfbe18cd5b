"""Built-in sample exports, generated (never real people's data), for the demo and tests.

`chatgpt_export()` is a ChatGPT account export as the 2026 zip ships it: sharded
conversations with a manifest, a regenerated answer where the user went back to
the first version, a hidden system node, custom instructions, a Python tool call
with its output, reasoning, a browsing citation and an image upload.
"""

from __future__ import annotations

import io
import json
import uuid
import zipfile
from typing import Any

BASE_TIME = 1767225600.0  # 2026-01-01T00:00:00Z


def _id(*parts: Any) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "chatetl-sample:" + "/".join(map(str, parts))))


class ChatGPTBuilder:
    """Builds one ChatGPT conversation with a real `mapping` tree."""

    def __init__(self, name: str, title: str | None, start: float) -> None:
        self.name = name
        self.conv_id = _id(name)
        self.title = title
        self.t = start
        self.start = start
        self.root = "client-created-root"
        self.mapping: dict[str, dict[str, Any]] = {self.root: {"id": self.root, "message": None, "parent": None, "children": []}}
        self.current = self.root

    def add(
        self,
        role: str,
        content: dict[str, Any],
        *,
        parent: str | None = None,
        name: str | None = None,
        recipient: str = "all",
        metadata: dict[str, Any] | None = None,
        weight: float = 1.0,
        timed: bool = True,
    ) -> str:
        parent = parent or self.current
        mid = _id(self.name, len(self.mapping))
        self.t += 7.0
        self.mapping[mid] = {
            "id": mid,
            "message": {
                "id": mid,
                "author": {"role": role, "name": name, "metadata": {}},
                "create_time": self.t if timed else None,
                "update_time": None,
                "content": content,
                "status": "finished_successfully",
                "end_turn": role == "assistant" and recipient == "all",
                "weight": weight,
                "metadata": metadata or {},
                "recipient": recipient,
                "channel": None,
            },
            "parent": parent,
            "children": [],
        }
        self.mapping[parent]["children"].append(mid)
        self.current = mid
        return mid

    def text(self, role: str, text: str, **kw: Any) -> str:
        meta = kw.pop("metadata", None) or ({"model_slug": "gpt-4o"} if role == "assistant" else {})
        return self.add(role, {"content_type": "text", "parts": [text]}, metadata=meta, **kw)

    def build(self, current: str | None = None) -> dict[str, Any]:
        return {
            "title": self.title,
            "create_time": self.start,
            "update_time": self.t,
            "mapping": self.mapping,
            "current_node": current or self.current,
            "conversation_id": self.conv_id,
            "id": self.conv_id,
            "default_model_slug": "gpt-4o",
            "is_archived": False,
            "gizmo_id": None,
        }


def chatgpt_conversations() -> list[dict[str, Any]]:
    convs = []

    # 1. A regenerated answer: the user went back to the FIRST version, so the active
    #    branch is not the last child (the seed's last-child rule would pick wrongly).
    b = ChatGPTBuilder("trip", "Planning a rail trip", BASE_TIME)
    b.add("system", {"content_type": "text", "parts": [""]}, metadata={"is_visually_hidden_from_conversation": True}, weight=0.0)
    q = b.text("user", "Which is faster from Vienna to Zagreb: train or bus?")
    first = b.text("assistant", "The direct train takes about 6.5 hours; the bus is usually 5 hours.")
    b.text("user", "Book-keeping aside, which is more comfortable?")
    kept = b.text("assistant", "The train: more legroom, a dining car and you can walk around.")
    b.text("assistant", "Regenerated: the bus is fine for short trips.", parent=q)  # abandoned branch
    convs.append(b.build(current=kept))
    assert first

    # 2. Tool use: custom instructions, reasoning, python code + execution output.
    b = ChatGPTBuilder("stats", "Mean of a list", BASE_TIME + 3600)
    b.add(
        "user",
        {"content_type": "user_editable_context", "user_profile": "I teach statistics.", "user_instructions": "Answer briefly."},
        metadata={"is_visually_hidden_from_conversation": True},
    )
    b.text("user", "What is the mean of 3, 5, 10?")
    b.add("assistant", {"content_type": "thoughts", "thoughts": [{"summary": "Compute", "content": "Sum is 18, n is 3.", "finished": True}]}, metadata={"model_slug": "o3"})
    b.add("assistant", {"content_type": "reasoning_recap", "content": "Thought for 2s"}, metadata={"model_slug": "o3"})
    b.add("assistant", {"content_type": "code", "language": "python", "text": "sum([3, 5, 10]) / 3"}, recipient="python", metadata={"model_slug": "o3"})
    b.add("tool", {"content_type": "execution_output", "text": "6.0"}, name="python")
    b.text("assistant", "The mean is **6**.\n\n```python\nsum([3, 5, 10]) / 3  # 6.0\n```", metadata={"model_slug": "o3"})
    convs.append(b.build())

    # 3. Browsing with a citation marker, an image upload, a missing timestamp, no title.
    b = ChatGPTBuilder("tram", None, BASE_TIME + 7200)
    b.add(
        "user",
        {
            "content_type": "multimodal_text",
            "parts": [
                {"content_type": "image_asset_pointer", "asset_pointer": "file-service://file-SAMPLE1", "size_bytes": 48213, "width": 640, "height": 480},
                "What tram is this?",
            ],
        },
        metadata={"attachments": [{"id": "file-SAMPLE1", "name": "tram.jpg", "mime_type": "image/jpeg", "size": 48213}]},
    )
    b.add("assistant", {"content_type": "code", "language": "unknown", "text": 'search("Vienna ULF tram")'}, recipient="browser", metadata={"model_slug": "gpt-4o"})
    b.add(
        "tool",
        {"content_type": "tether_quote", "url": "https://example.org/ulf", "domain": "example.org", "title": "ULF low-floor tram", "text": "The ULF is a low-floor tram used in Vienna."},
        name="browser",
        timed=False,
    )
    b.text(
        "assistant",
        "It looks like a ULF low-floor tram \ue200cite\ue202turn0search0\ue201 used in Vienna.",
        metadata={"model_slug": "gpt-4o", "citations": [{"metadata": {"title": "ULF low-floor tram", "url": "https://example.org/ulf"}}]},
    )
    convs.append(b.build())
    return convs


def chatgpt_export(shards: int = 2) -> bytes:
    """The conversations as a 2026-style ChatGPT export zip (sharded, with a manifest)."""
    convs = chatgpt_conversations()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        files = []
        for i in range(shards):
            name = f"conversations-{i:03d}.json"
            data = json.dumps(convs[i::shards], indent=1).encode()
            zf.writestr(name, data)
            files.append({"path": name, "size_bytes": len(data)})
        manifest = {"version": 1, "export_files": files, "logical_files": {"conversations.json": {"files": [f["path"] for f in files], "sharded": True}}}
        zf.writestr("export_manifest.json", json.dumps(manifest))
        zf.writestr("user.json", json.dumps({"id": "user-sample", "email": "sample@example.org"}))
    return buf.getvalue()


def sample_uploads() -> dict[str, bytes]:
    """Object key (under raw/) -> bytes: everything the demo puts into the bucket."""
    return {"raw/samples/chatgpt-export.zip": chatgpt_export()}

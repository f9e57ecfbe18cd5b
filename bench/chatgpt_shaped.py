"""Generate ChatGPT-export-shaped files of a given size, streamed to disk (shared by the benchmarks)."""

from __future__ import annotations

import json
import random
import uuid
from pathlib import Path

WORDS = ["the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "with", "was", "on", "be", "by", "this", "are", "from", "at", "or", "an", "have", "not", "which", "but", "can", "more"]


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _node(rng: random.Random, mid: str, i: int, t: float, parent: str, children: list[str]) -> dict:
    """Message `i` of a chat (even: the user's, odd: the assistant's) as a node of its `mapping`."""
    role = "user" if i % 2 == 0 else "assistant"
    return {
        "id": mid,
        "message": {
            "id": mid,
            "author": {"role": role, "name": None, "metadata": {}},
            "create_time": t,
            "update_time": None,
            "content": {"content_type": "text", "parts": [_text(rng, rng.randint(20, 300))]},
            "status": "finished_successfully",
            "end_turn": role == "assistant",
            "weight": 1.0,
            "metadata": {"model_slug": "gpt-4o"} if role == "assistant" else {},
            "recipient": "all",
            "channel": None,
        },
        "parent": parent,
        "children": children,
    }


def write_one_conversation(path: Path, target_bytes: int, seed: int = 7) -> int:
    """A conversations.json holding one ChatGPT conversation of about `target_bytes` (a chain of messages),
    streamed to disk; returns its messages."""
    rng = random.Random(seed)
    conv_id = str(uuid.UUID(int=rng.getrandbits(128)))
    t = 1_700_000_000.0
    root = "client-created-root"
    mid = str(uuid.UUID(int=rng.getrandbits(128)))
    with open(path, "w", encoding="utf-8") as f:
        f.write('[{"title": "One long conversation", "create_time": 1700000000.0, "mapping": {')
        f.write(json.dumps(root) + ": " + json.dumps({"id": root, "message": None, "parent": None, "children": [mid]}))
        written, parent, n = 0, root, 0
        while True:
            t += rng.uniform(1, 60)
            last = written >= target_bytes
            after = None if last else str(uuid.UUID(int=rng.getrandbits(128)))
            chunk = ", " + json.dumps(mid) + ": " + json.dumps(_node(rng, mid, n, t, parent, [] if last else [after]))
            f.write(chunk)
            written += len(chunk)
            n += 1
            if last:
                break
            parent, mid = mid, after
        f.write("}, " + json.dumps({"update_time": t, "current_node": mid, "conversation_id": conv_id, "id": conv_id,
                                    "default_model_slug": "gpt-4o"})[1:] + "]")
    return n


def conversation(rng: random.Random, index: int, turns: int = 20) -> dict:
    conv_id = str(uuid.UUID(int=rng.getrandbits(128)))
    mapping = {"client-created-root": {"id": "client-created-root", "message": None, "parent": None, "children": []}}
    parent = "client-created-root"
    t = 1_700_000_000.0 + index * 3600
    for i in range(turns * 2):
        mid = str(uuid.UUID(int=rng.getrandbits(128)))
        t += rng.uniform(1, 60)
        mapping[mid] = _node(rng, mid, i, t, parent, [])
        mapping[parent]["children"].append(mid)
        parent = mid
    return {
        "title": f"Generated conversation {index}",
        "create_time": 1_700_000_000.0 + index * 3600,
        "update_time": t,
        "mapping": mapping,
        "current_node": parent,
        "conversation_id": conv_id,
        "id": conv_id,
        "default_model_slug": "gpt-4o",
    }


def write_chatgpt_file(path: Path, target_bytes: int, seed: int = 7) -> tuple[int, int]:
    """Write a conversations.json of about `target_bytes`; returns (conversations, bytes)."""
    rng = random.Random(seed)
    written = 0
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        f.write("[")
        while written < target_bytes:
            chunk = ("," if n else "") + json.dumps(conversation(rng, n))
            f.write(chunk)
            written += len(chunk)
            n += 1
        f.write("]")
    return n, path.stat().st_size


def claude_conversation(rng: random.Random, index: int, turns: int = 20) -> dict:
    """A Claude.ai export conversation: `chat_messages` chained by parent_message_uuid, text blocks."""
    conv_id = str(uuid.UUID(int=rng.getrandbits(128)))
    parent = "00000000-0000-4000-8000-000000000000"
    t = 1_700_000_000 + index * 3600
    messages = []
    for i in range(turns * 2):
        mid = str(uuid.UUID(int=rng.getrandbits(128)))
        text = _text(rng, rng.randint(20, 300))
        t += rng.randint(1, 60)
        stamp = f"2023-11-{1 + (t // 86400) % 28:02d}T{(t // 3600) % 24:02d}:{(t // 60) % 60:02d}:{t % 60:02d}.000000Z"
        messages.append({
            "uuid": mid, "text": text, "content": [{"type": "text", "text": text, "citations": []}],
            "sender": "human" if i % 2 == 0 else "assistant", "created_at": stamp, "updated_at": stamp,
            "attachments": [], "files": [], "parent_message_uuid": parent,
        })
        parent = mid
    return {
        "uuid": conv_id, "name": f"Generated conversation {index}", "summary": "",
        "created_at": messages[0]["created_at"], "updated_at": messages[-1]["created_at"],
        "account": {"uuid": "00000000-0000-4000-8000-00000000acc7"}, "chat_messages": messages,
    }


def write_claude_file(path: Path, target_bytes: int, seed: int = 7) -> tuple[int, int]:
    """A Claude.ai conversations.json of about `target_bytes`; returns (conversations, bytes)."""
    rng = random.Random(seed)
    written = n = 0
    with open(path, "w", encoding="utf-8") as f:
        f.write("[")
        while written < target_bytes:
            chunk = ("," if n else "") + json.dumps(claude_conversation(rng, n))
            f.write(chunk)
            written += len(chunk)
            n += 1
        f.write("]")
    return n, path.stat().st_size


def write_sharded_zip(path: Path, target_bytes: int, shards: int = 4, seed: int = 7) -> int:
    """A 2026-style ChatGPT export zip: `shards` conversations-NNN.json members of about
    target_bytes in all (deflated), plus the manifest; returns the unpacked bytes."""
    import zipfile

    rng = random.Random(seed)
    total = 0
    n = 0
    names = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for s in range(shards):
            name = f"conversations-{s:03d}.json"
            names.append(name)
            with zf.open(name, "w", force_zip64=True) as member:
                member.write(b"[")
                written = 0
                first = True
                while written < target_bytes // shards:
                    chunk = (b"" if first else b",") + json.dumps(conversation(rng, n)).encode()
                    member.write(chunk)
                    written += len(chunk)
                    first = False
                    n += 1
                member.write(b"]")
                total += written + 2
        zf.writestr("export_manifest.json", json.dumps({"version": 1, "export_files": [{"path": p} for p in names],
                                                         "logical_files": {"conversations.json": {"files": names, "sharded": True}}}))
    return total

"""Generated exports in each platform's attachment layout (invented files, never real data)."""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any

from chatetl.samples import ChatGPTBuilder
from chatetl.samples.common import BASE_TIME, zip_files

UPLOADED = "file_00000000aaaa1111bbbb2222cccc3333"  # 2026: <id>.dat named by conversation_asset_file_names.json
LEGACY = "file-0dz6HTMWfHxQR6cJLdASOMb1"  # ≤2025: <id>-<original name> at the root
GENERATED = "file_00000000dddd4444eeee5555ffff6666"  # an image the model drew, in dalle-generations/
MISSING = "file_00000000eeee5555ffff6666aaaa7777"  # named by the chat, not in the export


def png(seed: int, pad: int = 0) -> bytes:
    """A small valid PNG, different for each seed."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    raw = b"".join(b"\x00" + bytes([(seed + x) % 256, seed % 256, 7]) * 4 for x in range(4))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 4, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"tEXt", b"c\x00" + b"x" * pad) + chunk(b"IEND", b""))


def image_part(pointer: str) -> dict[str, Any]:
    return {"content_type": "image_asset_pointer", "asset_pointer": pointer, "size_bytes": 1, "width": 4, "height": 4}


def chatgpt_conversation(name: str = "photos", start: float = BASE_TIME) -> dict[str, Any]:
    b = ChatGPTBuilder(name, "Photo help", start)
    b.add("user", {"content_type": "multimodal_text", "parts": [image_part(f"sediment://{UPLOADED}"), image_part(f"file-service://{LEGACY}"),
                                                               image_part(f"sediment://{MISSING}"), "Make these a watercolor"]},
          metadata={"attachments": [{"id": UPLOADED, "name": "photo.png", "mime_type": "image/png", "size": 1},
                                    {"id": LEGACY, "name": "Screenshot.png", "mime_type": "image/png"},
                                    {"id": MISSING, "name": "lost.png", "mime_type": "image/png"}]})
    b.add("assistant", {"content_type": "code", "language": "json", "text": '{"prompt": "a watercolor", "size": "1024x1024"}'},
          recipient="dalle.text2im", metadata={"model_slug": "gpt-4o"})
    b.add("tool", {"content_type": "multimodal_text", "parts": [
        {**image_part(f"sediment://{GENERATED}"), "metadata": {"dalle": {"gen_id": "g-1", "prompt": "a watercolor"}}}]}, name="dalle.text2im")
    b.text("assistant", "Here is your watercolor.", metadata={"model_slug": "gpt-4o"})
    return b.build()


def chatgpt_zip() -> bytes:
    return zip_files({
        "conversations.json": json.dumps([chatgpt_conversation()]),
        f"{UPLOADED}.dat": png(1),
        f"{LEGACY}-Screenshot.png": png(2),
        f"{LEGACY}X-other.png": png(9),  # (an id that merely starts like it: never matched)
        f"dalle-generations/{GENERATED}-0f0f0f0f-1111-4222-8333-444455556666.webp": png(3),
        "conversation_asset_file_names.json": json.dumps({f"{UPLOADED}.dat": "photo.png"}),
    })


def claude_zip() -> bytes:
    message = {
        "uuid": "m-1", "sender": "human", "text": "", "content": [{"type": "text", "text": ""}],
        "created_at": "2026-03-01T10:00:00Z", "updated_at": "2026-03-01T10:00:00Z", "parent_message_uuid": "00000000-0000-4000-8000-000000000000",
        "attachments": [{"file_name": "spec.txt", "file_size": 36000, "file_type": "txt", "extracted_content": "The widget must fold twice."}],
        "files": [{"file_name": "spec.txt"}],
    }
    answer = {**message, "uuid": "m-2", "sender": "assistant", "text": "Folded.", "content": [{"type": "text", "text": "Folded."}],
              "parent_message_uuid": "m-1", "attachments": [], "files": []}
    conv = {"uuid": "c-1", "name": "Widget spec", "created_at": "2026-03-01T10:00:00Z", "updated_at": "2026-03-01T10:01:00Z",
            "chat_messages": [message, answer]}
    return zip_files({"conversations.json": json.dumps([conv])})


DAY = "2026-03-01"


def ingested(store: Any, key: str, data: bytes) -> Any:
    """`data` uploaded at `key` and through the ingest stage (one process)."""
    from chatetl.ingest.upload import normalize_upload

    store.put_bytes(key, data)
    return normalize_upload(store, store.head(key), DAY, workers=1)


def conversations(store: Any, result: Any) -> list[Any]:
    """The conversations an ingested upload's tables hold."""
    from chatetl.layout import table_key
    from chatetl.tables import iter_conversations

    conv_file = store.local_path(table_key("conversations", DAY, result.upload_id))
    msg_file = store.local_path(table_key("messages", DAY, result.upload_id))
    return [conv for conv, _ in iter_conversations(conv_file, msg_file)]


def pdf(words: str = "Quarterly zeppelin landings rose.") -> bytes:
    """A one-page PDF whose page shows `words` (Helvetica), with a correct cross-reference table."""
    stream = f"BT /F1 12 Tf 72 720 Td ({words}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = b"%PDF-1.4\n"
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return out


def text_file_zip() -> bytes:
    """A Le Chat export whose chat shares a text file and a PDF, both in its `chat-<id>-files/` folder."""
    chat = "3f2e0000-0000-4000-8000-00000000009a"
    message = {"id": "u-1", "version": 0, "chatId": chat, "role": "user", "content": "Read these", "contentChunks": None,
               "createdAt": "2026-03-01T10:00:00.000Z", "files": [{"type": "text", "name": "notes.txt"}, {"type": "document", "name": "report.pdf"}]}
    answer = {**message, "id": "a-1", "role": "assistant", "content": "Done.", "createdAt": "2026-03-01T10:00:05.000Z", "files": []}
    return zip_files({
        f"chat-{chat}.json": json.dumps([message, answer]),
        f"chat-{chat}-files/notes.txt": "Packing: bring the marmalade umbrella.\n",
        f"chat-{chat}-files/report.pdf": pdf(),
    })


def open_webui_markdown_json(images: list[bytes]) -> bytes:
    """An Open WebUI export (one chat) whose answer writes `images` into its text as Markdown images
    (`![robin N](data:…)`, the second in angle brackets), plus a damaged one."""
    import base64

    urls = [f"data:image/png;base64,{base64.b64encode(data).decode()}" for data in images]
    shown = [f"![robin {i}]({url})" if i % 2 == 0 else f"![robin {i}](<{url}>)" for i, url in enumerate(urls)]
    content = "Here it is:\n\n" + "\n\n".join(shown) + "\n\n![](data:image/png;base64,!!damaged!!) Enjoy."
    t = int(BASE_TIME)
    messages = {
        "u": {"id": "u", "parentId": None, "childrenIds": ["a"], "role": "user", "content": "Draw a robin.", "timestamp": t},
        "a": {"id": "a", "parentId": "u", "childrenIds": [], "role": "assistant", "content": content, "timestamp": t + 1,
              "model": "painter", "done": True},
    }
    chat = {"id": "owui-2", "title": "Robin", "history": {"messages": messages, "currentId": "a"}, "timestamp": t * 1000}
    row = {"id": "owui-2", "user_id": "user-1", "title": "Robin", "chat": chat, "updated_at": t + 1, "created_at": t}
    return json.dumps([row], indent=1).encode()


def markdown_chat(images: list[bytes]) -> bytes:
    """A chat-export Markdown file whose answer shows `images` as Markdown data: URL images."""
    import base64

    shown = [f"![chart {i}](data:image/png;base64,{base64.b64encode(data).decode()})" for i, data in enumerate(images)]
    lines = ["```md", "sys", "platform: chatgpt", "title: Charts", "exported: 2026-03-01T10:00:00Z", "chat_id: md-charts-1", "```", "",
             "```md", "user:", "```", "", "Plot it.", "", "```md", "assistant:", "```", "", "Here:", "", *shown, ""]
    return "\n".join(lines).encode()


def open_webui_json(images: list[bytes], escaped: bool = False) -> bytes:
    """An Open WebUI export (one chat) whose first message carries `images` as data: URLs, plus a damaged one;
    `escaped`: the JSON escapes `/` as `\\/` (as PHP's and some other encoders do)."""
    import base64

    files = [{"type": "image", "url": f"data:image/png;base64,{base64.b64encode(data).decode()}"} for data in images]
    files.append({"type": "image", "url": "data:image/png;base64,!!not base64!!"})
    t = int(BASE_TIME)
    messages = {
        "u": {"id": "u", "parentId": None, "childrenIds": ["a"], "role": "user", "content": "Which bird is this?", "timestamp": t,
              "models": ["llama3"], "files": files},
        "a": {"id": "a", "parentId": "u", "childrenIds": [], "role": "assistant", "content": "A robin.", "timestamp": t + 1,
              "model": "llama3", "modelName": "Llama3", "modelIdx": 0, "done": True},
    }
    chat = {"id": "owui-1", "title": "Bird", "models": ["llama3"], "params": {}, "history": {"messages": messages, "currentId": "a"},
            "messages": [messages["u"], messages["a"]], "tags": [], "timestamp": t * 1000, "files": []}
    row = {"id": "owui-1", "user_id": "user-1", "title": "Bird", "chat": chat, "updated_at": t + 1, "created_at": t,
           "share_id": None, "archived": False, "pinned": False, "meta": {"tags": []}, "folder_id": None}
    text = json.dumps([row], indent=1)
    return (text.replace("/", "\\/") if escaped else text).encode()

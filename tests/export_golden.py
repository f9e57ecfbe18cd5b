"""The export golden files: a varied corpus of conversations and every export of each.

    .venv/bin/python tests/export_golden.py      # (re)writes tests/exports/golden/

`corpus.json` holds the conversations as canonical-model JSON, their branches already resolved,
so the equivalence test (tests/exports/test_export_equivalence.py) renders them without any
reader; `exports.jsonl.xz` holds, one line per file, what the exporters wrote for each under each
option set. Run it only to record what the exporters write on purpose (a change of output is a
change of format); a faster exporter must leave the files as they are.

The corpus: the generated chats of tests/export_inputs.py (tricky and ambiguous Markdown bodies,
extras, an abandoned branch, citations), every built-in sample read through its reader,
hand-made edge cases (control characters, CR line breaks, lone surrogates, characters beyond
U+FFFF, hostile links and titles, every message kind, tool calls in every shape, branch trees
with duplicates and cycles, empty chats) and seeded random conversations built from the pieces
that matter to the writers.
"""

from __future__ import annotations

import json
import lzma
import random
import sys
from datetime import timedelta
from pathlib import Path

TESTS = Path(__file__).resolve().parent
GOLDEN = TESTS / "exports" / "golden"
sys.path[:0] = [str(TESTS.parent), str(TESTS)]

from export_inputs import MD_AMBIGUOUS, T0, TRICKY, chat  # noqa: E402

from chatetl.exports.files import conversation_files, training_lines  # noqa: E402
from chatetl.exports.formats import PER_CONVERSATION  # noqa: E402
from chatetl.model import (  # noqa: E402
    Attachment,
    Citation,
    Conversation,
    Message,
    MessageKind,
    Role,
    Source,
    ToolCall,
    ToolResult,
)
from chatetl.selection import ContentOptions  # noqa: E402

OPTION_SETS: dict[str, ContentOptions] = {
    "visible": ContentOptions(),
    "all": ContentOptions(include_reasoning=True, include_tools=True, include_hidden=True, include_branches=True),
    "reasoning": ContentOptions(include_reasoning=True),
    "tools": ContentOptions(include_tools=True),
    "hidden": ContentOptions(include_hidden=True),
    "branches": ContentOptions(include_branches=True),
}

HOSTILE_URLS = ["javascript:alert(1)", "  JaVaScRiPt:x", "data:text/html,<b>", "file:///etc/passwd", "java\tscript:y",
                "https://ex.org/a b", "https://ex.org/wiki/Foo_(bar)", "https://ex.org/un)paired(", "mailto:a@b.c",
                "https://ex.org/\x00nul", "http://ex.org/[x]", "", None]
TITLES = ["Plain title", "yes", "../../etc/passwd", "CON", "title\nwith\rbreaks\tand\x00nul", "🚀 rocket: `code` [link](x)",
          "é" * 60, "x" * 150, "\u202eevil.exe", "   ", None, "Grüße — «quotes» & <b>html</b>", "- list? # hash: colon"]

# what the random bodies are made of: the pieces that matter to Markdown, YAML, JSON and HTML writers
PIECES = ["md", "user:", "assistant:", "sources", "sys", "``", "`", "~~", "~", " ", "   ", "    ", "\t", "\n", "\n\n",
          "\r\n", "\r", "1. [x](y)", "a", ":", "é", "世界", "🚀", "\u200b", "\x00", "\x1b[31m", "\x7f", "\x85", "\x9f",
          "\u2028", "```", "\n```\n", "\n```md\n", "\n~~~\n", "\n````\n", "\n```python\n", "\n ```\n", "\n```a`b\n",
          "<script>", "&amp;", "**bold**", "# h", "- item", "| a | b |\n|---|---|\n| 1 | 2 |", "yes", "null", "'", '"',
          "\\", "[", "]", "(", ")", "{", "}", "---", "...", "%", "word ", "Lorem ipsum dolor sit amet. "]


def _text(rng: random.Random, most: int = 14) -> str:
    return "".join(rng.choice(PIECES) for _ in range(rng.randrange(0, most)))


def _citations(rng: random.Random) -> list[Citation]:
    out = []
    for _ in range(rng.choice([0, 0, 0, 1, 2, 4])):
        title = rng.choice([None, "Src [1]", "back\\slash", "multi\nline title", "Wiki: Paris", "", "🚀 emoji", "a]b[c"])
        url = rng.choice(HOSTILE_URLS + ["https://example.org/p", "https://example.org/p"])
        out.append(Citation(title=title, url=url, snippet=rng.choice([None, "snip"]), offset=rng.choice([None, 3])))
    return out


def random_conversation(rng: random.Random, i: int) -> Conversation:
    """A random tree of messages of every kind (mostly a chain, with regenerations and edits off it)."""
    from chatetl.readers.tree import resolve_branches

    messages: list[Message] = []
    chat_export = rng.random() < 0.25
    for n in range(rng.randrange(0, 14)):
        parent = None
        if messages:
            parent = messages[-1].message_id if rng.random() < 0.75 else rng.choice(messages).message_id
        kind = rng.choices(list(MessageKind), weights=[10, 2, 2, 2, 1, 1][: len(MessageKind)])[0]
        role = {MessageKind.TURN: rng.choice([Role.USER, Role.ASSISTANT, Role.ASSISTANT, Role.SYSTEM]),
                MessageKind.TOOL_RESULT: Role.TOOL}.get(kind, Role.SYSTEM if kind in (MessageKind.HIDDEN, MessageKind.SUMMARY) else Role.ASSISTANT)
        kw: dict = {}
        if rng.random() < 0.3:
            kw["author_name"] = rng.choice(["chatgpt", "grok", "claude", "gemini", "bard", "python", "web.run", "Me"])
        if kind is MessageKind.TURN and rng.random() < 0.2:
            kw["reasoning"] = rng.choice(["", "  ", _text(rng, 6) or "think"])
        if kind is MessageKind.REASONING and rng.random() < 0.5:
            kw["reasoning"] = _text(rng, 6)
        if kind in (MessageKind.TOOL_CALL, MessageKind.TURN) and rng.random() < 0.4:
            kw["tool_calls"] = [ToolCall(id=f"c{n}{k}", name=rng.choice([None, "search", "python"]),
                                         input=rng.choice(['{"q": "x"}', "not json {", "", "  ", '[1, {"a": null}]', _text(rng, 4)]))
                                for k in range(rng.randrange(0, 3))]
        if kind in (MessageKind.TOOL_RESULT, MessageKind.TURN) and rng.random() < 0.4:
            kw["tool_results"] = [ToolResult(tool_call_id=f"c{n}", name=rng.choice([None, "search"]), output=rng.choice(["", "out", _text(rng, 4)]),
                                             is_error=rng.random() < 0.2) for _ in range(rng.randrange(0, 3))]
        if kind is MessageKind.TOOL_CALL and rng.random() < 0.3:
            kw["recipient"] = rng.choice(["python", "all", None])
        if rng.random() < 0.1:
            kw["attachments"] = [Attachment(kind="image", name="a.png", pointer="file-service://x", text=rng.choice([None, "ocr"]))]
        messages.append(Message(message_id=f"r{i}-{n}", parent_id=parent, role=role, kind=kind, text=_text(rng),
                                created_at=rng.choice([None, T0 + timedelta(seconds=n)]), citations=_citations(rng), **kw))
    conv = Conversation(
        source=Source.CHAT_EXPORT if chat_export else rng.choice([Source.CHATGPT, Source.CLAUDE_AI, Source.SHAREGPT]),
        platform=rng.choice(["chatgpt", "claude-ai", "grok", "some_new-platform", "unknown"]),
        conversation_id=f"random-{i}",
        title=rng.choice(TITLES + [_text(rng, 5)]),
        created_at=rng.choice([None, T0]),
        updated_at=rng.choice([None, T0 + timedelta(hours=1)]),
        model=rng.choice([None, "gpt-4o", ""]),
        url=rng.choice([None, "https://chatgpt.com/c/x", "javascript:alert(1)"]),
        current_node=rng.choice([None] + [m.message_id for m in messages[-3:]]),
        messages=messages,
    )
    resolve_branches(conv)
    return conv


def edge_cases() -> list[Conversation]:
    from chatetl.readers.tree import resolve_branches

    cites = [Citation(title=f"evil {i}", url=u) for i, u in enumerate(HOSTILE_URLS)]
    cites += [Citation(title="dup", url="https://example.org/d"), Citation(title="dup", url="https://example.org/d"),
              Citation(url="https://example.org/url-only"), Citation(title="[brackets] \\ and\nnewline"), Citation(snippet="neither")]
    out = [
        chat([("user", b) if i % 2 == 0 else ("assistant", b) for i, b in enumerate(TRICKY)], title="Tricky: yes # - no",
             url="https://chatgpt.com/c/conv-1", conversation_id="tricky"),
        chat([("user", "q"), *[(r, b) for b in MD_AMBIGUOUS for r in ("assistant", "user")], ("assistant", "end")], conversation_id="ambiguous"),
        chat([("user", "capital?"), ("assistant", "Paris."), ("user", "more"), ("assistant", "sure")], extras=True, branch=True,
             citations=cites, conversation_id="extras", url="javascript:alert(1)"),
        chat([("user", "hi"), ("assistant", "hello"), ("user", "and"), ("assistant", "more")], platform="grok",
             source=Source.CHAT_EXPORT, conversation_id="tags", title=None, model=None),
        chat([("user", "ends with newlines\n\n"), ("assistant", "crlf\r\nline\rbreaks\r\n\r\n"), ("user", "   "), ("assistant", ""),
              ("user", "nel\x85inside \x00nul \x1b[1mesc\x7fdel \x9fc1 \x0bvt \x0cff"), ("assistant", "ls\u2028ps\u2029 \ufeffbom"),
              ("user", "lone \ud800 surrogate"), ("assistant", "emoji 🚀🧪 beyond U+FFFF 𝔘𝔫𝔦")],
             title="Controls \x00 and 🚀", conversation_id="controls", platform="some_new-platform"),
        chat([("user", "no dates")], title="CON", conversation_id="undated", model=None),
    ]
    out[3].messages[1].author_name = "grok"
    out[3].messages[3].author_name = "bard"
    out[3].messages[2].author_name = "Me"
    undated = out[5]
    undated.created_at = undated.updated_at = None
    for m in undated.messages:
        m.created_at = None

    # every message kind and tool shape, with a branch tree: regenerations, an edit, a hidden leaf, a duplicate path
    def m(mid: str, parent: str | None, role: Role, text: str, kind: MessageKind = MessageKind.TURN, **kw) -> Message:
        return Message(message_id=mid, parent_id=parent, role=role, kind=kind, text=text, **kw)

    msgs = [
        m("sys", None, Role.SYSTEM, "You are helpful.", MessageKind.HIDDEN, author_name="system-prompt"),
        m("u1", "sys", Role.USER, "Question one", attachments=[Attachment(name="f.pdf", text="pdf text")]),
        m("r1", "u1", Role.ASSISTANT, "", MessageKind.REASONING, reasoning="reasoning only in the field"),
        m("a1", "r1", Role.ASSISTANT, "Answer one", reasoning="thinking inside the turn",
          tool_calls=[ToolCall(id="t", name="python", input="print(1)")], tool_results=[ToolResult(tool_call_id="t", name="python", output="1")]),
        m("tc", "a1", Role.ASSISTANT, '{"q": ["nested", {"a": 1}]}', MessageKind.TOOL_CALL,
          tool_calls=[ToolCall(name="search", input='{"q": 1}'), ToolCall(name=None, input="not json")], author_name="web"),
        m("tc2", "tc", Role.ASSISTANT, "code()", MessageKind.TOOL_CALL, recipient="python"),
        m("tr", "tc2", Role.TOOL, "", MessageKind.TOOL_RESULT,
          tool_results=[ToolResult(name="python", output="out 1"), ToolResult(output=""), ToolResult(output="out 2", is_error=True)]),
        m("sum", "tr", Role.SYSTEM, "Summary of the above", MessageKind.SUMMARY),
        m("u2", "sum", Role.USER, "Question two"),
        m("a2", "u2", Role.ASSISTANT, "Answer two", citations=[Citation(title="T", url="https://e.org")]),
        m("a1b", "u1", Role.ASSISTANT, "Regenerated answer one"),
        m("u2b", "a1", Role.USER, "Edited question two"),
        m("a2b", "u2b", Role.ASSISTANT, "Answer to the edit"),
        m("hid", "a2", Role.SYSTEM, "a hidden leaf", MessageKind.HIDDEN),
        m("a2c", "u2", Role.ASSISTANT, "Answer two, again"),
    ]
    tree = Conversation(source=Source.CLAUDE_AI, platform="claude-ai", conversation_id="tree", title="Every kind", created_at=T0,
                        updated_at=T0 + timedelta(hours=2), model="claude", current_node="a2", messages=msgs)
    resolve_branches(tree)
    out.append(tree)

    # states no resolver makes: a cycle off the active branch, a parent that is missing, no active branch at all
    odd = [m("x1", None, Role.USER, "root"), m("x2", "x1", Role.ASSISTANT, "answer"),
           m("c1", "c2", Role.USER, "cycle one"), m("c2", "c1", Role.ASSISTANT, "cycle two"), m("c3", "c2", Role.USER, "off the cycle"),
           m("dg", "missing", Role.ASSISTANT, "dangling parent")]
    for n, mm in enumerate(odd[:2]):
        mm.on_active_branch, mm.branch_index, mm.seq = True, n, n
    out.append(Conversation(source=Source.CHATGPT, platform="chatgpt", conversation_id="odd", title="Odd tree", created_at=T0, messages=odd))
    out.append(Conversation(source=Source.CHATGPT, platform="chatgpt", conversation_id="empty", title="Empty", created_at=T0))
    hidden_only = [m("h", None, Role.SYSTEM, "only hidden", MessageKind.HIDDEN), m("s", "h", Role.SYSTEM, "", MessageKind.SUMMARY)]
    only = Conversation(source=Source.CHATGPT, platform="chatgpt", conversation_id="hidden-only", title=None, created_at=T0, messages=hidden_only)
    resolve_branches(only)
    out.append(only)
    return out


def samples() -> list[Conversation]:
    from chatetl.readers import Entry, ReadReport, read_entry
    from chatetl.samples import sample_uploads

    out = []
    for name, data in sorted(sample_uploads().items()):
        report = ReadReport()
        out += list(read_entry(Entry.from_bytes(name, data), report))
        assert not report.errors, name
    return out


def corpus() -> list[Conversation]:
    rng = random.Random(20260314)
    return edge_cases() + samples() + [random_conversation(rng, i) for i in range(40)]


def render(conv: Conversation) -> dict[str, str]:
    """`<option set>/<path>` -> the file's text (the UTF-8 it is written as, decoded) for every format and option set."""
    out: dict[str, str] = {}
    for label, options in OPTION_SETS.items():
        for f in conversation_files(conv, PER_CONVERSATION, options):
            out[f"{label}/{f.path}"] = f.data.decode("utf-8")
        lines = training_lines(conv, options)
        if lines:
            out[f"{label}/sharegpt-jsonl/{conv.key}"] = b"".join(lines).decode("utf-8")
    return out


def dump_corpus(convs: list[Conversation]) -> str:
    # ensure_ascii keeps lone surrogates as \\ud800 escapes; read back with json.loads + model_validate
    return "[\n" + ",\n".join(json.dumps(c.model_dump(mode="json", exclude_defaults=True), ensure_ascii=True) for c in convs) + "\n]\n"


def load_corpus(text: str) -> list[Conversation]:
    return [Conversation.model_validate(d) for d in json.loads(text)]


def stored_corpus() -> list[Conversation]:
    return load_corpus((GOLDEN / "corpus.json").read_text(encoding="utf-8"))


def stored_exports() -> dict[int, dict[str, str]]:
    """Per corpus index, `<option set>/<path>` -> the text the exporters wrote when the files were made."""
    out: dict[int, dict[str, str]] = {}
    for line in lzma.decompress((GOLDEN / "exports.jsonl.xz").read_bytes()).decode("utf-8").split("\n")[:-1]:  # (not splitlines: texts hold U+2028, U+0085)
        item = json.loads(line)
        out.setdefault(item["conversation"], {})[item["file"]] = item["text"]
    return out


def main() -> None:
    convs = load_corpus(dump_corpus(corpus()))  # render what the test will load, not the objects before the round trip
    (GOLDEN / "corpus.json").write_text(dump_corpus(convs), encoding="utf-8")
    lines = [json.dumps({"conversation": i, "file": key, "text": text}, ensure_ascii=False) + "\n"
             for i, conv in enumerate(convs) for key, text in render(conv).items()]
    # xz: 6.6 MB of text (mostly the HTML pages' shared style) in about 120 KB; `xzcat` shows it
    (GOLDEN / "exports.jsonl.xz").write_bytes(lzma.compress("".join(lines).encode("utf-8"), preset=9 | lzma.PRESET_EXTREME))
    sizes = {p.name: p.stat().st_size for p in GOLDEN.iterdir() if p.is_file()}
    print(f"{len(convs)} conversations; " + ", ".join(f"{k} {v / 1000:.0f} KB" for k, v in sorted(sizes.items())))


if __name__ == "__main__":
    main()

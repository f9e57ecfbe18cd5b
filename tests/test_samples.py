"""The built-in samples the demo uploads: one per format, every one read cleanly."""

from __future__ import annotations

from chatetl.model import Source
from chatetl.readers import Entry, ReadReport, read_entry
from chatetl.samples import sample_uploads


def test_every_sample_reads_cleanly_and_covers_every_format():
    sources: set[str] = set()
    keys: dict[str, set[str]] = {}
    for name, data in sample_uploads().items():
        report = ReadReport()
        convs = list(read_entry(Entry.from_bytes(name, data), report))
        assert report.errors == [], f"{name}: {[str(e) for e in report.errors]}"
        assert report.drift == {}, f"{name}: unexpected drift {dict(report.drift)}"
        assert convs, name
        for conv in convs:
            sources.add(conv.source.value)
            keys.setdefault(conv.key, set()).add(conv.source.value)
            assert conv.message_count >= 2 and [m.seq for m in conv.visible_turns] == list(range(conv.message_count))
    assert sources == {s.value for s in Source}
    # the chat-export Markdown is the same ChatGPT chat as one in the account export
    assert any(v == {"chatgpt", "chat-export"} for v in keys.values())


def test_the_samples_keep_a_project_with_a_document_memories_and_a_canvas():
    from chatetl.keepsakes import Canvas, Memory, Project

    kept = []
    for name, data in sample_uploads().items():
        report = ReadReport()
        list(read_entry(Entry.from_bytes(name, data), report))
        kept += report.kept
    [project] = [k for k in kept if isinstance(k, Project)]
    assert project.prompt_template and [d.filename for d in project.docs] == ["hydration.md"]
    assert sorted(m.scope for m in kept if isinstance(m, Memory)) == ["account", "project"]
    assert [c.title for c in kept if isinstance(c, Canvas)] == ["CSV cheat sheet"]

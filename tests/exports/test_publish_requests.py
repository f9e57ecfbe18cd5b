"""Publishing a conversation on a real S3 server: what it asks the server. A conversation new to the bucket (no
manifest) is written without asking what its keys hold; a rerun asks and writes nothing."""

from __future__ import annotations

from collections import Counter

import pytest
from export_inputs import sample_conversations

from chatetl.exports.bucket import publish_conversation
from chatetl.exports.files import conversation_files
from chatetl.exports.formats import PER_CONVERSATION

FORMATS = list(PER_CONVERSATION)


@pytest.mark.integration
def test_a_new_conversation_is_written_without_asking_a_rerun_asks_and_writes_nothing(s3_store):
    conv = sample_conversations()[0]
    files = conversation_files(conv, FORMATS)
    calls: Counter[str] = Counter()

    def record(model, **_):  # type: ignore[no-untyped-def]
        calls[model.name] += 1

    s3_store.client.meta.events.register("before-call.s3", record)
    try:
        first = publish_conversation(s3_store, conv, files, FORMATS)
        assert sorted(first.written) == sorted(f"exports/{f.path}" for f in files)
        assert calls == Counter({"GetObject": 1, "PutObject": len(files) + 1})  # (its manifest: none; files, manifest)
        calls.clear()
        again = publish_conversation(s3_store, conv, files, FORMATS)
        assert again.written == [] and len(again.unchanged) == len(files)
        assert calls == Counter({"GetObject": 1, "HeadObject": len(files)})
    finally:
        s3_store.client.meta.events.unregister("before-call.s3", record)
    assert {f"exports/{f.path}": f.data for f in files} == {k: s3_store.get_bytes(k) for k in first.written}

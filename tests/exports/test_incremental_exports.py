"""A day's exports rendered only for the uploads that changed: the bytes of rendering every upload again."""

from __future__ import annotations

from pathlib import Path

import pytest
from day_inputs import DAY, first_upload, put_upload, second_upload

from chatetl.exports import partition
from chatetl.exports.bucket import retract_conversation
from chatetl.exports.partition import ExportPlan, write_day_exports
from chatetl.layout import CACHE_PREFIX, EXPORTS_PREFIX
from chatetl.storage import LocalObjectStore


def exported(store: LocalObjectStore) -> dict[str, bytes]:
    return {o.key: store.get_bytes(o.key) for o in store.list(EXPORTS_PREFIX)}


def rendered_keys(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The keys of the conversations rendered from now on."""
    keys: list[str] = []
    render = partition.conversation_files

    def spy(conv, *args, **kwargs):  # type: ignore[no-untyped-def]
        keys.append(conv.key)
        return render(conv, *args, **kwargs)

    monkeypatch.setattr(partition, "conversation_files", spy)
    return keys


def two_runs(root: Path, second: str, plan: ExportPlan, monkeypatch: pytest.MonkeyPatch | None = None,
             rerender: bool = False) -> tuple[LocalObjectStore, list[str]]:
    """The first upload exported, then the second beside it (with `rerender`, as the code before pieces did: every
    conversation rendered again); the store and the conversations rendered by the second run."""
    store = LocalObjectStore(root)
    put_upload(store, "u1", first_upload())
    write_day_exports(store, DAY, plan=plan)
    put_upload(store, second, second_upload())
    if rerender:
        store.delete_prefix(CACHE_PREFIX)
    rendered = rendered_keys(monkeypatch) if monkeypatch is not None else []
    write_day_exports(store, DAY, plan=plan)
    return store, rendered


PLAN = ExportPlan(bundle_formats=("chat-export-json", "md", "html", "sharegpt-jsonl", "archive"))


@pytest.mark.parametrize("second", ["u0", "u2"])  # the new upload before the old one in the day's order, or after
def test_a_second_upload_renders_only_its_conversations_with_the_bytes_of_rendering_all(tmp_path, monkeypatch, second):
    rerendered, _ = two_runs(tmp_path / "rerendered", second, PLAN, rerender=True)
    store, rendered = two_runs(tmp_path / "incremental", second, PLAN, monkeypatch)
    assert sorted(set(rendered)) == sorted({c.key for c in second_upload()})  # the first upload came from its piece
    assert exported(store) == exported(rerendered)
    # a third run: what it reports from pieces is what rendering every conversation reports
    from_pieces = write_day_exports(store, DAY, plan=PLAN)
    rerendered.delete_prefix(CACHE_PREFIX)
    assert from_pieces == write_day_exports(rerendered, DAY, plan=PLAN)
    assert exported(store) == exported(rerendered)


def test_a_day_in_two_uploads_gives_the_bytes_of_one_run(tmp_path):
    """(With the new upload after the first in the day's order; before it: the test below.)"""
    once = LocalObjectStore(tmp_path / "once")
    put_upload(once, "u1", first_upload())
    put_upload(once, "u2", second_upload())
    write_day_exports(once, DAY, plan=PLAN)
    twice, _ = two_runs(tmp_path / "twice", "u2", PLAN)
    assert exported(twice) == exported(once)


def test_an_earlier_upload_holding_older_states_gives_the_bytes_of_one_run(tmp_path):
    """The new upload sorts before the first and holds an older state of one of its chats: each chat stands where its
    winning state comes in the day's order, in one run as in one run per upload (the training file, the zip)."""
    once = LocalObjectStore(tmp_path / "once")
    put_upload(once, "u1", first_upload())
    put_upload(once, "u0", second_upload())
    write_day_exports(once, DAY, plan=PLAN)
    twice, _ = two_runs(tmp_path / "twice", "u0", PLAN)
    assert exported(twice) == exported(once)


def test_an_unchanged_day_renders_nothing_and_writes_nothing(tmp_path, monkeypatch):
    store = LocalObjectStore(tmp_path)
    put_upload(store, "u1", first_upload())
    put_upload(store, "u2", second_upload()[-1:])
    first = write_day_exports(store, DAY)
    before = exported(store)
    rendered = rendered_keys(monkeypatch)
    again = write_day_exports(store, DAY)
    assert rendered == [] and again.written == [] and exported(store) == before
    assert again.conversations == first.conversations and again.skipped_older == first.skipped_older


def test_a_conversation_whose_files_went_is_rendered_again(tmp_path, monkeypatch):
    """A retraction takes a conversation's files and manifest: the upload still holding it publishes it again."""
    store = LocalObjectStore(tmp_path)
    put_upload(store, "u1", first_upload())
    write_day_exports(store, DAY)
    before = exported(store)
    gone = first_upload()[-1].key
    assert retract_conversation(store, gone)
    rendered = rendered_keys(monkeypatch)
    write_day_exports(store, DAY)
    assert gone in rendered
    assert exported(store) == before


def test_a_changed_plan_renders_again(tmp_path):
    store = LocalObjectStore(tmp_path / "changed")
    put_upload(store, "u1", first_upload())
    write_day_exports(store, DAY, plan=ExportPlan(formats=("md",), bundle_formats=("md",)))
    write_day_exports(store, DAY)
    fresh = LocalObjectStore(tmp_path / "fresh")
    put_upload(fresh, "u1", first_upload())
    write_day_exports(fresh, DAY)
    changed = exported(store)
    assert {k: v for k, v in changed.items() if k in exported(fresh)} == exported(fresh)


def test_progress_names_each_upload_and_changes_no_byte(tmp_path):
    said: list[str] = []
    store, quiet = LocalObjectStore(tmp_path / "told"), LocalObjectStore(tmp_path / "quiet")
    for each in (store, quiet):
        put_upload(each, "u1", first_upload())
        put_upload(each, "u2", second_upload())
    write_day_exports(store, DAY, plan=PLAN, progress=said.append)
    write_day_exports(quiet, DAY, plan=PLAN)
    assert exported(store) == exported(quiet)
    assert said == [f"exports {DAY}: upload 1/2, {len(first_upload())} conversations rendered",
                    f"exports {DAY}: upload 2/2, {len(second_upload())} conversations rendered"]
    said.clear()
    write_day_exports(store, DAY, plan=PLAN, progress=said.append)  # nothing changed: every upload from its piece
    assert said == [f"exports {DAY}: upload 1/2, {len(first_upload())} conversations unchanged",
                    f"exports {DAY}: upload 2/2, {len(second_upload())} conversations unchanged"]

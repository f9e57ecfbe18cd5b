"""`chatetl normalize`: inputs of every kind into Parquet datasets, a one-line summary, honest exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow.dataset as ds
import pytest

from chatetl.samples import chatgpt_conversations, chatgpt_export


def _run(*args: str):
    return subprocess.run([sys.executable, "-m", "chatetl.cli", "normalize", *args], capture_output=True, text=True)


def test_normalize_files_and_folders(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "export.zip").write_bytes(chatgpt_export())
    (tmp_path / "in" / "dataset.jsonl").write_text(
        json.dumps({"id": "d1", "conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]}) + "\n"
    )
    result = _run(str(tmp_path / "in"), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert (summary["files"], summary["conversations"], summary["errors"]) == (3, 4, 0)
    conversations = ds.dataset(tmp_path / "out" / "conversations").to_table()
    messages = ds.dataset(tmp_path / "out" / "messages").to_table()
    assert conversations.num_rows == 4 and messages.num_rows == summary["messages"]
    assert sorted(set(conversations.column("source").to_pylist())) == ["chatgpt", "sharegpt"]
    seqs = [s for s in messages.column("seq").to_pylist() if s is not None]
    assert seqs.count(0) == 4  # every conversation has a first visible turn


def test_bad_files_fail_the_exit_code_but_good_ones_are_written(tmp_path):
    good = tmp_path / "conversations.json"
    good.write_text(json.dumps(chatgpt_conversations()))
    bad = tmp_path / "broken.json"
    bad.write_text(json.dumps(chatgpt_conversations())[:500])
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(bytes(range(256)))
    result = _run(str(good), str(bad), str(garbage), "--out", str(tmp_path / "out"))
    assert result.returncode == 1
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["conversations"] == 3 and summary["errors"] == 2
    errors = result.stderr.strip().splitlines()
    assert any(str(bad) in line and "truncated" in line for line in errors)
    assert any(str(garbage) in line and "unrecognized" in line for line in errors)
    assert ds.dataset(tmp_path / "out" / "conversations").to_table().num_rows == 3


@pytest.mark.integration
def test_normalize_reads_from_s3(s3_store, tmp_path):
    s3_store.put_bytes("uploads/a/export.zip", chatgpt_export())
    s3_store.put_bytes("uploads/b/conversations.json", json.dumps(chatgpt_conversations()[:1]).encode())
    result = _run(f"s3://{s3_store.bucket}/uploads/", "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["conversations"] == 4 and summary["files"] == 3


@pytest.mark.integration
def test_a_wrong_s3_secret_is_one_line_saying_the_credentials_were_refused(s3_store, tmp_path, monkeypatch):
    """Issue 14, item 8: it was a 39-line traceback. The secret never appears in what is printed."""
    s3_store.put_bytes("uploads/a/conversations.json", json.dumps(chatgpt_conversations()[:1]).encode())
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret-xyz")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "not-a-key-xyz")
    result = _run(f"s3://{s3_store.bucket}/uploads/", "--out", str(tmp_path / "out"))
    assert result.returncode == 1
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: s3://{s3_store.bucket}/uploads/: the S3 server refused the credentials (")
    assert "Traceback" not in result.stderr and "not-the-secret-xyz" not in result.stderr + result.stdout
    assert json.loads(result.stdout)["errors"] == 1


def test_normalize_runs_without_numpy_and_writes_the_same_tables(tmp_path):
    """`chatetl normalize` never imports numpy (21 MB of its memory) nor pyarrow's cloud filesystems (libarrow_s3,
    ~7 MB; chatetl.lean_pyarrow), on one core and on two, its Arrow memory pool is the system allocator
    (not mimalloc), one process never imports multiprocessing, and its tables are those of a TableWriter in a process
    that has them all (and mimalloc)."""
    import pyarrow.parquet as pq

    from chatetl.readers import ReadReport, read_path
    from chatetl.tables import TableWriter

    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(chatgpt_conversations()))
    here = tmp_path / "here"
    here.mkdir()
    with TableWriter(here / "c.parquet", here / "m.parquet") as writer:
        for conv in read_path(path, ReadReport()):
            writer.add(conv)
    probe = ("import sys\nimport chatetl.cli\ntry:\n    chatetl.cli.main()\nexcept SystemExit as e:\n"
             "    print(any(sys.modules.get(m) is not None for m in ('numpy', 'pyarrow._s3fs', 'pyarrow._azurefs', 'pyarrow._hdfs',"
             "                                               'pyarrow._gcsfs')),\n"
             "          'pyarrow.fs' in sys.modules and hasattr(sys.modules['pyarrow.fs'], 'LocalFileSystem'), e.code,\n"
             "          sys.modules['pyarrow'].default_memory_pool().backend_name, 'multiprocessing' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    for workers in ("1", "2"):
        out = tmp_path / f"out{workers}"
        result = subprocess.run([sys.executable, "-c", probe, "normalize", str(path), "--out", str(out), "--workers", workers],
                                capture_output=True, text=True, env=env)
        # multiprocessing only where there are workers (~25 ms of a one-process start-up)
        assert result.stdout.strip().splitlines()[-1] == f"False True 0 system {workers == '2'}", result.stderr
        for table, mine in (("conversations", "c"), ("messages", "m")):
            assert pq.read_table(out / table / "part-00000.parquet").equals(pq.read_table(here / f"{mine}.parquet"))


def test_what_the_inputs_keep_beside_their_chats_is_written_beside_the_tables(tmp_path):
    from chatetl.samples import claude_export
    from chatetl.samples.gemini import sample

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "claude.zip").write_bytes(claude_export())
    (tmp_path / "in" / "gemini.zip").write_bytes(sample()[1])
    result = _run(str(tmp_path / "in"), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["kept"] == {"canvases": 1, "memories": 2, "project_docs": 1, "projects": 1}
    projects = ds.dataset(tmp_path / "out" / "projects").to_table().to_pylist()
    assert [(p["name"], p["prompt_template"], p["doc_count"]) for p in projects] == [("Baking", "Give weights in grams.", 1)]
    canvases = ds.dataset(tmp_path / "out" / "canvases").to_table().to_pylist()
    assert [(c["title"], c["conversation_key"]) for c in canvases] == [("CSV cheat sheet", None)]

    (tmp_path / "in" / "claude.zip").unlink()
    (tmp_path / "in" / "gemini.zip").unlink()
    (tmp_path / "in" / "dataset.jsonl").write_text(json.dumps({"id": "d1", "conversations": [{"from": "human", "value": "hi"}]}) + "\n")
    assert _run(str(tmp_path / "in"), "--out", str(tmp_path / "out")).returncode == 0
    assert not (tmp_path / "out" / "projects" / "part-00000.parquet").exists()  # (a rerun into the folder leaves no stale part)

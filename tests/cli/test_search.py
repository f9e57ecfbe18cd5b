"""`chatetl search QUERY` against the real Neo4j: a ranked list for a person, JSON lines with --json, filters,
and usage errors that say what is wrong."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner
from export_inputs import chat

from chatetl.cli import main
from chatetl.exports.bucket import publish_conversation
from chatetl.exports.files import conversation_files
from chatetl.graph.chunks import VECTOR_INDEX
from chatetl.graph.load import load_conversations
from chatetl.model import Source
from chatetl.rag.embeddings import builtin_embedder
from chatetl.rag.partition import DocumentsResult, write_upload_documents
from chatetl.storage import LocalObjectStore

pytestmark = pytest.mark.integration

DB = os.environ.get("NEO4J_DATABASE") or None


@pytest.fixture
def bucket(clean_graph, tmp_path):
    """Two generated chats in the graph (embedded) and their html exports in a bucket folder."""
    clean_graph.execute_query(f"DROP INDEX {VECTOR_INDEX} IF EXISTS", database_=DB)
    start = datetime(2025, 9, 1, tzinfo=UTC)
    lisbon = chat([("user", "Three days in Lisbon: is tram 28 through Alfama worth the queue?"),
                   ("assistant", "Ride it early in the morning from Martim Moniz; the hills are steep on foot.")],
                  title="Lisbon weekend", conversation_id="lisbon", updated=start + timedelta(minutes=5))
    bread = chat([("user", "My sourdough starter smells like nail polish remover."),
                  ("assistant", "It is hungry: feed it twice a day with flour and water.")],
                 title="Sourdough", platform="claude-ai", source=Source.CLAUDE_AI, conversation_id="bread", model="claude-3-opus",
                 updated=start - timedelta(days=200))
    lisbon.created_at, bread.created_at = start, start - timedelta(days=200, minutes=5)
    store = LocalObjectStore(tmp_path / "bucket")
    load_conversations(clean_graph, [lisbon, bread], database=DB)
    write_upload_documents(store, clean_graph, "2025-09-01", "up-1", [lisbon, bread], DocumentsResult(), database=DB, embedder=builtin_embedder())
    for conv in (lisbon, bread):
        publish_conversation(store, conv, conversation_files(conv, ["html"]), ["html"])
    yield tmp_path / "bucket"
    clean_graph.execute_query(f"DROP INDEX {VECTOR_INDEX} IF EXISTS", database_=DB)


def run(bucket, *args: str, **env: str):
    env = {"CHATETL_STORE": "local", "CHATETL_LOCAL_STORE_ROOT": str(bucket), **env}
    return CliRunner().invoke(main, ["search", *args], env=env)


def test_a_ranked_list_for_a_person_and_json_lines_for_a_program(bucket):
    result = run(bucket, "Alfama tram", "--verbose")
    assert result.exit_code == 0, result.output
    first = result.stdout.split("\n\n")[0].splitlines()
    assert first[0].startswith(" 1. Lisbon weekend  ·  ChatGPT  ·  2025-09-01  (text #1, vector #1)")
    assert "**tram**" in first[1] and "**Alfama**" in first[1]
    assert first[2].startswith("    messages: m000") and first[3].startswith(f"    file: {bucket}/exports/html/")
    # without --verbose: no ids; the score on the head line; the file a person opens
    first = run(bucket, "Alfama tram").stdout.split("\n\n")[0].splitlines()
    assert re.fullmatch(r" 1\. Lisbon weekend  ·  ChatGPT  ·  2025-09-01  \(text #1, vector #1\)  score 1\.00", first[0]), first[0]
    assert len(first) == 3 and first[2].startswith(f"    file: {bucket}/exports/html/") and os.path.isfile(first[2].split(": ", 1)[1])

    result = run(bucket, "Alfama tram", "--json", "-k", "1")
    assert result.exit_code == 0 and result.stderr == ""
    [line] = result.stdout.splitlines()
    hit = json.loads(line)
    assert hit["conversation"]["conversation_id"] == "lisbon" and hit["rank"] == 1 and hit["message_ids"] == ["m000", "m001"]
    assert hit["text"][hit["matches"][0][0]:hit["matches"][0][1]] == "tram" and os.path.isfile(hit["exports"]["html"][0])


def test_modes_and_filters(bucket):
    # the vector index finds the sourdough chat from words it does not hold
    result = run(bucket, "leaven culture with a solvent odour", "--mode", "vector", "--json", "-k", "1")
    assert json.loads(result.stdout)["conversation"]["conversation_id"] == "bread"
    assert run(bucket, "leaven culture with a solvent odour", "--mode", "text", "--json").stdout == ""
    for args, expected in ((["--platform", "claude"], ["bread"]), (["--since", "2025-08-01"], ["lisbon"]),
                           (["--until", "2025-03-01"], ["bread"]), (["--model", "gpt-4"], ["lisbon"]), (["--role", "user"], ["bread", "lisbon"])):
        result = run(bucket, "a question", "--json", *args)
        assert result.exit_code == 0, result.output
        assert sorted(json.loads(x)["conversation"]["conversation_id"] for x in result.stdout.splitlines()) == expected, args
    result = run(bucket, "xylophonics", "--mode", "text")
    assert result.exit_code == 0 and result.stdout == "" and "no hits for 'xylophonics'" in result.stderr


def test_a_hit_found_by_meaning_alone_is_not_marked_as_matching_words(bucket):
    result = run(bucket, "leaven culture with a solvent odour", "--mode", "vector", "-k", "1")
    assert result.exit_code == 0, result.output
    head, snippet = result.stdout.splitlines()[:2]
    assert "Sourdough" in head and "**" not in snippet and "sourdough" in snippet
    assert "  ·  Claude AI  ·  " in head and "claude-ai" not in head  # the label a person reads; the key stays in --json
    hit = json.loads(run(bucket, "leaven culture with a solvent odour", "--mode", "vector", "-k", "1", "--json").stdout)
    assert hit["matched"] == "sentence" and hit["matches"]
    assert hit["conversation"]["platform"] == "claude-ai"
    assert json.loads(run(bucket, "Alfama", "--json", "-k", "1").stdout)["matched"] == "words"


def test_a_relevance_cut_off(bucket):
    every = [json.loads(x) for x in run(bucket, "tram in the morning", "--json").stdout.splitlines()]
    assert len(every) == 2 and every[0]["score"] > every[1]["score"]
    kept = run(bucket, "tram in the morning", "--json", "--min-score", str((every[0]["score"] + every[1]["score"]) / 2))
    assert [json.loads(x)["conversation"]["conversation_id"] for x in kept.stdout.splitlines()] == ["lisbon"]


def test_a_graph_that_is_down_or_refuses_is_one_line_naming_the_setting(bucket):
    result = run(bucket, "tram", NEO4J_URI="bolt://127.0.0.1:9")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == "error: no Neo4j answers at bolt://127.0.0.1:9: check NEO4J_URI and that Neo4j is running\n"
    result = run(bucket, "tram", NEO4J_PASSWORD="not-the-password")
    assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("error: Neo4j at ") and result.stderr.endswith("check NEO4J_USER and NEO4J_PASSWORD\n")


def test_a_query_model_other_than_the_graphs_is_one_line_naming_the_setting(bucket):
    for mode in ("hybrid", "vector"):
        result = run(bucket, "tram", "--mode", mode, CHATETL_EMBEDDER="other_embedder:three_dimensions")
        assert result.exit_code == 2 and result.stdout == "", result.output
        assert result.stderr == ("error: the graph's chunks were embedded into 256 dimensions, the query's model "
                                 "'other_embedder:three_dimensions' gives 3: set CHATETL_EMBEDDER to the model the chunks "
                                 "were embedded with\n"), result.stderr
    assert run(bucket, "tram", "--mode", "text", CHATETL_EMBEDDER="other_embedder:three_dimensions").exit_code == 0


def test_usage_errors_say_what_is_wrong(bucket):
    result = run(bucket, "tram", "--since", "2025-13-01")
    assert result.exit_code == 2 and "expected a date, YYYY-MM-DD" in result.stderr
    result = run(bucket, "tram", "--mode", "vector", CHATETL_EMBEDDINGS="off")
    assert result.exit_code == 2 and "CHATETL_EMBEDDINGS" in result.stderr
    result = run(bucket, "tram", CHATETL_EMBEDDINGS="off")
    assert result.exit_code == 0 and "full-text search only" in result.stderr and "Lisbon weekend" in result.stdout
    result = run(bucket, "tram", "--since", "2025-09-02", "--until", "2025-09-01")
    assert result.exit_code == 2 and "after until" in result.stderr
    assert "Exit codes" in run(bucket, "--help").stdout


# what a terminal acts on: every C0 control but tab and line feed, DEL, every C1 control
ACTED_ON = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
HOSTILE_TITLE = "Tram \x1b]0;pwned\x07plans \x1b]52;c;ZXZpbA==\x1b\\for \x1b]8;;https://evil.example\x1b\\Lisbon\x1b]8;;\x1b\\ \x9b2J\x9d0;x\x9c"
HOSTILE_TEXT = "Which funicular \x1b[2K\rFAKE LINE \x1b[1A\x1bc goes up \x07\x7f to the castle \x90q\x9c in Lisbon?"


@pytest.fixture
def hostile(clean_graph, tmp_path):
    """A chat whose title and text hold every kind of terminal escape, in the graph with its html export."""
    start = datetime(2025, 9, 1, tzinfo=UTC)
    conv = chat([("user", HOSTILE_TEXT), ("assistant", "The Elevador da Bica \x1b]0;owned\x07 or the 28 tram.")],
                title=HOSTILE_TITLE, conversation_id="hostile\x1b[31m", updated=start)
    conv.created_at = start
    store = LocalObjectStore(tmp_path / "bucket")
    load_conversations(clean_graph, [conv], database=DB)
    write_upload_documents(store, clean_graph, "2025-09-01", "up-1", [conv], DocumentsResult(), database=DB, embedder=None)
    publish_conversation(store, conv, conversation_files(conv, ["html"]), ["html"])
    return tmp_path / "bucket"


def test_nothing_from_a_chat_reaches_the_terminal_as_a_control(hostile):
    result = run(hostile, "funicular castle", "--mode", "text", CHATETL_EMBEDDINGS="off")
    assert result.exit_code == 0, result.output
    assert not ACTED_ON.search(result.stdout + result.stderr), repr(result.stdout)
    head, snippet = result.stdout.splitlines()[:2]
    assert head.startswith(" 1. Tram plans for Lisbon") and "FAKE LINE" in snippet and "**funicular**" in snippet
    # a program gets the data exactly, escaped as JSON
    result = run(hostile, "funicular castle", "--mode", "text", "--json", CHATETL_EMBEDDINGS="off")
    assert result.exit_code == 0 and not ACTED_ON.search(result.stdout)
    hit = json.loads(result.stdout)
    assert hit["conversation"]["title"] == HOSTILE_TITLE and HOSTILE_TEXT in hit["text"]
    result = run(hostile, "xylophonics\x1b]2;\x07", "--mode", "text", CHATETL_EMBEDDINGS="off")
    assert "no hits for" in result.stderr and not ACTED_ON.search(result.stderr)


@pytest.mark.parametrize("query", ["NOT", "is it AND", "tram OR", " ".join(["word"] * 1100)])
def test_lucene_syntax_and_long_queries_are_words_never_a_parser_dump(bucket, query):
    result = run(bucket, query, "--mode", "text")
    assert result.exit_code == 0, result.output
    assert "org.apache" not in result.output and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) <= 2  # "no hits", the note on a cut query


def test_the_last_day_of_the_calendar_is_a_date_like_any_other(bucket):
    result = run(bucket, "tram", "--until", "9999-12-31", "--json", "--mode", "text")
    assert result.exit_code == 0, result.output
    assert [json.loads(x)["conversation"]["conversation_id"] for x in result.stdout.splitlines()] == ["lisbon"]
    result = run(bucket, "tram", "--since", "9999-12-31")
    assert result.exit_code == 0 and "no hits" in result.stderr and "Traceback" not in result.output
    result = run(bucket, "tram", "--until", "10000-01-01")
    [error] = [line for line in result.stderr.splitlines() if line.startswith("Error:")]  # (click's usage lines around it)
    assert result.exit_code == 2 and error.endswith("'10000-01-01': expected a date, YYYY-MM-DD") and "Traceback" not in result.output

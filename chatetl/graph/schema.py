"""Constraints and indexes, created by the load itself, idempotently (`IF NOT EXISTS`).

Every key includes the platform, so the same id on two platforms never collides:
Conversation and Document `key` = `{platform}:{conversation_id}`, Message `key` =
`{platform}:{conversation_id}:{message_id}`, DecisionTrace `id` = `{platform}-trace-{conversation_id}`,
TraceStep `key` = `{trace id}:{index}`. The indexes serve the lookups queries start from:
conversations by platform (`c.source`) or id (`c.conversation_id`), messages by conversation
id, Documents by template (`d.template_id`) and platform, traces by platform. The staging of
conversations too big for one transaction (chatetl.graph.staging) has its own: a LoadStage by
key and token, a StagedMessage by key (its links) and by stage (the swap).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chatetl.graph.connection import write_session

if TYPE_CHECKING:
    from neo4j import Driver

CONSTRAINTS = {
    "conversation_key": "CREATE CONSTRAINT conversation_key IF NOT EXISTS FOR (c:Conversation) REQUIRE c.key IS UNIQUE",
    "message_key": "CREATE CONSTRAINT message_key IF NOT EXISTS FOR (m:Message) REQUIRE m.key IS UNIQUE",
    "document_key": "CREATE CONSTRAINT document_key IF NOT EXISTS FOR (d:Document) REQUIRE d.key IS UNIQUE",
    "trace_id": "CREATE CONSTRAINT trace_id IF NOT EXISTS FOR (t:DecisionTrace) REQUIRE t.id IS UNIQUE",
    "trace_step_key": "CREATE CONSTRAINT trace_step_key IF NOT EXISTS FOR (s:TraceStep) REQUIRE s.key IS UNIQUE",
    "load_stage_key": "CREATE CONSTRAINT load_stage_key IF NOT EXISTS FOR (s:LoadStage) REQUIRE s.key IS UNIQUE",
    "load_stage_token": "CREATE CONSTRAINT load_stage_token IF NOT EXISTS FOR (s:LoadStage) REQUIRE s.token IS UNIQUE",
}
INDEXES = {
    "conversation_source": "CREATE INDEX conversation_source IF NOT EXISTS FOR (c:Conversation) ON (c.source)",
    "conversation_id": "CREATE INDEX conversation_id IF NOT EXISTS FOR (c:Conversation) ON (c.conversation_id)",
    "message_conversation_id": "CREATE INDEX message_conversation_id IF NOT EXISTS FOR (m:Message) ON (m.conversation_id)",
    "document_template": "CREATE INDEX document_template IF NOT EXISTS FOR (d:Document) ON (d.template_id)",
    "document_source": "CREATE INDEX document_source IF NOT EXISTS FOR (d:Document) ON (d.source)",
    "trace_source": "CREATE INDEX trace_source IF NOT EXISTS FOR (t:DecisionTrace) ON (t.source)",
    "staged_message_key": "CREATE INDEX staged_message_key IF NOT EXISTS FOR (m:StagedMessage) ON (m.key)",
    "staged_message_stage": "CREATE INDEX staged_message_stage IF NOT EXISTS FOR (m:StagedMessage) ON (m.stage)",
}
STATEMENTS = list(CONSTRAINTS.values()) + list(INDEXES.values())


def ensure_schema(driver: Driver, database: str | None = None) -> None:
    """Create what is missing and wait until every index is online (a no-op when all exist)."""
    with write_session(driver, database) as session:
        existing = {r["name"] for r in session.run("SHOW INDEXES YIELD name RETURN name")}
        missing = [stmt for name, stmt in {**CONSTRAINTS, **INDEXES}.items() if name not in existing]
        for statement in missing:
            session.run(statement).consume()
        if missing:
            session.run("CALL db.awaitIndexes(300)").consume()

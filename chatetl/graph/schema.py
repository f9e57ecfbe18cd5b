"""Constraints and indexes, created by the load itself, idempotently."""

from __future__ import annotations

from typing import Any

STATEMENTS = [
    "CREATE CONSTRAINT conversation_key IF NOT EXISTS FOR (c:Conversation) REQUIRE c.key IS UNIQUE",
    "CREATE CONSTRAINT message_key IF NOT EXISTS FOR (m:Message) REQUIRE m.key IS UNIQUE",
    "CREATE CONSTRAINT document_key IF NOT EXISTS FOR (d:Document) REQUIRE d.key IS UNIQUE",
    "CREATE CONSTRAINT trace_id IF NOT EXISTS FOR (t:DecisionTrace) REQUIRE t.id IS UNIQUE",
    "CREATE CONSTRAINT trace_step_key IF NOT EXISTS FOR (s:TraceStep) REQUIRE s.key IS UNIQUE",
    "CREATE INDEX conversation_source IF NOT EXISTS FOR (c:Conversation) ON (c.source)",
    "CREATE INDEX conversation_id IF NOT EXISTS FOR (c:Conversation) ON (c.conversation_id)",
    "CREATE INDEX message_conversation_id IF NOT EXISTS FOR (m:Message) ON (m.conversation_id)",
    "CREATE INDEX document_template IF NOT EXISTS FOR (d:Document) ON (d.template_id)",
]


def ensure_schema(driver: Any, database: str | None = None) -> None:
    for statement in STATEMENTS:
        driver.execute_query(statement, database_=database)

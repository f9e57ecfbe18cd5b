"""Conversations read back from the graph for a person or an agent: one with the turns the person saw
(its active branch, visible turns in order, with their times), the most recent ones, and the
platforms with how many conversations each holds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chatetl.graph.connection import run_read

if TYPE_CHECKING:
    from neo4j import Driver

_CONVERSATION = """
MATCH (c:Conversation) WHERE c.key = $key OR ($key IS NULL AND c.conversation_id = $conversation_id
                                                AND ($platform IS NULL OR c.source = $platform))
RETURN c.key AS key, c.conversation_id AS conversation_id, c.name AS title, c.source AS platform,
       c.created_at AS created_at, c.updated_at AS updated_at, c.model_slug AS model, c.url AS url,
       c.message_count AS message_count
ORDER BY c.key
LIMIT 2
"""
_TURNS = """
MATCH (c:Conversation {key: $key})-[:HAS_MESSAGE]->(m:Message)
WHERE m.on_active_branch AND m.kind = 'turn'
RETURN m.message_id AS message_id, m.role AS role, m.created_at AS created_at, m.model_slug AS model,
       m.content AS text, m.content_truncated AS truncated
ORDER BY m.seq
"""
_RECENT = """
MATCH (c:Conversation) WHERE $platform IS NULL OR c.source = $platform
RETURN c.key AS key, c.conversation_id AS conversation_id, c.name AS title, c.source AS platform,
       c.created_at AS created_at, c.updated_at AS updated_at, c.message_count AS message_count
ORDER BY coalesce(c.updated_at, c.created_at) DESC, c.key
LIMIT $limit
"""
_PLATFORMS = """
MATCH (c:Conversation)
RETURN c.source AS platform, count(*) AS conversations, max(coalesce(c.updated_at, c.created_at)) AS latest
ORDER BY conversations DESC, platform
"""


class ConversationNotFound(LookupError):
    """No conversation, or more than one, answers to what was asked."""


def conversation_turns(driver: Driver, *, key: str | None = None, conversation_id: str | None = None, platform: str | None = None,
                       database: str | None = None) -> dict[str, Any]:
    """A conversation by its key (`platform:id`), or by its id (and platform where two platforms share
    it): its properties and `turns`, the visible messages of the branch the person saw, in order,
    each with its role, time, model and text (`truncated`: the graph keeps only the text's start)."""
    if not key and not conversation_id:
        raise ValueError("give a conversation key or id")
    found = run_read(driver, database, _CONVERSATION, key=key or None, conversation_id=conversation_id, platform=platform)
    if not found:
        raise ConversationNotFound(f"no conversation {key or conversation_id!r}" + (f" on {platform}" if platform and not key else ""))
    if len(found) > 1:
        raise ConversationNotFound(f"{conversation_id!r} names conversations of several platforms: give the platform or the key")
    conversation = found[0]
    conversation["turns"] = run_read(driver, database, _TURNS, key=conversation["key"])
    return conversation


def recent_conversations(driver: Driver, limit: int = 20, platform: str | None = None, database: str | None = None) -> list[dict[str, Any]]:
    """The `limit` conversations last active (newest first), of one platform or all."""
    return run_read(driver, database, _RECENT, limit=int(limit), platform=platform)


def platform_counts(driver: Driver, database: str | None = None) -> list[dict[str, Any]]:
    """Each platform in the graph with its conversations' count and latest activity, the largest first."""
    return run_read(driver, database, _PLATFORMS)

"""The MCP server's tools over the graph: `search` (chatetl.search, with the CLI's filters),
`fetch_conversation` (the branch the person saw, with times), `recent_conversations` and
`platforms`. The driver is opened at the first call and closed when the server stops, so the
server starts (and lists its tools) while Neo4j is down; a tool that cannot reach it answers
with one line naming the setting to check."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import date
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from chatetl.graph.conversations import ConversationNotFound, conversation_turns, platform_counts, recent_conversations
from chatetl.graph.failures import graph_failure, reachable
from chatetl.graph.keepsakes import document_kind
from chatetl.readers.platform_names import normalize_platform
from chatetl.search import KEPT, SearchError, SearchFilters, search
from chatetl.settings import Settings

if TYPE_CHECKING:
    from neo4j import Driver

    from chatetl.rag.embeddings import Embedder
    from chatetl.storage import ObjectStore

T = TypeVar("T")
INSTRUCTIONS = (
    "The user's own AI-chat history (ChatGPT, Claude, Gemini ... exports loaded by chatetl). `search` finds the "
    "conversations and passages about something (words and meaning), and what the user kept beside them (project "
    "documents, memories, canvases); `fetch_conversation` reads a conversation as the user saw it, with times; "
    "`recent_conversations` and `platforms` say what is there."
)


class Graph:
    """What the tools share: the settings, the driver (opened at first use), the embedder and the bucket."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._driver: Driver | None = None
        self._embedder: tuple[Embedder | None] | None = None

    @property
    def database(self) -> str | None:
        return self.settings.neo4j_database or None

    def driver(self) -> Driver:
        """The driver, opened (and the server asked once) at the first call."""
        if self._driver is None:
            from chatetl.graph.connection import open_driver

            driver = open_driver(settings=self.settings)
            try:
                reachable(driver)
            except BaseException:
                driver.close()
                raise
            self._driver = driver
        return self._driver

    def embedder(self) -> Embedder | None:
        if self._embedder is None:
            from chatetl.rag.embeddings import load_embedder

            self._embedder = (load_embedder(settings=self.settings),)
        return self._embedder[0]

    def store(self) -> ObjectStore | None:
        from chatetl.cli.search import settings_store

        return settings_store(self.settings)

    def close(self) -> None:
        if self._driver is not None:
            self._driver.close()
            self._driver = None

    def run(self, action: Callable[[], T]) -> T:
        """An action on the graph; what goes wrong as a ToolError of one line (the agent reads it)."""
        try:
            return action()
        except (SearchError, ConversationNotFound, ValueError) as exc:
            raise ToolError(str(exc)) from None
        except Exception as exc:
            failure = graph_failure(exc, self.settings)
            if failure is None:
                raise
            raise ToolError(failure) from None


def _day(value: str | None, name: str) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ToolError(f"{name} {value!r}: expected a date, YYYY-MM-DD") from None


def build_server(settings: Settings | None = None) -> MCPServer[Any]:
    """The server, its tools bound to the graph of `settings` (default: the environment's)."""
    graph = Graph(settings or Settings.from_env())

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        try:
            yield None
        finally:
            graph.close()

    server: MCPServer[Any] = MCPServer("chatetl", instructions=INSTRUCTIONS, lifespan=lifespan, log_level="WARNING")

    @server.tool(name="search")
    def search_chats(query: str, k: int = 10, mode: Literal["hybrid", "text", "vector"] = "hybrid", platform: str | None = None,
                     since: str | None = None, until: str | None = None, role: Literal["user", "assistant", "system", "tool"] | None = None,
                     model: str | None = None) -> dict[str, Any]:
        """Search the chat history by words and meaning; one hit per conversation, best first.

        Each hit: its conversation (key, title, platform, dates), the passage (`text`, with `matches`
        where the query's words are), its message ids, `score` (0-1 in hybrid mode) and the exported
        files. Filters: platform (chatgpt, claude-ai, gemini ...), since / until (YYYY-MM-DD, the
        conversation active then), role (a message of that role in the passage), model (a prefix).
        A hit whose `kind` is not `conversation` is something the user kept beside the chats
        (`project_doc`, `memory`, `canvas`): `kept` names it (its project and file name), its
        `conversation` has no id, and fetch_conversation does not open it."""
        filters = graph.run(lambda: SearchFilters(platform=platform, since=_day(since, "since"), until=_day(until, "until"),
                                                  role=role, model=model))
        hits = graph.run(lambda: search(graph.driver(), query, k=max(1, min(k, 100)), mode=mode, filters=filters,
                                        embedder=graph.embedder() if mode != "text" else None, store=graph.store(),
                                        database=graph.database))
        return {"hits": [hit.to_dict() for hit in hits]}

    @server.tool()
    def fetch_conversation(key: str | None = None, conversation_id: str | None = None, platform: str | None = None) -> dict[str, Any]:
        """One conversation as the person saw it: its title, platform and dates, and its turns in order
        (role, time, model, text) along the branch shown. Give its `key` (as search returns it) or its
        `conversation_id` (and `platform` when two platforms share the id)."""
        named = normalize_platform(platform) if platform else None
        kind = document_kind(key) if key else None
        if kind is not None:  # a project's document, a memory, a canvas: a search hit holds its text
            raise ToolError(f"{key!r} is a {KEPT[kind]}, not a conversation: its text is in the search hits")
        return graph.run(lambda: conversation_turns(graph.driver(), key=key, conversation_id=conversation_id, platform=named,
                                                    database=graph.database))

    @server.tool(name="recent_conversations")
    def recent_chats(limit: int = 20, platform: str | None = None) -> dict[str, Any]:
        """The conversations last active, newest first (key, title, platform, dates, message count)."""
        named = normalize_platform(platform) if platform else None
        rows = graph.run(lambda: recent_conversations(graph.driver(), max(1, min(limit, 500)), named, graph.database))
        return {"conversations": rows}

    @server.tool()
    def platforms() -> dict[str, Any]:
        """The platforms in the history, each with its number of conversations and latest activity."""
        return {"platforms": graph.run(lambda: platform_counts(graph.driver(), graph.database))}

    return server

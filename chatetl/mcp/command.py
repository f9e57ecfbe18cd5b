"""`chatetl mcp`: the MCP server on stdin/stdout, for an MCP client (Claude Desktop, an IDE, an agent) to start."""

from __future__ import annotations

import click


@click.command("mcp")
def mcp() -> None:
    """Serve your loaded chats to an AI assistant: a Model Context Protocol server on stdin/stdout.

    An MCP client starts it (it is not run by hand): its tools search the history (with the
    filters of `chatetl search`), read a conversation as you saw it, and list the recent
    conversations and the platforms. It reads Neo4j (NEO4J_URI, NEO4J_USER, NEO4J_PASSWORD).

    \b
    Example, in a client's MCP configuration (Claude Desktop's claude_desktop_config.json):
      {"mcpServers": {"chatetl": {"command": "/path/to/chatetl/.venv/bin/chatetl", "args": ["mcp"]}}}
    """
    from chatetl.mcp.server import build_server

    build_server().run("stdio")

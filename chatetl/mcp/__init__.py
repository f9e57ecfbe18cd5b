"""`chatetl mcp`: your chat history as a Model Context Protocol server (stdio), for an agent to search
and read: `server` builds it on the official `mcp` SDK, `command` is the CLI command that runs it."""

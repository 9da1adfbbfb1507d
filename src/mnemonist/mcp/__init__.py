"""MCP face of mnemonist: the memory tools over stdio (`mnemonist mcp`, via the running daemon)
and streamable HTTP (`/mcp` on the daemon). See docs/mcp.md."""

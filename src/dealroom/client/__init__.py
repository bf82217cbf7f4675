"""MCP clients of a seat: in memory, stdio and streamable HTTP."""

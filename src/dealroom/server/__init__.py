"""The MCP server: live negotiations, rooms, seat tokens and the stdio and HTTP transports."""

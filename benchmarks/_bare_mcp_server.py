"""The reference for ``stdio_startup.py``: a bare MCP SDK server with one tool, on stdio.

Started the way an MCP host starts ``dealroom serve``: a fresh Python process that imports the
SDK, registers its tool and serves stdio until stdin closes.
"""

from mcp.server.mcpserver import MCPServer

app = MCPServer("bare")


@app.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


if __name__ == "__main__":
    app.run("stdio")

"""dealroom: a bilateral-trade negotiation environment for LLM agents, served over MCP."""

__version__ = "0.1.0"

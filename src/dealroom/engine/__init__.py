"""The pure simulation: the virtual clock, the scheduler, play-out and fork.

Importable with :mod:`dealroom.protocol` alone: no I/O, no event loop, no MCP.
"""

from dealroom.engine.virtual import VirtualRoom, Wake

__all__ = ["VirtualRoom", "Wake"]

"""Rooms and clocks: where negotiations run."""

from dealroom.server.virtual import VirtualRoom, Wake

__all__ = ["VirtualRoom", "Wake"]

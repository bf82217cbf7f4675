"""dealroom's version: its one home (the package's metadata reads it at build time)."""

__version__ = "0.1.0"

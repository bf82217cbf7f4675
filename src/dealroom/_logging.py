"""Logging set-up for entry points only (the CLI and servers). Libraries never call this.

structlog renders JSON lines to stderr, and the stdlib root logger is routed through the same
renderer, so records from mcp, uvicorn and httpx2 come out the same way. Nothing goes to stdout:
on a stdio MCP server, stdout is the wire.
"""

from __future__ import annotations

import logging
import sys

import structlog


def configure_logging(level: str = "WARNING") -> None:
    """Send structured JSON logs to stderr at ``level``."""
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                structlog.processors.JSONRenderer(),
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("httpx2").setLevel(logging.WARNING)

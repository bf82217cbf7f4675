"""A local Agents SDK trace processor for the tracing tests: keeps what it is given, sends
nothing anywhere."""

from __future__ import annotations

from typing import Any

from agents.tracing import TracingProcessor


class RecordingProcessor(TracingProcessor):
    """Keeps every trace started and every span ended."""

    def __init__(self) -> None:
        self.traces: list[Any] = []
        self.spans: list[Any] = []

    def on_trace_start(self, trace: Any) -> None:
        self.traces.append(trace)

    def on_trace_end(self, trace: Any) -> None:
        pass

    def on_span_start(self, span: Any) -> None:
        pass

    def on_span_end(self, span: Any) -> None:
        self.spans.append(span)

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass

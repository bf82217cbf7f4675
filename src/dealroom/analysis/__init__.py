"""Metrics, reports (terminal, JSON, HTML) and transcripts, from finished records."""

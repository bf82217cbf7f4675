"""The SDK: running matches and tournaments, transcripts, clients and adapters."""

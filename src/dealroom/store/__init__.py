"""The results store: finished negotiations in SQLite, appended once, read by the reports."""

from dealroom.store.results import ResultsStore, SerializedRecord, StoredNegotiation, StoreError

__all__ = ["ResultsStore", "SerializedRecord", "StoreError", "StoredNegotiation"]

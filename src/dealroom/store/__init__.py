"""The results store: finished negotiations in SQLite, appended once, read by the reports; the
spool and writer that carry a server's finished negotiations there without losing one."""

from dealroom.store.results import ResultsStore, SerializedRecord, StoredNegotiation, StoreError
from dealroom.store.spool import PendingRow, Spool
from dealroom.store.writer import ResultWriter

__all__ = [
    "PendingRow",
    "ResultWriter",
    "ResultsStore",
    "SerializedRecord",
    "Spool",
    "StoreError",
    "StoredNegotiation",
]

// SQLite storage.

// Message validation and the ingest API.

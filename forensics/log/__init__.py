"""The reader: `_delta_log` listing, Spark parsing, the Parquet cache and snapshots."""

"""The warm engine: a resident local process of the tool that keeps its SparkSession between
commands, so a later command pays neither a JVM start nor pyspark's import.

`client` decides whether a command goes to the engine and asks it (starting one when needed);
`server` is the engine; `routing` says which commands and settings it may answer; `key` what an
engine is keyed by; `place` where its socket, token and log live; `protocol` the frames between
them; `isolation` what the engine resets between requests. Nothing here is imported on a plain
in-process run beyond `client` and what it needs (no pyspark, polars or pyarrow).
"""

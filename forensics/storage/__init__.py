"""Remote tables: parse a table URI, resolve its storage options, mirror its `_delta_log`.
Owns everything that talks to an object store (through obstore, read-only) and its diagnostics.
"""

from __future__ import annotations

from forensics.storage.errors import classify, store_errors
from forensics.storage.location import StoreLocation, parse_location, scrub_uri_credentials
from forensics.storage.mirror import Mirror, MirrorProgress, RemoteFile, list_table_files, mirror_log, read_object
from forensics.storage.options import Profile, StorageOptions, config_path, load_profile, resolve_options

__all__ = [
    "Mirror",
    "MirrorProgress",
    "Profile",
    "RemoteFile",
    "StorageOptions",
    "StoreLocation",
    "classify",
    "config_path",
    "list_table_files",
    "load_profile",
    "mirror_log",
    "read_object",
    "parse_location",
    "resolve_options",
    "scrub_uri_credentials",
    "store_errors",
]

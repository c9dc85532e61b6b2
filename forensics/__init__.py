"""delta-forensics: who beat whom in a Delta Lake table, by which rule, and what to change.

Start from `forensics.Table(uri)`: `history()`, `replay()`, `explain(v)`, `explain_error(text)`,
`whatif(...)`, `evidence()`, `stats()`, `timeline()`, `export(...)`. Expected failures raise
`forensics.ForensicsError` (one subclass per documented exit code).

The names below load on first use, so `import forensics` (and the CLI's start) stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

# name -> module that defines it: the public surface the CLI, the TUI and notebooks use.
_EXPORTS: dict[str, str] = {
    "Table": "forensics.table",
    "check_profile": "forensics.table",
    "ExitCode": "forensics.errors",
    "ForensicsError": "forensics.errors",
    "UsageError": "forensics.errors",
    "NotADeltaTable": "forensics.errors",
    "UnreadableLog": "forensics.errors",
    "JavaUnavailable": "forensics.errors",
    "SparkFailed": "forensics.errors",
    "VersionNotInLog": "forensics.errors",
    "RangeOutsideLog": "forensics.errors",
    "NotAConflictError": "forensics.errors",
    "error_line": "forensics.errors",
    "ISOLATION_LEVELS": "forensics.model",
    "parse_error_text": "forensics.errortext",
    "parse_event_log": "forensics.errortext",
    "ErrorReport": "forensics.errortext",
    "text_only_explanation": "forensics.evidence.loser",
    "text_story": "forensics.analysis.story",
    "in_words": "forensics.analysis.story",
    "clauses": "forensics.analysis.story",
    "rule_in_words": "forensics.analysis.story",
    "bound_in_words": "forensics.analysis.story",
    "WhatIfRequest": "forensics.replay.whatif",
    "OPERATIONS": "forensics.replay.whatif",
    "PROFILES": "forensics.rules",
    "check_output_path": "forensics.export",
    "default_export_name": "forensics.export",
    "write_view": "forensics.export",
    "EXPORT_FORMATS": "forensics.export",
    "run_conformance": "forensics.conformance.runner",
    "synthesize": "forensics.synth",
    "SynthConfig": "forensics.synth",
    "SnapshotFrame": "forensics.log.snapshot",
    "read_object": "forensics.storage",
    "parse_location": "forensics.storage",
    "fewer_collections": "forensics.runtime.gc_tuning",
    "cache_root": "forensics.runtime.paths",
    "engine_answer": "forensics.engine.client",
    "beside_the_command": "forensics.runtime.after_answer",
    "engine_start": "forensics.engine.control",
    "engine_status": "forensics.engine.control",
    "engine_stop": "forensics.engine.control",
    "EngineStatus": "forensics.engine.control",
    "set_log_level": "forensics.runtime.logs",
    "parse_fail_on": "forensics.analysis.gate",
    "gate_match": "forensics.analysis.gate",
    "line_class": "forensics.analysis.gate",
    "GATE_CODES": "forensics.analysis.gate",
    "GATE_PRECEDENCE": "forensics.analysis.gate",
    "Follower": "forensics.analysis.watch",
    "follow": "forensics.analysis.watch",
    "SCHEMA_VERSION": "forensics.schemas",
    "SCHEMA_COMMANDS": "forensics.schemas",
    "SCHEMA_NAMES": "forensics.schemas",
    "load_schema": "forensics.schemas",
    "schema_text": "forensics.schemas",
    "json_document": "forensics.schemas",
}

# Loaded like the others but not public API: the CLI's hook into the warm engine (the CLI reaches
# stages only through this package: tests/test_architecture.py).
_INTERNAL = frozenset({"engine_answer", "beside_the_command"})  # and the cache writes it runs beside a command

__all__ = ["__version__", *(n for n in _EXPORTS if n not in _INTERNAL)]


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'forensics' has no attribute {name!r}")
    value = getattr(import_module(mod), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)

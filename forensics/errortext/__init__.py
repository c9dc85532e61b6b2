"""Recognise Delta concurrency error texts (conflict-rules §7) and failed executions in Spark event logs.

Pure Python, no Spark: `parse_error_text` classifies one pasted text, `parse_event_log` finds
failed SQL executions in an event log and classifies their error messages.
"""

from forensics.errortext.eventlog import parse_event_log
from forensics.errortext.lenient_json import LenientJson, parse_lenient
from forensics.errortext.parser import parse_error_text
from forensics.errortext.report import FAMILIES, RULES, ErrorReport, EventLogFailure, WinnerHint

__all__ = [
    "FAMILIES",
    "RULES",
    "ErrorReport",
    "EventLogFailure",
    "LenientJson",
    "WinnerHint",
    "parse_error_text",
    "parse_event_log",
    "parse_lenient",
]

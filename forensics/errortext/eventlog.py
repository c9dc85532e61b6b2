"""Find failed SQL executions in a Spark event log and read their error texts.

A Delta conflict is thrown on the driver while committing, so it shows in
`SparkListenerSQLExecutionEnd.errorMessage` (Spark 3.4+); older logs only have failed jobs,
stages and tasks. The execution's start/end times bound the losing transaction's window.

Input: a file (plain or `.gz`; `.zstd`/`.zst` through pyarrow's zstd codec), a rolled event-log
directory (`eventlog_v2_*/events_<n>_<app>[.codec]`, read in index order), or an iterable of
JSON lines. Lines that are not JSON (a cut `.inprogress` tail) are skipped.
"""

from __future__ import annotations

import gzip
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forensics.errortext.parser import parse_error_text
from forensics.errortext.report import EventLogFailure

SQL_START = "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart"
SQL_END = "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd"
_EVENTS = (SQL_START, SQL_END, "SparkListenerJobStart", "SparkListenerJobEnd", "SparkListenerStageCompleted",
           "SparkListenerTaskEnd")
MAX_LINE_CHARS = 64 * 1024 * 1024
MAX_ERROR_CHARS = 2 * 1024 * 1024


@dataclass
class _Execution:
    execution_id: int
    root_id: int | None = None
    description: str | None = None
    start_ms: int | None = None
    end_ms: int | None = None
    error: str | None = None
    jobs: list[int] = field(default_factory=list)


@dataclass
class _Job:
    job_id: int
    execution_id: int | None = None
    description: str | None = None
    start_ms: int | None = None
    end_ms: int | None = None
    stages: list[int] = field(default_factory=list)
    failed: bool = False
    error: str | None = None


# ------------------------------------------------------------------------------ reading


def _open_text(path: Path) -> Iterator[str]:
    name = path.name.lower()
    if name.endswith(".gz"):
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
            yield from f
        return
    if name.endswith((".zstd", ".zst")):
        import pyarrow as pa  # lazily: only zstd-compressed logs need it

        with pa.input_stream(str(path), compression="zstd") as raw:
            yield from io.TextIOWrapper(io.BufferedReader(raw), encoding="utf-8", errors="replace")  # type: ignore[arg-type]
        return
    if name.endswith((".lz4", ".snappy", ".lzf")):
        raise ValueError(f"{path.name}: event-log codec not supported (use an uncompressed, .gz or .zstd log)")
    with open(path, encoding="utf-8", errors="replace") as f:
        yield from f


def _rolled_index(p: Path) -> tuple[int, str]:
    m = re.match(r"events_(\d+)_", p.name)
    return (int(m.group(1)) if m else 1 << 30, p.name)


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        files = [p for p in path.iterdir() if p.is_file() and p.name.startswith("events_")]
        if not files:  # a plain directory of event logs
            files = [p for p in path.iterdir() if p.is_file() and not p.name.startswith(("appstatus_", "."))]
        return sorted(files, key=_rolled_index)
    return [path]


def _lines(path_or_lines: Any) -> Iterator[tuple[str, str | None]]:
    if isinstance(path_or_lines, (str, Path)):
        for f in _files(Path(path_or_lines)):
            for line in _open_text(f):
                yield line, str(f)
    else:
        for line in path_or_lines:
            yield (line.decode("utf-8", "replace") if isinstance(line, bytes) else str(line)), None


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v.strip())
    return None


def _exception_text(exc: Any) -> str | None:
    """JobFailed `Exception` object: Message + Stack Trace (list of frames) as Java prints it."""
    if not isinstance(exc, dict):
        return None
    msg = exc.get("Message")
    frames = exc.get("Stack Trace")
    out = str(msg) if msg is not None else ""
    if isinstance(frames, list):
        for fr in frames[:50]:
            if isinstance(fr, dict):
                out += f"\n\tat {fr.get('Declaring Class', '')}.{fr.get('Method Name', '')}" \
                       f"({fr.get('File Name', '')}:{fr.get('Line Number', '')})"
    return out or None


def _task_failure_text(reason: Any) -> str | None:
    if not isinstance(reason, dict) or reason.get("Reason") in (None, "Success"):
        return None
    full = reason.get("Full Stack Trace")
    if isinstance(full, str) and full.strip():
        return full
    cls, desc = reason.get("Class Name"), reason.get("Description")
    if cls or desc:
        return f"{cls or ''}: {desc or ''}".strip(": ")
    return str(reason.get("Reason"))


# ------------------------------------------------------------------------------ main


def parse_event_log(path_or_lines: Any) -> list[EventLogFailure]:
    """Failed SQL executions (and failed jobs outside any execution), in log order.

    Per execution the error text is, in order of preference: SQLExecutionEnd.errorMessage,
    the failed job's exception, the failed stage's reason, the first failed task's trace.
    """
    execs: dict[int, _Execution] = {}
    jobs: dict[int, _Job] = {}
    stage_job: dict[int, int] = {}
    stage_reason: dict[int, str] = {}
    task_failure: dict[int, str] = {}
    order: list[tuple[str, int]] = []
    source_file: str | None = None

    for line, fname in _lines(path_or_lines):
        if len(line) > MAX_LINE_CHARS or not any(e in line for e in _EVENTS):
            continue
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if not isinstance(ev, dict):
            continue
        source_file = source_file or fname
        kind = ev.get("Event")
        if kind == SQL_START:
            eid = _int(ev.get("executionId"))
            if eid is None:
                continue
            x = execs.setdefault(eid, _Execution(eid))
            x.root_id = _int(ev.get("rootExecutionId"))
            x.description = ev.get("description") if isinstance(ev.get("description"), str) else x.description
            x.start_ms = _int(ev.get("time"))
            order.append(("exec", eid))
        elif kind == SQL_END:
            eid = _int(ev.get("executionId"))
            if eid is None:
                continue
            x = execs.setdefault(eid, _Execution(eid))
            x.end_ms = _int(ev.get("time"))
            err = ev.get("errorMessage")
            if isinstance(err, str) and err.strip():
                x.error = err[:MAX_ERROR_CHARS]
            if ("exec", eid) not in order:
                order.append(("exec", eid))
        elif kind == "SparkListenerJobStart":
            jid = _int(ev.get("Job ID"))
            if jid is None:
                continue
            props = ev.get("Properties") if isinstance(ev.get("Properties"), dict) else {}
            j = jobs.setdefault(jid, _Job(jid))
            j.execution_id = _int(props.get("spark.sql.execution.id"))
            desc = props.get("spark.job.description")
            j.description = desc if isinstance(desc, str) else None
            j.start_ms = _int(ev.get("Submission Time"))
            for sid in ev.get("Stage IDs") or []:
                if _int(sid) is not None:
                    stage_job[int(sid)] = jid
                    j.stages.append(int(sid))
            if j.execution_id is not None:
                execs.setdefault(j.execution_id, _Execution(j.execution_id)).jobs.append(jid)
            else:
                order.append(("job", jid))
        elif kind == "SparkListenerJobEnd":
            jid = _int(ev.get("Job ID"))
            if jid is None:
                continue
            j = jobs.setdefault(jid, _Job(jid))
            j.end_ms = _int(ev.get("Completion Time"))
            res = ev.get("Job Result") if isinstance(ev.get("Job Result"), dict) else {}
            if res.get("Result") not in (None, "JobSucceeded"):
                j.failed = True
                j.error = _exception_text(res.get("Exception")) or str(res.get("Result"))
        elif kind == "SparkListenerStageCompleted":
            info = ev.get("Stage Info") if isinstance(ev.get("Stage Info"), dict) else {}
            sid, reason = _int(info.get("Stage ID")), info.get("Failure Reason")
            if sid is not None and isinstance(reason, str) and reason.strip():
                stage_reason[sid] = reason[:MAX_ERROR_CHARS]
        elif kind == "SparkListenerTaskEnd":
            sid = _int(ev.get("Stage ID"))
            text = _task_failure_text(ev.get("Task End Reason"))
            if sid is not None and text and sid not in task_failure:
                task_failure[sid] = text[:MAX_ERROR_CHARS]

    def job_error(j: _Job) -> str | None:
        if not j.failed:
            return None
        for sid in j.stages:
            if sid in stage_reason and (not j.error or len(stage_reason[sid]) > len(j.error)):
                return stage_reason[sid]
        if j.error:
            return j.error
        return next((task_failure[s] for s in j.stages if s in task_failure), None)

    out: list[EventLogFailure] = []
    seen: set[tuple[str, int]] = set()
    for kind, key in order:
        if (kind, key) in seen:
            continue
        seen.add((kind, key))
        if kind == "exec":
            x = execs[key]
            text, source = x.error, "sql-execution-end"
            failed_jobs = [jobs[j] for j in x.jobs if j in jobs and jobs[j].failed]
            if text is None and failed_jobs:
                text, source = job_error(failed_jobs[0]), "job-end"
            if text is None:
                continue
            root = execs.get(x.root_id) if x.root_id is not None and x.root_id != key else None
            if root is not None and root.error == text:
                continue  # a sub-execution failing with its root's error: report the root once
            out.append(EventLogFailure(key, x.description, x.start_ms, x.end_ms, text, parse_error_text(text),
                                       source, tuple(x.jobs), source_file))
        else:
            j = jobs[key]
            text = job_error(j)
            if text is None:
                continue
            out.append(EventLogFailure(None, j.description, j.start_ms, j.end_ms, text, parse_error_text(text),
                                       "job-end", (key,), source_file))
    return out

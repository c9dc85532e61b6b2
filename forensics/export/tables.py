"""Tidy tables of a Timeline for notebooks: JSON (the model itself), CSV and Parquet.

CSV and Parquet write two files: FILE holds one row per span, FILE with `.edges` before its
suffix (`out.csv` -> `out.edges.csv`) one row per edge. JSON writes the whole Timeline object
(`schema_version`, `writers`, `spans`, `edges`), loadable with `pl.DataFrame(obj["spans"])`.

Span columns (SPAN_SCHEMA):
  span_id        "v42" or "attempt-3"
  kind           commit | attempt (attempts are inferred from orphan files, forensics.evidence)
  version        the version it landed at (null for attempts)
  read_version   the readVersion it recorded (attempts: the inferred one)
  writer         writer track id ("writer:ingest-a", "job:123", "cluster:…", "user:…", "engine:…")
  writer_label   the same for display
  operation      commitInfo.operation
  verdict        clean | reordered | anomaly | skipped (replay) | serial (no window) | aborted (attempt)
  start_ms       lower bound of its start: commit time of its readVersion (epoch ms; null = unknown)
  end_ms         its commit time (in-commit timestamp when enabled), or when an attempt ended
  duration_ms    end_ms - start_ms
  start_utc, end_utc   the same as ISO-8601 UTC text
  start_source, end_source   where each time came from
  window         JSON list of the winning versions it was checked against
  exception, winning_version, rule, partition (Hive text "k=v/k2=v2"), file   the conflict, if any
  reordered_before   JSON list of versions it was serialised before
  partitions     JSON list of the partitionValues objects it wrote
  isolation_level, profile, certainty (exact|superset|subset|unknown|inferred), why, likely_reason
  files          JSON list of an attempt's orphan data files
  retry_version  attempts: the commit that most likely re-ran it (inferred)

Edge columns (EDGE_SCHEMA): kind (conflict | abort | reorder), source, target (span ids: loser ->
winner, or reordered txn -> the winner it was serialised before), exception, rule, certainty, why.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import polars as pl

from forensics.model import hive_partition
from forensics.times import iso_utc
from forensics.analysis.timeline import Timeline

SPAN_SCHEMA: dict[str, Any] = {
    "span_id": pl.Utf8,
    "kind": pl.Utf8,
    "version": pl.Int64,
    "read_version": pl.Int64,
    "writer": pl.Utf8,
    "writer_label": pl.Utf8,
    "operation": pl.Utf8,
    "verdict": pl.Utf8,
    "start_ms": pl.Int64,
    "end_ms": pl.Int64,
    "duration_ms": pl.Int64,
    "start_utc": pl.Utf8,
    "end_utc": pl.Utf8,
    "start_source": pl.Utf8,
    "end_source": pl.Utf8,
    "window": pl.Utf8,
    "exception": pl.Utf8,
    "winning_version": pl.Int64,
    "rule": pl.Utf8,
    "partition": pl.Utf8,
    "file": pl.Utf8,
    "reordered_before": pl.Utf8,
    "partitions": pl.Utf8,
    "isolation_level": pl.Utf8,
    "profile": pl.Utf8,
    "certainty": pl.Utf8,
    "why": pl.Utf8,
    "likely_reason": pl.Utf8,
    "files": pl.Utf8,
    "retry_version": pl.Int64,
}
EDGE_SCHEMA: dict[str, Any] = {
    "kind": pl.Utf8,
    "source": pl.Utf8,
    "target": pl.Utf8,
    "exception": pl.Utf8,
    "rule": pl.Utf8,
    "certainty": pl.Utf8,
    "why": pl.Utf8,
}


def span_rows(tl: Timeline) -> list[dict[str, Any]]:
    labels = {w.id: w.label for w in tl.writers}
    rows = []
    for s in tl.spans:
        rows.append(
            {
                "span_id": s.id,
                "kind": s.kind,
                "version": s.version,
                "read_version": s.read_version,
                "writer": s.writer,
                "writer_label": labels.get(s.writer, s.writer),
                "operation": s.operation,
                "verdict": s.verdict,
                "start_ms": s.start_ms,
                "end_ms": s.end_ms,
                "duration_ms": s.duration_ms,
                "start_utc": iso_utc(s.start_ms),
                "end_utc": iso_utc(s.end_ms),
                "start_source": s.start_source,
                "end_source": s.end_source,
                "window": json.dumps(s.window),
                "exception": s.exception,
                "winning_version": s.winning_version,
                "rule": s.rule,
                "partition": hive_partition(s.partition),
                "file": s.file,
                "reordered_before": json.dumps(s.reordered_before),
                "partitions": json.dumps(s.partitions, default=str),
                "isolation_level": s.isolation_level,
                "profile": s.profile,
                "certainty": s.certainty,
                "why": s.why,
                "likely_reason": s.likely_reason,
                "files": json.dumps(s.files),
                "retry_version": s.retry_version,
            }
        )
    return rows


def edge_rows(tl: Timeline) -> list[dict[str, Any]]:
    return [e.to_dict() for e in tl.edges]


def spans_frame(tl: Timeline) -> pl.DataFrame:
    return pl.DataFrame(span_rows(tl), schema=SPAN_SCHEMA)


def edges_frame(tl: Timeline) -> pl.DataFrame:
    return pl.DataFrame(edge_rows(tl), schema=EDGE_SCHEMA)


def edges_path(path: Path) -> Path:
    """out.csv -> out.edges.csv (the edges file written next to the spans file)."""
    return path.with_name(f"{path.stem}.edges{path.suffix}") if path.suffix else path.with_name(path.name + ".edges")


def write_json(tl: Timeline, path: Path) -> list[Path]:
    path.write_text(json.dumps(tl.to_dict(), ensure_ascii=False, indent=1, default=str) + "\n", encoding="utf-8")
    return [path]


def write_csv(tl: Timeline, path: Path) -> list[Path]:
    # The csv module quotes every field that needs it (commas, quotes, newlines in log strings).
    out = []
    for p, rows, cols in ((path, span_rows(tl), list(SPAN_SCHEMA)), (edges_path(path), edge_rows(tl), list(EDGE_SCHEMA))):
        with p.open("w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=cols)
            w.writeheader()
            for r in rows:
                w.writerow({k: ("" if r.get(k) is None else r[k]) for k in cols})
        out.append(p)
    return out


def write_parquet(tl: Timeline, path: Path) -> list[Path]:
    spans_frame(tl).write_parquet(path)
    ep = edges_path(path)
    edges_frame(tl).write_parquet(ep)
    return [path, ep]

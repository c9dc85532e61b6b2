"""Checks on parsed actions that the explicit JSON schema alone cannot make.

A forensic reader is pointed at logs that are already in trouble, so it must say what it
could not use instead of passing it on silently:

- a file action without a path cannot be keyed (path, DV id) or replayed: it is moved aside
  (kind `invalid`) and reported as `commit.bad_action`;
- a line that is not valid JSON is reported as skipped (`commit.bad_line`), but Spark's
  PERMISSIVE parser keeps the fields it could read (a wrongly typed `size` still yields an
  add): those file actions are dropped so that "skipped" is true;
- a protocol action naming a table feature or protocol version this tool does not know is
  reported (`protocol.unknown_feature` / `protocol.unknown_version`) and reading continues:
  Delta PROTOCOL.md "Table Features"; a reader that does not know a feature must not claim
  exact results for it;
- a path or commitInfo holding U+FFFD came from bytes that were not UTF-8 (`commit.non_utf8`).
"""

from __future__ import annotations

import json

import polars as pl

from forensics.model import Finding

# Table features named by delta-spark (TableFeature.scala, up to 4.x), delta-rs (TableFeatures)
# and Databricks Runtime logs in the corpus ("liquid": DBR 13.x's preview name for clustering).
KNOWN_FEATURES = frozenset(
    {
        "appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns",
        "columnMapping", "identityColumns", "deletionVectors", "rowTracking", "timestampNtz",
        "domainMetadata", "v2Checkpoint", "icebergCompatV1", "icebergCompatV2", "icebergCompatV3",
        "icebergWriterCompatV1", "icebergWriterCompatV3", "clustering", "liquid", "inCommitTimestamp",
        "vacuumProtocolCheck", "typeWidening", "typeWidening-preview", "variantType",
        "variantType-preview", "variantShredding", "variantShredding-preview", "allowColumnDefaults",
        "coordinatedCommits-preview", "catalogManaged", "catalogOwned", "catalogOwned-preview",
        "checkpointProtection", "materializePartitionColumns", "collations", "collations-preview",
        "geospatial", "redirectReaderWriter-preview", "redirectWriterOnly-preview",
        "testLegacyWriterFeature", "testWriterFeature", "testReaderWriterFeature",
    }
)
MAX_READER_VERSION = 3  # Delta PROTOCOL.md: reader versions 1..3 (3 = table features)
MAX_WRITER_VERSION = 7  # writer versions 1..7 (7 = table features)


def split_invalid_actions(actions: pl.DataFrame, others: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(usable file actions, others + a note row per problem), right after parsing.

    Notes travel in the other-actions table (kind `invalid`: a file action without a path;
    kind `non_utf8`: paths holding U+FFFD), so they survive the cache and the findings can be
    made without loading the (large) file-actions table again. Also drops the file actions of
    lines reported corrupt (see module docstring). Cheap when there is nothing to do.
    """
    if actions.height == 0 or "path" not in actions.columns:
        return actions, others
    if others.height:
        corrupt = others.filter(pl.col("kind") == "corrupt").select("version", "line")
        if corrupt.height:
            keys = corrupt.unique().with_columns(pl.lit(True).alias("_corrupt"))
            actions = (
                actions.with_row_index("_i")
                .join(keys, on=["version", "line"], how="left")
                .filter(pl.col("_corrupt").is_null())
                .sort("_i")
                .drop("_i", "_corrupt")
            )
    notes: list[dict] = []
    no_path = pl.col("path").is_null() | (pl.col("path") == "")
    if actions.select(no_path.any()).item():
        for v, line, kind in actions.filter(no_path).select("version", "line", "kind").iter_rows():
            notes.append({"version": v, "line": line, "kind": "invalid", "payload": f"{kind} action without a path"})
        actions = actions.filter(~no_path)
    bad = actions.filter(pl.col("path").str.contains("\ufffd", literal=True))
    if bad.height:
        for v, n in bad.group_by("version").agg(pl.len().alias("n")).sort("version").iter_rows():
            notes.append({"version": v, "line": -1, "kind": "non_utf8", "payload": f"{n} file path(s) hold bytes that are not UTF-8"})
    if notes:
        rows = pl.DataFrame(notes, schema={"version": pl.Int64, "line": pl.Int64, "kind": pl.Utf8, "payload": pl.Utf8})
        others = pl.concat([others, rows], how="diagonal_relaxed") if others.width else rows
    return actions, others


def sanity_findings(others: pl.DataFrame, names: dict[int, str]) -> list[Finding]:
    """Findings for invalid actions, unknown protocol features/versions and non-UTF-8 text."""
    out: list[Finding] = []
    if not others.height:
        return out
    notes = others.filter(pl.col("kind").is_in(["invalid", "non_utf8"])).sort(["version", "line"])
    for row in notes.iter_rows(named=True):
        v = row["version"]
        if row["kind"] == "invalid":
            out.append(Finding("commit.bad_action", f"line {row['line'] + 1}: {row['payload']}; ignored", "error", names.get(v), v))
        else:
            out.append(Finding("commit.non_utf8", f"{row['payload']} (shown as U+FFFD); used as decoded", "warning", names.get(v), v))
    for row in others.filter(pl.col("kind") == "protocol").sort(["version", "line"]).iter_rows(named=True):
        out += protocol_findings(row["payload"], names.get(row["version"]), row["version"])
    ci = others.filter((pl.col("kind") == "commitInfo") & pl.col("payload").str.contains("\ufffd", literal=True))
    for v in ci["version"].unique().sort().to_list():
        out.append(Finding("commit.non_utf8", "commitInfo holds bytes that are not UTF-8 (shown as U+FFFD); used as decoded", "warning", names.get(v), v))
    return out


def protocol_findings(payload: str | None, file: str | None, version: int | None) -> list[Finding]:
    """Unknown table features or protocol versions in one protocol action (warn and continue)."""
    try:
        d = json.loads(payload or "")
    except ValueError:
        return []
    if not isinstance(d, dict):
        return []
    out: list[Finding] = []
    feats: list[str] = []
    for key in ("readerFeatures", "writerFeatures"):
        vals = d.get(key)
        if isinstance(vals, list):
            feats += [str(x) for x in vals if str(x) not in KNOWN_FEATURES and str(x) not in feats]
    if feats:
        out.append(
            Finding(
                "protocol.unknown_feature",
                f"table feature(s) {', '.join(feats)} unknown to this tool; read as if absent (results may miss their semantics)",
                "warning",
                file,
                version,
            )
        )
    r, w = d.get("minReaderVersion"), d.get("minWriterVersion")
    if (isinstance(r, int) and r > MAX_READER_VERSION) or (isinstance(w, int) and w > MAX_WRITER_VERSION):
        out.append(
            Finding("protocol.unknown_version", f"protocol version reader {r} / writer {w} is newer than this tool knows; read as best it can", "warning", file, version)
        )
    return out

"""Table state at a version: the latest usable checkpoint at or below it, plus the commits after.

Files are keyed by (canonical path, deletion-vector id) as in Delta's log replay: within the
ordered stream of actions the last add or remove of a key decides whether it is active.
Checkpoints are read with Spark once and then kept in the table's cache directory.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

import polars as pl

from forensics.errors import ExitCode, ForensicsError
from forensics.log.listing import Checkpoint
from forensics.log.reader import read_checkpoint, release_arrow_memory
from forensics.log.delta_log import DeltaLog
from forensics.model import Finding, Metadata, Protocol, Snapshot

if TYPE_CHECKING:
    import pyarrow as pa


# --------------------------------------------------------------------------------------
# Keys
# --------------------------------------------------------------------------------------


def with_keys(actions: pl.DataFrame, table_uri: str) -> pl.DataFrame:
    """Add `cpath` (decoded, table-relative path) and `dv_id` (Delta's DV unique id)."""
    root = table_uri.rstrip("/") + "/"
    roots = {root, "file:" + root, "file://" + root}

    def canon(p: str | None) -> str | None:
        if p is None:
            return None
        q = unquote(p) if "%" in p else p
        for r in roots:
            if q.startswith(r):
                return q[len(r):]
        return q

    needs = actions["path"].str.contains("%|:", literal=False).fill_null(False)
    if needs.any():
        cpath = pl.Series("cpath", [canon(p) if n else p for p, n in zip(actions["path"].to_list(), needs.to_list())], dtype=pl.Utf8)
    else:
        cpath = actions["path"].alias("cpath")
    if actions["dv_storage_type"].null_count() == actions.height:  # no deletion vectors: a constant,
        return actions.with_columns(cpath, pl.lit(None, dtype=pl.Utf8).alias("dv_id"))  # not 1M strings built
    dv_id = (
        pl.when(pl.col("dv_storage_type").is_not_null())
        .then(
            pl.col("dv_storage_type")
            + pl.col("dv_path")
            + pl.when(pl.col("dv_offset").is_not_null()).then(pl.lit("@") + pl.col("dv_offset").cast(pl.Utf8)).otherwise(pl.lit(""))
        )
        .otherwise(pl.lit(None, dtype=pl.Utf8))
        .alias("dv_id")
    )
    return actions.with_columns(cpath).with_columns(dv_id)


# --------------------------------------------------------------------------------------
# Checkpoints
# --------------------------------------------------------------------------------------


def checkpoint_tables(
    log: DeltaLog, cp: Checkpoint, *, stats: bool = True
) -> tuple[pl.DataFrame, pl.DataFrame, list[Finding]]:
    """The checkpoint's file actions and other actions, from the cache or read with Spark.

    stats=False may leave `stats` null (a 1M-file checkpoint's stats are most of its bytes).
    A stats-less read is cached under its own key so it never stands in for a full one.
    """
    tag = f"{cp.version}-{cp.kind}-{len(cp.files)}-{cp.files[0].size}-{cp.files[0].mtime_ms}"
    cdir: Path | None = log.cache_dir
    if cdir is not None:
        a_full, o_p = cdir / f"checkpoint-{tag}-actions.parquet", cdir / f"checkpoint-{tag}-others.parquet"
        a_bare = cdir / f"checkpoint-{tag}-nostats-actions.parquet"
        for a_c in ([a_full] if stats else [a_bare, a_full]):
            if a_c.exists() and o_p.exists():
                try:
                    return _read_cached_actions(a_c, stats), pl.read_parquet(o_p), []
                except Exception:  # noqa: BLE001 - rebuild a broken cache entry
                    pass
        a_p = a_full if stats else a_bare
    spark = log.spark()  # no Java / Spark failing to start is not the checkpoint's fault: raised as is
    try:
        parsed = read_checkpoint(spark, log.listing, cp, stats=stats)
    except Exception as e:  # noqa: BLE001 - e.g. a corrupt sidecar only fails when collected
        from forensics.runtime.spark import error_summary

        msg = e.message if isinstance(e, ForensicsError) else f"checkpoint could not be read: {error_summary(e)}"
        err = ForensicsError(
            ExitCode.UNREADABLE, msg, file=getattr(e, "file", None) or f"_delta_log/{cp.files[0].name}", version=cp.version
        )
        if hasattr(e, "finding_code"):  # e.g. checkpoint.unreadable (reader.torn): kept for the finding
            err.finding_code = e.finding_code  # type: ignore[attr-defined]
        raise err from e
    missing = [f for f in parsed.findings if f.code == "checkpoint.sidecar_missing"]
    if missing:
        # Without all its sidecars the checkpoint's file list is incomplete: not a usable base
        # (docs/findings.md: "an older checkpoint or the commits are used instead"), and never cached as if it were whole.
        err = ForensicsError(
            ExitCode.UNREADABLE,
            f"{len(missing)} sidecar(s) named by the checkpoint are missing ({missing[0].file})",
            file=f"_delta_log/{cp.files[0].name}",
            version=cp.version,
        )
        err.finding_code = "checkpoint.sidecar_missing"  # type: ignore[attr-defined]
        raise err
    found = parsed.findings
    acts = frame_of(parsed.actions)
    oth = frame_of(parsed.others)
    del parsed  # the Arrow copy: not held while the caller replays (1M rows: ~150 MB)
    release_arrow_memory()
    assert isinstance(acts, pl.DataFrame) and isinstance(oth, pl.DataFrame)
    bad = oth.filter(pl.col("kind") == "corrupt")
    if bad.height:
        # A V2 JSON checkpoint with a broken line (a partial write) lost actions we cannot name:
        # the whole checkpoint is unusable as a base, unlike a commit whose other lines still count.
        raise ForensicsError(
            ExitCode.UNREADABLE,
            f"checkpoint line {int(bad['line'].min()) + 1} is not valid JSON (partial write?)",
            file=f"_delta_log/{cp.files[0].name}",
            version=cp.version,
        )
    if cdir is not None:
        try:
            cdir.mkdir(parents=True, exist_ok=True)
            # Written aside and renamed: another process reading the same cache (or this one
            # killed mid-write) never sees half a file.
            for df, dst in ((oth, o_p), (acts, a_p)):
                tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
                df.write_parquet(tmp)
                os.replace(tmp, dst)
        except OSError:
            pass
    return acts, oth, found


def frame_of(table: pa.Table) -> pl.DataFrame:
    """`table` as a polars frame, a column null throughout kept as a constant: converted, a string
    column costs 16 bytes a row even when every row is null (a 1M-add checkpoint's stats, tags and
    deletion vector columns: ~60 MB for nothing)."""
    n = table.num_rows
    empty = [c for c in table.column_names if n and table.column(c).null_count == n]
    if not empty:
        return pl.from_arrow(table)  # type: ignore[return-value]
    types = pl.from_arrow(table.slice(0, 0)).schema  # type: ignore[union-attr]
    kept = pl.from_arrow(table.drop_columns(empty))
    assert isinstance(kept, pl.DataFrame)
    return kept.with_columns(pl.lit(None, dtype=types[c]).alias(c) for c in empty).select(table.column_names)


def _read_cached_actions(path: Path, stats: bool) -> pl.DataFrame:
    """A cached actions table; without stats when not wanted (skips reading them from disk)."""
    if stats:
        return pl.read_parquet(path)
    names = pl.read_parquet_schema(path)
    df = pl.read_parquet(path, columns=[c for c in names if c != "stats"])
    return df.with_columns(pl.lit(None, dtype=pl.Utf8).alias("stats")).select(list(names))


def choose_base(have: set[int], checkpoints: list[Checkpoint], version: int) -> tuple[Checkpoint | None, str]:
    """The newest complete checkpoint <= version whose following commits are all retained."""
    for cp in sorted((c for c in checkpoints if c.complete and c.version <= version), key=lambda c: -c.version):
        if all(v in have for v in range(cp.version + 1, version + 1)):
            return cp, f"checkpoint {cp.version} ({cp.kind}) + commits {cp.version + 1}..{version}"
    if all(v in have for v in range(0, version + 1)):
        return None, f"commits 0..{version} (no checkpoint used)"
    missing = [v for v in range(0, version + 1) if v not in have]
    raise ForensicsError(
        ExitCode.NO_VERSION,
        f"version {version} cannot be reconstructed: commit(s) {_short(missing)} are not retained and no usable checkpoint covers them",
        file="_delta_log",
        version=version,
    )


def _short(vs: list[int]) -> str:
    return ", ".join(map(str, vs[:5])) + (f" … ({len(vs)} in all)" if len(vs) > 5 else "")


# --------------------------------------------------------------------------------------
# Replay
# --------------------------------------------------------------------------------------


def state_actions(log: DeltaLog, version: int, findings: list[Finding] | None = None, *, stats: bool = True):
    """(file actions, other actions, base checkpoint) up to `version`, in log order.

    A checkpoint that cannot be read is reported and the next older base is tried.
    stats=False: the checkpoint's rows may come without `stats` (see checkpoint_tables).
    """
    tried: set[int] = set()
    broken: list[ForensicsError] = []
    while True:
        usable = [c for c in log.listing.checkpoints if c.version not in tried]
        try:
            cp, _why = choose_base(set(log.versions), usable, version)
        except ForensicsError as e:
            if not broken:
                raise
            # Every base that could rebuild this version is broken: beyond salvage (docs/exit-codes.md: 4),
            # said with the checkpoint file that failed rather than as a missing version.
            first = broken[0]
            raise ForensicsError(
                ExitCode.UNREADABLE,
                f"version {version} cannot be reconstructed: {first.message}; no older checkpoint or full run of commits to fall back to",
                file=first.file,
                version=version,
            ) from e
        if cp is None:
            a = log.actions.filter(pl.col("version") <= version)
            o = log.others.filter(pl.col("version") <= version)
            return a, o, None
        try:
            ca, co, f = checkpoint_tables(log, cp, stats=stats)
        except ForensicsError as e:
            if e.code != ExitCode.UNREADABLE:
                raise  # no Java, no Spark at all: not the checkpoint's fault
            broken.append(e)
            if findings is not None:
                code = getattr(e, "finding_code", "checkpoint.unreadable")
                findings.append(Finding(code, e.message + "; falling back to an older base", "error", e.file, cp.version))
            tried.add(cp.version)
            continue
        if findings is not None:
            findings.extend(f)
        a = pl.concat([ca, log.actions.filter((pl.col("version") > cp.version) & (pl.col("version") <= version))], how="vertical_relaxed")
        o = pl.concat([co, log.others.filter((pl.col("version") > cp.version) & (pl.col("version") <= version))], how="vertical_relaxed")
        return a, o, cp.version


def active_files(actions: pl.DataFrame, table_uri: str) -> pl.DataFrame:
    """Rows of the adds that are active after replaying `actions` (which must be <= the version).

    Sorted by (key, version, line), the last row of each key decides; rows come out by path
    (then DV id). A sort of the keys and one gather of whole rows: grouping every column of
    a 1M-row checkpoint cost seconds and ~400 MB more.

    Takes `actions` over (it is left without columns): each column is moved out as it is
    gathered, so a 1M-add state is held once plus a column, not twice (~200 MB less at the peak).
    """
    if actions.height == 0:
        return actions.with_columns(pl.lit(None, dtype=pl.Utf8).alias("cpath"), pl.lit(None, dtype=pl.Utf8).alias("dv_id"))
    is_file = actions["kind"].is_in(["add", "remove"])
    keyed = with_keys(actions if is_file.all() else actions.filter(is_file), table_uri)
    _empty_out(actions)  # `keyed` holds what is still needed
    order = keyed.select(pl.arg_sort_by(["cpath", "dv_id", "version", "line"], maintain_order=True)).to_series()
    cp, dv = pl.col("cpath"), pl.col("dv_id")
    last_of_key = ~(cp.eq_missing(cp.shift(-1)) & dv.eq_missing(dv.shift(-1)))
    keep = keyed.select("cpath", "dv_id", "kind")[order].select(last_of_key & (pl.col("kind") == "add")).to_series()
    rows = order.filter(keep)
    del order, keep
    cols = ["cpath", "dv_id", *(c for c in keyed.columns if c not in ("cpath", "dv_id"))]
    gathered, empty = [], {}
    for c in cols:
        col = keyed.drop_in_place(c)
        # A column null throughout (stats left out, no DVs, no tags) is rebuilt, not gathered:
        # a gathered string column costs 16 bytes a row even when every row is null.
        if col.null_count() == col.len():
            empty[c] = col.dtype
        else:
            gathered.append(col.gather(rows))
        del col
        release_arrow_memory()  # what a column let go of is polars' to take, not Arrow's pool's
    return pl.DataFrame(gathered).with_columns(pl.lit(None, dtype=t).alias(c) for c, t in empty.items()).select(cols)


def _empty_out(frame: pl.DataFrame) -> None:
    for c in frame.columns:
        frame.drop_in_place(c)


@dataclass(frozen=True)
class SnapshotFrame:
    """`Snapshot` with its active files left as a frame (one row per file, sorted by path).

    For callers that go on column-wise (`snapshot --json` on a 1M-file table): building a
    FileAction per row costs seconds and hundreds of MB they would not use.
    """

    version: int
    files: pl.DataFrame  # rows of `active_files`: the action columns plus cpath, dv_id
    protocol: Protocol | None
    metadata: Metadata | None
    app_transactions: dict[str, int]
    domain_metadata: dict[str, str]
    base_checkpoint: int | None
    has_stats: bool  # False: `stats` may be null although the log has them


def snapshot_frame(log: DeltaLog, version: int | None = None, *, stats: bool = True) -> tuple[SnapshotFrame, list[Finding]]:
    """Table state at `version` (default latest), files as a frame; stats=False may skip stats."""
    if version is None:
        version = log.latest_version
        if version is None:
            raise ForensicsError(ExitCode.NOT_A_TABLE, "the log has no versions")
    findings: list[Finding] = []
    if version < 0:
        raise ForensicsError(ExitCode.NO_VERSION, f"version {version} does not exist", version=version)
    if log.latest_version is not None and version > log.latest_version:
        raise ForensicsError(ExitCode.NO_VERSION, f"version {version} is newer than the latest version {log.latest_version}", version=version)
    acts, oth, base = state_actions(log, version, findings, stats=stats)
    files_df = active_files(acts, log.location)
    del acts
    protocol, metadata, txns, domains = _table_state(oth)
    if metadata is None:
        findings.append(Finding("snapshot.no_metadata", "no metaData action at or before this version", "error", None, version))
    if protocol is None:
        findings.append(Finding("snapshot.no_protocol", "no protocol action at or before this version", "error", None, version))
    findings.extend(_crc_check(log, version, files_df.height))
    frame = SnapshotFrame(
        version=version,
        files=files_df,
        protocol=protocol,
        metadata=metadata,
        app_transactions=txns,
        domain_metadata=domains,
        base_checkpoint=base,
        has_stats=stats,
    )
    return frame, findings


def snapshot(log: DeltaLog, version: int | None = None) -> tuple[Snapshot, list[Finding]]:
    """Table state at `version` (default latest) with every active file as a FileAction."""
    from forensics.log.file_actions import file_actions

    frame, findings = snapshot_frame(log, version)
    snap = Snapshot(
        version=frame.version,
        files=file_actions(frame.files),
        protocol=frame.protocol,
        metadata=frame.metadata,
        app_transactions=frame.app_transactions,
        domain_metadata=frame.domain_metadata,
        base_checkpoint=frame.base_checkpoint,
    )
    return snap, findings


def _table_state(oth: pl.DataFrame):
    protocol = metadata = None
    txns: dict[str, int] = {}
    domains: dict[str, str] = {}
    for row in oth.sort(["version", "line"]).iter_rows(named=True):
        k = row["kind"]
        if k == "protocol":
            protocol = protocol_from_json(row["payload"]) or protocol
        elif k == "metaData":
            metadata = metadata_from_json(row["payload"]) or metadata
        elif k == "txn" and row["app_id"] is not None:
            txns[row["app_id"]] = row["txn_version"]
        elif k == "domainMetadata" and row["domain"] is not None:
            try:
                d = json.loads(row["payload"])
            except (TypeError, ValueError):
                continue
            if d.get("removed"):
                domains.pop(row["domain"], None)
            else:
                domains[row["domain"]] = d.get("configuration") or ""
    return protocol, metadata, txns, domains


def protocol_from_json(payload: str | None) -> Protocol | None:
    try:
        d = json.loads(payload or "")
    except ValueError:
        return None
    if not isinstance(d, dict) or d.get("minReaderVersion") is None:
        return None
    rf, wf = d.get("readerFeatures"), d.get("writerFeatures")
    return Protocol(
        int(d.get("minReaderVersion") or 0),
        int(d.get("minWriterVersion") or 0),
        tuple(rf) if rf is not None else None,
        tuple(wf) if wf is not None else None,
    )


def metadata_from_json(payload: str | None) -> Metadata | None:
    try:
        d = json.loads(payload or "")
    except ValueError:
        return None
    if not isinstance(d, dict):
        return None
    fmt = d.get("format") or {}
    return Metadata(
        id=d.get("id"),
        name=d.get("name"),
        description=d.get("description"),
        format_provider=fmt.get("provider") if isinstance(fmt, dict) else None,
        schema_string=d.get("schemaString"),
        partition_columns=tuple(d.get("partitionColumns") or ()),
        configuration={str(k): str(v) for k, v in (d.get("configuration") or {}).items()},
        created_time=d.get("createdTime"),
    )


def _crc_check(log: DeltaLog, version: int, num_files: int) -> list[Finding]:
    """Cross-check the replayed file count with the version checksum (.crc), when there is one."""
    from forensics.log.delta_log import read_small

    f = log.listing.crc.get(version)
    if f is None:
        return []
    name = f"_delta_log/{f.name}"
    try:
        d = json.loads(read_small(f.uri).decode("utf-8", "replace"))
        n = int(d["numFiles"])
    except (OSError, ValueError, KeyError, TypeError):
        return [Finding("crc.corrupt", "version checksum is not valid JSON with numFiles; not used", "warning", name, version)]
    if n != num_files:
        return [Finding("crc.mismatch", f"checksum says {n} files, log replay gives {num_files}", "error", name, version)]
    return []

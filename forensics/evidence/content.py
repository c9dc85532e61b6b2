"""What an aborted attempt's orphan files hold, compared row by row with the committed files they
can have come from: the operation that wrote them and the versions it can have read.

A copy-on-write writer rewrites whole files: a compaction's output holds every row of the files it
covers, a DELETE's the rows it kept, an UPDATE's the same rows with some columns changed (matched
on a column whose values are unique, an id), a MERGE's some of both plus new rows, an append only
new rows. The source files must all have been live at the version the attempt read, so their
lifetimes bound its readVersion. The writer (Parquet `created_by`) and codec narrow the operation
further (deltalake 1.6: DELETE writes through DataFusion with ZSTD, OPTIMIZE with ZSTD, everything
else SNAPPY; measured with `deltalake` 1.6.6, tests/test_attribution.py).

Reads only the orphans and the committed files of their partition folders, only the columns the
orphans have, and stops at MAX_ROWS; files of an object-store table are fetched one at a time.
Inferred, and says why.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import polars as pl

from forensics.evidence.walk import DataFile
from forensics.log.delta_log import DeltaLog
from forensics.sets.lifetimes import INF, FileLifetimes

MAX_ROWS = 2_000_000  # rows read per attempt (orphans and sources together)
MAX_SOURCES = 400  # committed files compared per attempt
MAX_FILE_BYTES = 256 * 1024 * 1024
KEY_DISTINCT = 0.95  # a column set is a row key when this share of its source rows is distinct


@dataclass(frozen=True)
class ContentReading:
    """The operation an attempt's files show, the committed files its rows came from, and the
    read versions those files allow."""

    kind: str  # compaction | delete | update | merge | append | weak (a few rows match) | unknown
    operations: tuple[str, ...]  # whatif operations the content allows, most likely first
    sources: tuple[str, ...]
    read_versions: tuple[int, int] | None  # every source was live at each version of [lo, hi]
    writer: str | None  # Parquet created_by and codec of the orphans, in words
    why: str
    predicate: str | None = None  # the rows it deleted or changed, as a condition on a key column
    rerun_version: int | None = None  # a later commit that wrote exactly its rows again (its re-run)


    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "operations": list(self.operations), "sources": list(self.sources),
                "readVersions": list(self.read_versions) if self.read_versions else None, "writer": self.writer,
                "why": self.why, "predicate": self.predicate}


def _root(log: DeltaLog) -> str | None:
    root = log.location
    if "://" in root and not root.startswith("file:"):
        return None
    return root.removeprefix("file://").removeprefix("file:")


@lru_cache(maxsize=64)
def _read_local(path: str, size: int, mtime_ms: int) -> Any:
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except (OSError, ValueError):
        return None


def _open(log: DeltaLog, rel: str, size: int, mtime_ms: int = 0) -> Any:
    """A pyarrow ParquetFile for a data file of the table, local or in its store; None: unreadable."""
    import pyarrow.parquet as pq

    root = _root(log)
    if root is not None:
        return _read_local(os.path.join(root, rel), size, mtime_ms)
    store = getattr(log, "store", None)
    if store is None or size > MAX_FILE_BYTES:
        return None
    from forensics.errors import ForensicsError
    from forensics.storage.mirror import read_object

    try:
        data = read_object(store.uri.rstrip("/") + "/" + rel, store.options, limit=0)
        return pq.ParquetFile(io.BytesIO(data))
    except (ForensicsError, OSError, ValueError):
        return None


def writer_of(pf: Any) -> tuple[str | None, str | None]:
    """(created_by, codec of the first column chunk) of an open Parquet file."""
    meta = pf.metadata
    codec = meta.row_group(0).column(0).compression if meta.num_row_groups and meta.num_columns else None
    return meta.created_by, codec


def writer_operations(created_by: str | None, codec: str | None) -> tuple[str, ...] | None:
    """The operations a writer signature allows (deltalake 1.x, measured), None: no narrowing."""
    cb = (created_by or "").lower()
    if cb.startswith("datafusion"):
        return ("DELETE",)
    if cb.startswith("delta-rs"):
        if (codec or "").upper() == "ZSTD":
            return ("OPTIMIZE",)
        return ("INSERT", "OVERWRITE", "UPDATE", "MERGE")
    return None


def _frame(pf: Any, columns: list[str] | None) -> pl.DataFrame | None:
    try:
        tbl = pf.read(columns=columns)
    except (OSError, ValueError, KeyError):
        return None
    df = pl.from_arrow(tbl)
    return df if isinstance(df, pl.DataFrame) else None


def _hashes(df: pl.DataFrame, cols: list[str]) -> pl.Series:
    """One hash per row over `cols`, comparable across files whatever each file's physical types."""
    return df.select([pl.col(c).cast(pl.Utf8) for c in cols]).hash_rows(seed=7)


def read_content(log: DeltaLog, lifetimes: FileLifetimes, files: list[DataFile], read_upto: int | None,
                 written_ms: int | None = None, partition_columns: tuple[str, ...] = ()) -> ContentReading | None:
    """Compare the attempt's files with the committed files of their folders added by `read_upto`;
    None when the orphans cannot be read here. `partition_columns`: never a row key (some writers,
    delta-spark 4 among them, also store them in the files; constant within a file, they tell files
    apart, not rows)."""
    opened = [(f, _open(log, f.path, f.size, f.mtime_ms)) for f in files]
    if any(pf is None for _, pf in opened) or not opened:
        return None
    created_by, codec = writer_of(opened[0][1])
    writer = f"{created_by or 'an unnamed writer'}, {codec or 'unknown'} compression"
    frames = [_frame(pf, None) for _, pf in opened]
    if any(fr is None for fr in frames):
        return None
    orphan = pl.concat(frames, how="diagonal_relaxed") if len(frames) > 1 else frames[0]
    if orphan.height == 0 or orphan.height > MAX_ROWS:
        return None
    cols = sorted(orphan.columns)
    folders = {os.path.dirname(f.path) for f in files}
    own = {f.path for f in files}
    fr = lifetimes.frame
    if fr.height == 0:
        return _reading("unknown", writer, created_by, codec, (), None, "no committed file to compare with")
    if "kind" in fr.columns:
        fr = fr.filter(pl.col("kind") == "add")
    cands = sorted((r for r in _folder_files(fr, folders, own) if read_upto is None or int(r["added"]) <= read_upto),
                   key=lambda r: -int(r["added"]))[:MAX_SOURCES]
    sources: list[tuple[dict, pl.DataFrame]] = []
    rows = orphan.height
    for r in cands:
        pf = _open(log, r["cpath"], int(r["size"] or 0))
        if pf is None:
            continue
        have = [c for c in cols if c in pf.schema_arrow.names]
        if have != cols:
            continue  # another schema: not the source of these rows
        df = _frame(pf, cols)
        if df is None:
            continue
        rows += df.height
        if rows > MAX_ROWS:
            break
        sources.append((r, df))
    if written_ms is not None and read_upto is not None:
        sources += _reruns(log, fr, folders, own, read_upto, orphan, cols)
    if not sources:
        # Nothing to compare with (vacuumed, another schema): that says nothing about what it did.
        return _reading("unknown", writer, created_by, codec, (), None,
                        "no committed file of its folders is left with rows of the same columns to compare with")
    after = None
    if written_ms is not None:
        after = {v for v, t in log.commits.select(["version", "timestamp"]).iter_rows() if t is not None and t > written_ms}
    return _compare(orphan, cols, sources, writer, created_by, codec, after, frozenset(partition_columns))


def _folder_files(fr: pl.DataFrame, folders: set[str], own: set[str]) -> list[dict]:
    """The committed files of the orphans' folders (the orphans themselves aside)."""
    return [r for r in fr.select(["cpath", "size", "added", "removed"]).iter_rows(named=True)
            if r["cpath"] and r["cpath"] not in own and os.path.dirname(r["cpath"]) in folders]


def _reruns(log: DeltaLog, fr: pl.DataFrame, folders: set[str], own: set[str], read_upto: int,
            orphan: pl.DataFrame, cols: list[str]) -> list[tuple[dict, pl.DataFrame]]:
    """Files committed after `read_upto` (after the orphans were written) that hold exactly the
    orphans' rows: no source of them, but a re-run's output (`_compare` tells it so). Only files of
    the same row count are opened."""
    later = sorted((r for r in _folder_files(fr, folders, own) if int(r["added"]) > read_upto),
                   key=lambda r: int(r["added"]))[:MAX_SOURCES]
    want = set(_hashes(orphan, cols).to_list())
    out = []
    for r in later:
        pf = _open(log, r["cpath"], int(r["size"] or 0))
        if pf is None or pf.metadata.num_rows != orphan.height or any(c not in pf.schema_arrow.names for c in cols):
            continue
        df = _frame(pf, cols)
        if df is not None and set(_hashes(df, cols).to_list()) == want:
            out.append((r, df))
    return out


def _is_key(df: pl.DataFrame, key: list[str]) -> bool:
    return df.height > 0 and df.select(key).unique().height >= KEY_DISTINCT * df.height


def _key_column(orphan: pl.DataFrame, cols: list[str], sources: list[tuple[dict, pl.DataFrame]],
                partition_columns: frozenset[str] = frozenset()) -> list[str]:
    """A column that tells rows apart (unique in the orphans and in each source file) and whose every
    orphan value occurs in the sources: what an UPDATE keeps while it changes the others. []: none."""
    for c in cols:
        if c in partition_columns or not _is_key(orphan, [c]):
            continue
        if not orphan[c].cast(pl.Utf8).is_in(pl.concat([df[c].cast(pl.Utf8) for _, df in sources]).unique().implode()).all():
            continue
        if sum(_is_key(df, [c]) for _, df in sources) >= KEY_DISTINCT * len(sources):
            return [c]
    return []


def _compare(orphan: pl.DataFrame, cols: list[str], sources: list[tuple[dict, pl.DataFrame]], writer: str,
             created_by: str | None, codec: str | None, later: set[int] | None = None,
             partition_columns: frozenset[str] = frozenset()) -> ContentReading:
    """`later`: the versions committed after the orphans were written (trusted file times), None: unknown."""
    o_full = _hashes(orphan, cols)
    o_set = set(o_full.to_list())
    full: dict[str, pl.Series] = {r["cpath"]: _hashes(df, cols) for r, df in sources}
    full_hits = {p: int(h.is_in(list(o_set)).sum()) for p, h in full.items()}
    full_hits = {p: n for p, n in full_hits.items() if n}
    # A committed file holding exactly the orphans' rows is a re-run's output, not what they came from.
    # ...when it came later: committed after the orphans were written (trusted file times), else later
    # than what the rows were rewritten from; a file holding the same rows that is older than every
    # other source, or the table's first, is the unchanged original (an upsert that changed nothing).
    same = [r for r, df in sources if full_hits.get(r["cpath"]) == df.height == orphan.height]
    others = [int(r["added"]) for r, _ in sources if r["cpath"] in full_hits and r not in same]
    if later is not None:
        rerun = [r["cpath"] for r in same if int(r["added"]) in later]  # written again after them: their re-run
    else:
        rerun = [r["cpath"] for r in same if (int(r["added"]) > max(others) if others else int(r["added"]) > 0)]
    rerun_version = min((int(r["added"]) for r in same if r["cpath"] in rerun), default=None)
    if rerun:
        sources = [(r, df) for r, df in sources if r["cpath"] not in rerun]
        for p in rerun:
            full_hits.pop(p, None)
        if not sources:
            return replace(_reading("unknown", writer, created_by, codec, (), None,
                                    f"its rows are exactly those of {rerun[0]}, committed in v{rerun_version}: a re-run of it"),
                           rerun_version=rerun_version)
    # A key: the columns whose every orphan value occurs in the sources, when they tell rows apart
    # (in the orphans and in each source file: rewrites repeat keys across versions, never within one).
    key = _key_column(orphan, cols, sources, partition_columns)
    keyed: dict[str, pl.Series] = {}
    o_key: pl.Series | None = None
    if key and key != cols and _is_key(orphan, key):
        o_key = _hashes(orphan, key)
        ok = list(set(o_key.to_list()))
        for r, df in sources:
            if _is_key(df, key):
                h = _hashes(df, key)
                if bool(h.is_in(ok).any()):
                    keyed[r["cpath"]] = h
    by_path = {r["cpath"]: (r, df) for r, df in sources}
    fed = set(full_hits) | set(keyed)
    if not fed:
        return _reading("append", writer, created_by, codec, (), None,
                        f"none of its {orphan.height} rows is a row of a committed file of its folders: new rows only")

    def span(p: str) -> tuple[int, int]:
        r = by_path[p][0]
        z = r["removed"]
        return int(r["added"]), (int(z) if z is not None and int(z) < INF else 2**62)

    def counts(live: frozenset[str]) -> tuple[int, int, int]:
        """(orphan rows kept as they were, orphan rows found by key, source rows found in the orphans)"""
        fh = set().union(*(set(full[p].to_list()) for p in live))
        kept = int(o_full.is_in(list(fh)).sum())
        if o_key is not None:
            kh = set().union(*(set(keyed[p].to_list()) for p in live if p in keyed))
            matched = int((o_full.is_in(list(fh)) | o_key.is_in(list(kh))).sum())
            src = sum(int((full[p].is_in(list(o_set)) | (keyed[p].is_in(list(set(o_key.to_list()))) if p in keyed else False)).sum())
                      for p in live)
        else:
            matched = kept
            src = sum(int(full[p].is_in(list(o_set)).sum()) for p in live)
        return kept, matched, src

    # The sources were live together at the read version: of the sets of fed files live at once,
    # the one that accounts for most of the orphans' rows, with the fewest rows of its own.
    scored = []
    for v in sorted({span(p)[0] for p in fed}):
        live = frozenset(p for p in fed if span(p)[0] <= v < span(p)[1])
        scored.append((counts(live)[1], -sum(by_path[p][1].height for p in live), live))
    top = max(sc[:2] for sc in scored)
    live = next(sc[2] for sc in scored if sc[:2] == top)
    # Sets that explain as many of its rows (a later commit rewrote the same rows unchanged, a
    # compaction, duplicated rows): the attempt may have read any of them, so the read versions span
    # them all; the fewest rows of their own only chooses the set the counts below describe.
    ties = [sc[2] for sc in scored if sc[0] == top[0]]
    spans = [(max(span(p)[0] for p in t), min(span(p)[1] for p in t) - 1) for t in ties]
    kept, matched, src_hit = counts(live)
    changed = matched - kept
    src_rows = sum(by_path[p][1].height for p in live)
    new = orphan.height - matched
    dropped = max(src_rows - src_hit, 0)
    lo = min(a for a, _ in spans)
    hi = max(b for _, b in spans)
    if changed == 0 and new == 0 and dropped == 0:
        kind = "compaction" if len(live) > 1 or (codec or "").upper() == "ZSTD" else "update"
    elif changed == 0 and new == 0:
        kind = "delete"
    elif new == 0 and dropped == 0:
        kind = "update"
    else:
        kind = "merge"
    n = len(live)
    deletes = writer_operations(created_by, codec) == ("DELETE",)
    if kind != "compaction" and not deletes and dropped >= matched:
        # A rewrite carries the rows of its source files it leaves alone; one that would have dropped
        # as many of them as it kept is as likely new rows equal to old ones (a re-run's or a re-ingested batch's
        # upsert, an append of duplicates) as a rewrite: it bounds neither the operation nor the
        # read versions. Only a writer that writes nothing but DELETEs says otherwise.
        return _reading("weak", writer, created_by, codec, tuple(sorted(live)), None,
                        f"{matched} of its {orphan.height} rows are rows of {n} committed file(s), whose other {dropped} "
                        "rows it would have dropped: as likely new rows equal to old ones as a rewrite of those files, "
                        "so they bound neither what it did nor the versions it read")
    if kind == "merge" and len(live) == 1 and src_rows == 1 and kept == matched == 1 and changed == 0:
        # One row equal to the one row of a committed file, beside new rows: a rewrite would have
        # had to copy that file unchanged; far likelier a new row that equals one a winner wrote
        # (a REPLACE WHERE's id 301 against a MERGE's inserted 301: live delta-spark races). One row
        # bounds neither what it did nor the versions it read.
        return _reading("weak", writer, created_by, codec, tuple(sorted(live)), None,
                        f"one of its {orphan.height} rows equals the one row of {sorted(live)[0]}, the others are new: "
                        "as likely a new row equal to one written before as a copy of that file, so it bounds "
                        "neither what it did nor the versions it read")
    if kind != "compaction" and 2 * matched < orphan.height and 2 * matched < src_rows:
        # Few of its rows are rows of those files and most of theirs are gone: as likely new rows that
        # happen to equal old ones (an overwrite) as a rewrite. Neither the operation nor the read
        # versions are bounded by it.
        return _reading("weak", writer, created_by, codec, tuple(sorted(live)), None,
                        f"only {matched} of its {orphan.height} rows are rows of {n} committed file(s) ({src_rows} rows): "
                        "too few to say it rewrote them")
    what = {"compaction": f"every row of {n} committed file(s) and nothing else: a compaction of them",
            "delete": f"{matched} of the {src_rows} rows of {n} committed file(s), the other {dropped} left out: a DELETE's rewrite",
            "update": f"the {src_rows} rows of {n} committed file(s) (matched on {', '.join(key)}), {changed} with other values: an UPDATE's rewrite",
            "merge": f"{matched} rows of {n} committed file(s) ({changed} changed, {dropped} left out) and {new} new: a MERGE's rewrite"}[kind]
    when = f"v{lo}..v{hi}" if hi < 2**62 - 1 else f"v{lo} or later"
    pred = _touched_by_partition(by_path, sorted(live), partition_columns, cols, key, o_set, o_full,
                                 o_key) if kind in ("delete", "update", "merge") else None
    again = f"; v{rerun_version} wrote exactly its rows again (a re-run)" if rerun_version is not None else ""
    return replace(_reading(kind, writer, created_by, codec, tuple(sorted(live)), (lo, hi),
                            f"its {orphan.height} rows are {what}; those files were all live at {when}{again}", pred),
                   rerun_version=rerun_version)


def weakened(reading: ContentReading) -> ContentReading:
    """The reading with its bound and operation withdrawn (the rows were not what the attempt rewrote)."""
    return replace(reading, kind="weak", operations=_KIND_OPS["weak"], read_versions=None, predicate=None)


MAX_IN = 20


def _literal(v: Any) -> str | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return None


def _touched_predicate(src: pl.DataFrame, cols: list[str], key: list[str], o_set: set, o_full: pl.Series,
                       o_key: pl.Series | None) -> str | None:
    """The source rows the attempt deleted or changed, as `col IN (...)` on a column unique in its
    sources (an id): the condition its rows show, built from its own files only."""
    touched = _touched_rows(src, cols, key, o_set, o_key)
    return _rows_condition(src, touched, cols, key) if touched.height else None


def _touched_by_partition(by_path: dict[str, tuple[Any, pl.DataFrame]], live: list[str], partition_columns: frozenset[str],
                          cols: list[str], key: list[str], o_set: set, o_full: pl.Series, o_key: pl.Series | None) -> str | None:
    """`_touched_predicate` per partition of the files it rewrote, OR-ed: a range per partition is
    tighter than one over all of them (ids 0-9 in `a` and 20-29 in `c` touched: a winner's new id 27
    in `a` is no row it read; one `id BETWEEN 0 AND 29` would say it is)."""
    from forensics.evidence.attempts import partition_of
    from forensics.evidence.hypotheses import partition_predicate

    whole = pl.concat([by_path[p][1] for p in live], how="vertical_relaxed")
    groups: dict[tuple, list[str]] = {}
    for p in live:
        groups.setdefault(tuple(sorted(partition_of(p, tuple(sorted(partition_columns))).items(), key=str)), []).append(p)
    if len(groups) < 2:
        return _touched_predicate(whole, cols, key, o_set, o_full, o_key)
    terms = []
    for pv, paths in sorted(groups.items(), key=str):
        src = pl.concat([by_path[p][1] for p in paths], how="vertical_relaxed")
        touched = _touched_rows(src, cols, key, o_set, o_key)
        if touched.height == 0:
            continue
        cond, part = _rows_condition(src, touched, cols, key), partition_predicate([dict(pv)])
        if cond is None or part is None:
            return _touched_predicate(whole, cols, key, o_set, o_full, o_key)
        terms.append(f"{part} AND {cond}")
    if not terms:
        return None
    return terms[0] if len(terms) == 1 else " OR ".join(f"({t})" for t in terms)


def _touched_rows(src: pl.DataFrame, cols: list[str], key: list[str], o_set: set, o_key: pl.Series | None) -> pl.DataFrame:
    """The rows of `src` the attempt deleted or changed (not among its own rows as they were)."""
    gone = ~_hashes(src, cols).is_in(list(o_set))
    if o_key is not None and key:
        changed = _hashes(src, key).is_in(list(set(o_key.to_list()))) & gone
        deleted = gone & ~_hashes(src, key).is_in(list(set(o_key.to_list())))
        return src.filter(changed | deleted)
    return src.filter(gone)


def _rows_condition(src: pl.DataFrame, touched: pl.DataFrame, cols: list[str], key: list[str]) -> str | None:
    """`touched` as a condition on a column unique in `src`: `=`, `IN (...)`, or a range."""
    from forensics.evidence.hypotheses import _ident

    for c in (key or []) + [c for c in cols if c not in key]:
        if src[c].n_unique() < KEY_DISTINCT * src.height or src[c].null_count():
            continue
        vals = sorted(set(touched[c].to_list()))
        lits = [_literal(v) for v in vals]
        if any(x is None for x in lits):
            continue
        if len(lits) == 1:
            return f"{_ident(c)} = {lits[0]}"
        if len(lits) <= MAX_IN:
            return f"{_ident(c)} IN ({', '.join(lits)})"
        return f"{_ident(c)} BETWEEN {lits[0]} AND {lits[-1]}"
    return None


# A predicate overwrite (replaceWhere) rewrites like a DELETE that also writes new rows.
_KIND_OPS = {"compaction": ("OPTIMIZE",), "delete": ("DELETE", "MERGE", "OVERWRITE"), "update": ("UPDATE", "MERGE"),
             "merge": ("MERGE", "OVERWRITE"), "append": ("MERGE", "OVERWRITE", "INSERT"), "unknown": (),
             "weak": ("MERGE", "OVERWRITE", "UPDATE", "DELETE", "INSERT")}
# New rows only: a blind append rarely aborts (it reads nothing), so a MERGE that only inserted or an
# overwrite explains an aborted attempt better and comes first; the blind append stays (it still
# loses to a metadata or protocol change).


def _reading(kind: str, writer: str, created_by: str | None, codec: str | None, sources: tuple[str, ...],
             rng: tuple[int, int] | None, why: str, predicate: str | None = None) -> ContentReading:
    ops = _KIND_OPS[kind]
    narrowed = writer_operations(created_by, codec)
    if kind == "unknown":
        ops = narrowed if narrowed is not None and len(narrowed) == 1 else ()  # only a writer that does one thing says what
    if narrowed is not None:
        both = tuple(o for o in ops if o in narrowed)
        if both:
            ops = both
        elif kind == "compaction":
            # every row unchanged, yet a writer that does not compact: an UPDATE or MERGE that set
            # the values they had (a re-run upsert of the same source)
            # (a writer that only deletes leaves it a compaction: a DELETE that removed no row of those
            # files read just them, as a compaction does, and replays the same)
            ops = tuple(o for o in ("MERGE", "UPDATE") if o in narrowed) or ops
            kind = "update" if ops != _KIND_OPS["compaction"] else kind
        elif kind != "append":
            ops = ops  # the rows say more than the writer: keep what they show
        else:
            ops = narrowed  # new rows only, yet a writer that only rewrites: trust the writer
            kind = {"DELETE": "delete", "OPTIMIZE": "compaction"}.get(narrowed[0], kind)
    why = f"{why}; written by {writer}"
    return ContentReading(kind, ops, sources, rng, writer, why, predicate)

"""The parsed-log cache: immutable generations published by an atomic pointer.

Several processes (CLI runs, TUIs, notebooks) share one cache directory per table and any of
them may be killed mid-write. So nothing is ever rewritten in place: a writer builds a whole
generation in a temporary directory (`.tmp-*`), renames it to `gen-*` and then points `current`
at it with `os.replace`. A reader reads `current` once and everything else from that generation,
so it sees one writer's complete work or none of it; a killed writer leaves only a `.tmp-*` or
an unpublished `gen-*`, removed after GC_AGE_S. An append (new commits) links the previous
generation's parts into a new one. Anything unreadable is rebuilt from the log, never trusted.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from forensics.runtime import after_answer
from forensics.runtime.logs import logger
from forensics.runtime.paths import table_cache_dir

if TYPE_CHECKING:  # polars only where a generation is read: whether one is published is asked before it is needed
    import polars as pl

CACHE_FORMAT = 8  # 5: fewer commitInfo columns; 6: generations behind an atomic pointer; 7: the whole commitInfo (typed metrics, clientVersion, other keys); 8: the files' fingerprint beside meta.json, a digest of it inside
# The log files a generation was built from (name, size, mtime, source per version) are written
# apart from meta.json: at 1,000,000 commits their JSON took ~3 s to read, and meta.json is read
# on every open. meta.json holds their count and a digest (`fingerprint_digest`); the whole list
# is read only when the digest differs from the log's (a commit cleaned up or rewritten).
FINGERPRINT = "fingerprint.json"
GC_AGE_S = 3600  # a generation no longer current, or a killed writer's leftovers, kept this long
POINTER = "current"


def current_dir(cache_dir: Path) -> Path | None:
    """The published generation, or None (a publication the warm engine left until after its
    answer is made first: every read of the cache starts here)."""
    after_answer.settle(str(cache_dir))
    try:
        name = (cache_dir / POINTER).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    gen = cache_dir / name
    return gen if name.startswith("gen-") and "/" not in name and gen.is_dir() else None


def published(table_uri: str) -> Path | None:
    """The cache directory of the table at `table_uri` when a generation is published there, else
    None: asked before anything is read (the TUI lists the commits' times itself when it is None)."""
    cache_dir = table_cache_dir(table_uri)
    return cache_dir if current_dir(cache_dir) is not None else None


def read_meta(cache_dir: Path) -> dict[str, Any] | None:
    gen = current_dir(cache_dir)
    if gen is None:
        return None
    try:
        meta = json.loads((gen / "meta.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("format") != CACHE_FORMAT:
        return None
    meta["_gen"] = str(gen)
    return meta


def read_fingerprint(meta: dict[str, Any]) -> dict[str, list] | None:
    """The whole fingerprint of the generation `meta` was read from (`FINGERPRINT`), or None."""
    try:
        fp = json.loads((Path(meta["_gen"]) / FINGERPRINT).read_text())
    except (OSError, ValueError, KeyError):
        return None
    return fp if isinstance(fp, dict) else None


def load(cache_dir: Path, table_uri: str, fallback: Callable[[list[int]], pl.DataFrame]):
    """(commits, actions loader, others, meta) of the published generation, or None.

    `fallback(versions)` gives the file actions of those versions from the log itself, for when
    the generation's action files are gone or damaged by the time they are first needed."""
    meta = read_meta(cache_dir)
    if meta is None or meta.get("location") != table_uri:
        return None
    import polars as pl

    gen = Path(meta["_gen"])
    try:
        commits = pl.read_parquet(gen / "commits.parquet")
        others = pl.concat([pl.read_parquet(gen / f"others-{i:06d}.parquet") for i in range(int(meta["parts"]))], how="vertical_relaxed")
        parts = [gen / f"actions-{i:06d}.parquet" for i in range(int(meta["parts"]))]
        if commits.height != int(meta["files"]) or not all(p.is_file() for p in parts):
            return None  # not what this generation's writer wrote: rebuild
    except Exception:  # noqa: BLE001 - a damaged cache is rebuilt, never trusted
        return None
    versions = commits["version"].to_list()
    logger.info("%d commit(s) already parsed, from the cache %s", len(versions), gen)

    def actions() -> pl.DataFrame:
        try:
            return pl.concat([pl.read_parquet(p) for p in parts], how="vertical_relaxed")
        except Exception:  # noqa: BLE001 - removed or damaged since: the same versions from the log
            _unpublish(cache_dir, gen)
            return fallback(versions)

    return commits, actions, others, meta


def write(cache_dir: Path, meta: dict[str, Any], commits: pl.DataFrame, actions: pl.DataFrame, others: pl.DataFrame) -> None:
    """Publish a new generation holding exactly these frames (in the warm engine, once the
    command's answer is sent: forensics/runtime/after_answer.py)."""
    after_answer.later(str(cache_dir), lambda: _publish(cache_dir, meta, commits, [(actions, others)], []))


def append(cache_dir: Path, base: dict[str, Any], meta: dict[str, Any], commits: pl.DataFrame,
           actions: pl.DataFrame, others: pl.DataFrame) -> None:
    """Publish a generation = `base`'s parts (linked, not copied) + one new part."""
    old = Path(base["_gen"])
    n = int(base["parts"])
    links = [(old / f"{k}-{i:06d}.parquet", f"{k}-{i:06d}.parquet") for i in range(n) for k in ("actions", "others")]
    after_answer.later(str(cache_dir), lambda: _publish(cache_dir, meta, commits, [(actions, others)], links, first_part=n))


def _publish(cache_dir: Path, meta: dict[str, Any], commits: pl.DataFrame, new_parts: list[tuple[pl.DataFrame, pl.DataFrame]],
             links: list[tuple[Path, str]], first_part: int = 0) -> None:
    tag = f"{time.time_ns()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp = cache_dir / f".tmp-{tag}"
    try:
        tmp.mkdir(parents=True)
        for src, name in links:
            try:
                os.link(src, tmp / name)
            except OSError:
                shutil.copyfile(src, tmp / name)
        for i, (a, o) in enumerate(new_parts, start=first_part):
            a.write_parquet(tmp / f"actions-{i:06d}.parquet")
            o.write_parquet(tmp / f"others-{i:06d}.parquet")
        commits.write_parquet(tmp / "commits.parquet")
        fingerprint = meta["fingerprint"]
        meta = {**{k: v for k, v in meta.items() if k != "fingerprint"}, "files": len(fingerprint),
                "format": CACHE_FORMAT, "parts": first_part + len(new_parts), "built_at": int(time.time() * 1000)}
        (tmp / FINGERPRINT).write_text(json.dumps(fingerprint))
        (tmp / "meta.json").write_text(json.dumps(meta))
        gen = cache_dir / f"gen-{tag}"
        os.rename(tmp, gen)
        ptr = cache_dir / f".{POINTER}-{tag}"
        ptr.write_text(gen.name)
        os.replace(ptr, cache_dir / POINTER)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # a read-only or full cache directory only costs speed
        return
    _collect(cache_dir)


def _unpublish(cache_dir: Path, gen: Path) -> None:
    """Stop pointing at a damaged generation (only if it is still the current one)."""
    if current_dir(cache_dir) == gen:
        try:
            (cache_dir / POINTER).unlink()
        except OSError:
            pass


def _collect(cache_dir: Path) -> None:
    """Remove generations that are not current and leftovers of killed writers, once old."""
    cur = current_dir(cache_dir)
    now = time.time()
    try:
        entries = list(cache_dir.iterdir())
    except OSError:
        return
    for p in entries:
        if p == cur or not p.name.startswith(("gen-", ".tmp-", f".{POINTER}-")):
            continue
        try:
            if now - p.stat().st_mtime < GC_AGE_S:
                continue
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink()
        except OSError:
            pass

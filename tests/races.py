"""Real races through deltalake (delta-rs), written where the test says (a local path or the local
S3 server with deltalake's safe commit mode, conditional put): the incidents of issue "Blame when
the log is silent", with the truth each one records (who beat whom, the printed error text)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
from deltalake.exceptions import CommitFailedError


@dataclass
class Loser:
    """A transaction the engine aborted: what it read and did, who beat it, what it printed."""

    read_version: int
    operation: str
    sql: str
    partition: str | None
    winner: int
    exception: str
    text: str
    error: CommitFailedError | None = None  # what the job caught: the engine's own exception object


@dataclass
class Race:
    uri: str
    storage_options: dict[str, str] = field(default_factory=dict)
    losers: list[Loser] = field(default_factory=list)


def _rows(ids: list[int], date: str | None) -> pa.Table:
    cols = {"id": pa.array(ids, pa.int64()), "status": pa.array(["cancelled" if i % 3 == 0 else "ok" for i in ids])}
    if date is not None:
        cols["date"] = pa.array([date] * len(ids))
    return pa.table(cols)


def _fails(run) -> CommitFailedError:
    try:
        run()
    except CommitFailedError as e:
        return e
    raise AssertionError("the engine committed a transaction the race meant to abort")


def _text(e: CommitFailedError) -> str:
    return f"CommitFailedError: {e}"


def two_partition_race(uri: str, so: dict[str, str] | None = None) -> Race:
    """Partitioned by date. v0-v3 appends; two handles read v3: a DELETE commits v4, an UPDATE fails;
    v5 an append with app transaction nightly-etl/42 and user metadata; v6, v7 appends to 2024-06-20;
    two handles read v7: OPTIMIZE commits v8, a DELETE fails. Both texts: "added new data"."""
    so = dict(so or {})
    race = Race(uri, so)
    for k in range(4):
        write_deltalake(uri, _rows(list(range(k * 10, k * 10 + 10)), "2024-06-19"), mode="append", partition_by=["date"],
                        storage_options=so)
    a, b = DeltaTable(uri, storage_options=so), DeltaTable(uri, storage_options=so)
    a.delete("date = '2024-06-19' AND status = 'cancelled'")
    t1 = _fails(lambda: b.update(predicate="date = '2024-06-19'", updates={"status": "'checked'"}))
    race.losers.append(Loser(3, "UPDATE", "UPDATE t SET status = 'checked' WHERE date = '2024-06-19'", "2024-06-19", 4,
                             "ConcurrentAppendException", _text(t1), t1))
    write_deltalake(uri, _rows([100, 101], "2024-06-19"), mode="append", storage_options=so,
                    commit_properties=CommitProperties(app_transactions=[Transaction("nightly-etl", 42)],
                                                       custom_metadata={"userMetadata": "nightly run"}))
    write_deltalake(uri, _rows([200, 201, 202], "2024-06-20"), mode="append", storage_options=so)
    write_deltalake(uri, _rows([203, 204, 205], "2024-06-20"), mode="append", storage_options=so)
    a, b = DeltaTable(uri, storage_options=so), DeltaTable(uri, storage_options=so)
    a.optimize.compact(partition_filters=[("date", "=", "2024-06-20")])
    t2 = _fails(lambda: b.delete("date = '2024-06-20' AND status = 'cancelled'"))
    race.losers.append(Loser(7, "DELETE", "DELETE FROM t WHERE date = '2024-06-20' AND status = 'cancelled'", "2024-06-20", 8,
                             "ConcurrentAppendException", _text(t2), t2))
    return race


def _four_appends_two_handles(uri: str, so: dict[str, str] | None) -> tuple[Race, DeltaTable, DeltaTable]:
    """Unpartitioned, four appends (ids 0-39), then two handles that both read v3."""
    so = dict(so or {})
    for k in range(4):
        write_deltalake(uri, _rows(list(range(k * 10, k * 10 + 10)), None), mode="append", storage_options=so)
    return Race(uri, so), DeltaTable(uri, storage_options=so), DeltaTable(uri, storage_options=so)


def compaction_loses(uri: str, so: dict[str, str] | None = None) -> Race:
    """Unpartitioned, four appends (ids 0-39); two handles read v3: DELETE id = 5 commits v4, a
    compaction fails with "deleted data this operation read"."""
    race, a, b = _four_appends_two_handles(uri, so)
    a.delete("id = 5")
    e = _fails(lambda: b.optimize.compact())
    race.losers.append(Loser(3, "OPTIMIZE", "OPTIMIZE t", None, 4, "ConcurrentDeleteReadException", _text(e), e))
    return race


def reingested_batch_loses(uri: str, so: dict[str, str] | None = None) -> Race:
    """Unpartitioned, four appends (ids 0-39); two handles read v3: DELETE id < 5 commits v4, the
    other appends ids 12 and 13 again (a re-ingested batch: rows equal to rows the table holds) and
    fails with "deleted data this operation read"."""
    race, a, b = _four_appends_two_handles(uri, so)
    a.delete("id < 5")
    e = _fails(lambda: write_deltalake(b, _rows([12, 13], None), mode="append", storage_options=race.storage_options))
    race.losers.append(Loser(3, "WRITE", "INSERT INTO t VALUES (12, 'ok'), (13, 'ok')", None, 4,
                             "ConcurrentDeleteReadException", _text(e), e))
    return race


def append_waits_then_loses(uri: str, so: dict[str, str] | None = None, wait_s: float = 2.0) -> Race:
    """Partitioned by date: three appends in quick succession (v0 2024-06-18, v1 2024-06-20, v2
    2024-06-19); a job reads v2, and `wait_s` later an UPDATE of 2024-06-19 commits v3; the job's
    append to 2024-06-19 then fails ("deleted data this operation read": a delta-rs append reads
    the whole table). v2 was the newest version for seconds, v0 and v1 for milliseconds."""
    import time

    so = dict(so or {})
    race = Race(uri, so)
    for k, day in enumerate(("2024-06-18", "2024-06-20", "2024-06-19")):
        write_deltalake(uri, _rows(list(range(k * 10, k * 10 + 10)), day), mode="append", partition_by=["date"],
                        storage_options=so)
    job = DeltaTable(uri, storage_options=so)
    time.sleep(wait_s)
    DeltaTable(uri, storage_options=so).update(predicate="date = '2024-06-19'", updates={"status": "'checked'"})
    e = _fails(lambda: write_deltalake(job, _rows([100, 101], "2024-06-19"), mode="append", storage_options=so))
    race.losers.append(Loser(2, "INSERT", "INSERT INTO t VALUES (100, 'ok', '2024-06-19'), (101, 'ok', '2024-06-19')",
                             "2024-06-19", 3, "ConcurrentDeleteReadException", _text(e), e))
    return race


def update_broader_than_its_rows_loses(uri: str, so: dict[str, str] | None = None) -> Race:
    """Partitioned by date: v0 ids 0-9 on 2024-06-18, v1 ids 10-19 on 2024-06-19, v2 ids 20-29 on
    2024-06-20. Two handles read v2: an overwrite of 2024-06-18 (ids 27, 71) commits v3; an UPDATE of
    `date = '2024-06-20' OR id < 15` fails: v3 removed files it read, and its new rows are not ones
    the UPDATE's condition matches ("deleted data this operation read")."""
    so = dict(so or {})
    race = Race(uri, so)
    for k, day in enumerate(("2024-06-18", "2024-06-19", "2024-06-20")):
        write_deltalake(uri, _rows(list(range(k * 10, k * 10 + 10)), day), mode="append", partition_by=["date"],
                        storage_options=so)
    a, b = DeltaTable(uri, storage_options=so), DeltaTable(uri, storage_options=so)
    write_deltalake(a, _rows([27, 71], "2024-06-18"), mode="overwrite", predicate="date = '2024-06-18'", storage_options=so)
    cond = "date = '2024-06-20' OR id < 15"
    e = _fails(lambda: b.update(predicate=cond, updates={"status": "'checked'"}))
    race.losers.append(Loser(2, "UPDATE", f"UPDATE t SET status = 'checked' WHERE {cond}", None, 3,
                             "ConcurrentDeleteReadException", _text(e), e))
    return race

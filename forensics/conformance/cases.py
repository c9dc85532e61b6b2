"""Conformance scenarios: load and validate them, turn one into the checker's inputs, write it as a log.

A scenario file is ours (format: `scenarios/README.md`); the shipped set lives in
`forensics/conformance/scenarios/` and is read with `importlib.resources`, so it works from a
wheel or a fresh clone. `load_scenarios(path)` reads another file (or folder of files) in the
same format instead.

`scenario_inputs` gives (Transaction, [WinningCommit], Profile) at read version 0;
`materialize_scenario` writes the scenario as a real delta-spark-format `_delta_log` (setup at
version 0, one version per winning commit); `outcome_agrees` compares a checker result with the
scenario's expected outcome.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import sqlglot
from sqlglot import exp

from forensics.log.snapshot import metadata_from_json, protocol_from_json
from forensics.model import (
    EXCEPTION_NAMES,
    ISOLATION_LEVELS,
    Bound,
    CommitRecord,
    DeletionVectorRef,
    FileAction,
    Metadata,
    Protocol,
    ReadSet,
    Transaction,
    WinningCommit,
    WriteSet,
)
from forensics.rules.isolation import effective_isolation_level, is_blind_append
from forensics.rules.messages import DELTA_RS_VARIANT, delta_name
from forensics.rules.profiles import Profile, get_profile

FORMAT = "delta-forensics/conformance-scenarios"
FORMAT_VERSION = 1
SCENARIO_DIR = "scenarios"  # inside this package

ANY_CONFLICT = "CommitConflict"  # expected outcome: the test asserts some conflict, not which one


@dataclass(frozen=True)
class Engine:
    profile: str  # the rule profile the scenario is checked with
    engine_info: str  # what the engine writes in commitInfo.engineInfo (spec §8.1, §9)
    outcomes: tuple[str, ...]  # the failure names its tests assert (besides "commit")


ENGINES: dict[str, Engine] = {
    "delta-spark": Engine("delta-spark-4.1+", "Apache-Spark/4.0.0 Delta-Lake/4.4.0",
                          (*EXCEPTION_NAMES, "DeltaIllegalStateException")),
    "delta-rs": Engine("delta-rs", "delta-rs:py-1.6.0", (*DELTA_RS_VARIANT, ANY_CONFLICT)),
    "delta-kernel-java": Engine("kernel", "Kernel-4.0.0/delta-forensics-conformance",
                                ("ConcurrentWriteException", "ConcurrentTransactionException",
                                 "MetadataChangedException", "ProtocolChangedException")),
}

TABLE_ID = "00000000-0000-0000-0000-00000000c0de"  # metaData.id of every materialized scenario
BASE_TS = 1_700_000_000_000  # version 0's timestamp (ms); version v is BASE_TS + 1000 v
DEFAULT_SIZE = 1024  # add/remove `size` when a scenario leaves it out

_DELTA_TYPE = {"int": "integer", "bigint": "long", "smallint": "short", "tinyint": "byte"}


@dataclass
class ScenarioInputs:
    id: str
    txn: Transaction
    winners: list[WinningCommit]
    profile: Profile
    setup_files: list[FileAction]
    read_metadata: Metadata
    read_protocol: Protocol


# --------------------------------------------------------------------------------------
# the format: keys and validation
# --------------------------------------------------------------------------------------

SCENARIO_KEYS = {  # key -> required
    "id": True, "title": True, "engine": True, "source": True, "isolation": True, "partition_columns": True,
    "schema": True, "table_properties": True, "table_protocol": True, "setup_files": True, "transaction": True,
    "winning_commits": True, "expected": True, "remarks": False, "known_difference": False,
}
SOURCE_KEYS = ("repo", "commit", "file", "test")
TRANSACTION_KEYS = {"operation": True, "read": True, "is_blind_append": True, "actions": True, "mode": False,
                    "sql": False, "condition": False, "tags": False}
READ_KEYS = ("predicates", "files", "whole_table", "app_ids")
WINNER_KEYS = {"operation": True, "is_blind_append": True, "actions": True, "predicate": False, "sql": False,
               "tags": False}
EXPECTED_KEYS = {"outcome": True, "error_class": False, "message_contains": False}
ACTION_REQUIRED = {  # Delta's on-disk action name -> fields a scenario must give
    "add": ("path", "partitionValues", "dataChange"),
    "remove": ("path", "partitionValues", "dataChange"),
    "metaData": ("id", "format", "schemaString", "partitionColumns", "configuration"),
    "protocol": ("minReaderVersion", "minWriterVersion"),
    "txn": ("appId", "version"),
    "domainMetadata": ("domain", "configuration", "removed"),
}
_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


def _keys(obj: Any, spec: dict[str, bool], where: str) -> list[str]:
    if not isinstance(obj, dict):
        return [f"{where}: not an object"]
    out = [f"{where}: missing `{k}`" for k, req in spec.items() if req and k not in obj]
    out += [f"{where}: unknown key `{k}`" for k in obj if k not in spec]
    return out


def _is_str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _is_str_map(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(k, str) and isinstance(x, str) for k, x in v.items())


def _validate_action(a: Any, where: str) -> list[str]:
    if not isinstance(a, dict) or len(a) != 1 or next(iter(a)) not in ACTION_REQUIRED:
        return [f"{where}: an action is an object with one key of {sorted(ACTION_REQUIRED)}"]
    kind, body = next(iter(a.items()))
    if not isinstance(body, dict):
        return [f"{where}.{kind}: not an object"]
    out = [f"{where}.{kind}: missing `{k}`" for k in ACTION_REQUIRED[kind] if k not in body]
    if kind in ("add", "remove"):
        if not isinstance(body.get("partitionValues", {}), dict):
            out.append(f"{where}.{kind}: partitionValues is not an object")
        if "stats" in body:
            try:
                stats = json.loads(body["stats"])
            except (TypeError, ValueError):
                stats = None
            if not isinstance(stats, dict):
                out.append(f"{where}.{kind}: stats is not JSON text of an object (Delta's on-disk form)")
        dv = body.get("deletionVector")
        if dv is not None and not (isinstance(dv, dict) and "storageType" in dv and "pathOrInlineDv" in dv):
            out.append(f"{where}.{kind}: deletionVector needs storageType and pathOrInlineDv")
    elif kind == "metaData":
        try:
            json.loads(body.get("schemaString") or "")
        except ValueError:
            out.append(f"{where}.metaData: schemaString is not JSON text")
    elif kind == "domainMetadata" and not isinstance(body.get("configuration"), str):
        out.append(f"{where}.domainMetadata: configuration is JSON text (Delta's on-disk form)")
    return out


def _validate_actions(actions: Any, where: str) -> list[str]:
    if not isinstance(actions, list):
        return [f"{where}: not a list"]
    out: list[str] = []
    for i, a in enumerate(actions):
        out += _validate_action(a, f"{where}[{i}]")
    kinds = [next(iter(a)) for a in actions if isinstance(a, dict) and len(a) == 1]
    for once in ("metaData", "protocol"):
        if kinds.count(once) > 1:
            out.append(f"{where}: more than one {once} action")
    return out


def validate_scenario(s: Any) -> list[str]:
    """Everything wrong with one scenario against the documented format (empty = valid)."""
    where = f"scenario {s.get('id')!r}" if isinstance(s, dict) else "scenario"
    out = _keys(s, SCENARIO_KEYS, where)
    if out and not isinstance(s, dict):
        return out
    if not (isinstance(s.get("id"), str) and _ID.match(s["id"])):
        out.append(f"{where}: id must be lower-case words joined by '-'")
    if not (isinstance(s.get("title"), str) and s["title"].strip()):
        out.append(f"{where}: title is empty")
    engine = s.get("engine")
    if engine not in ENGINES:
        out.append(f"{where}: unknown engine {engine!r} (known: {sorted(ENGINES)})")
    src = s.get("source")
    if not (isinstance(src, dict) and set(src) == set(SOURCE_KEYS)
            and all(isinstance(src[k], str) and src[k] for k in SOURCE_KEYS)):
        out.append(f"{where}: source needs exactly {list(SOURCE_KEYS)}, each non-empty")
    iso = s.get("isolation")
    if iso is not None and not (isinstance(iso, dict) and set(iso) == {"table", "transaction"}
                                and iso["table"] in ("Serializable", "WriteSerializable")
                                and iso["transaction"] in ISOLATION_LEVELS):
        out.append(f"{where}: isolation is null or {{table, transaction}} with Delta's level names")
    pcols, schema = s.get("partition_columns"), s.get("schema")
    if not _is_str_list(pcols):
        out.append(f"{where}: partition_columns is not a list of names")
    if not (isinstance(schema, dict) and schema and all(
            isinstance(t, str) or (isinstance(t, dict) and isinstance(t.get("type"), str)
                                   and set(t) <= {"type", "metadata"}) for t in schema.values())):
        out.append(f"{where}: schema maps each column to a type name or {{type, metadata}}")
    elif _is_str_list(pcols) and not set(pcols) <= set(schema):
        out.append(f"{where}: a partition column is missing from schema")
    if not _is_str_map(s.get("table_properties")):
        out.append(f"{where}: table_properties maps names to string values")
    out += [f"{where}: table_protocol {p}" for p in
            _validate_action({"protocol": s.get("table_protocol")}, "")]
    setup = s.get("setup_files")
    if not isinstance(setup, list) or not all(isinstance(f, dict) for f in setup):
        out.append(f"{where}: setup_files is not a list of add actions")
        setup = []
    else:
        out += _validate_actions([{"add": f} for f in setup], f"{where}.setup_files")
    setup_paths = {f.get("path") for f in setup}

    txn = s.get("transaction")
    out += _keys(txn, TRANSACTION_KEYS, f"{where}.transaction")
    if isinstance(txn, dict):
        read = txn.get("read")
        if not (isinstance(read, dict) and set(read) == set(READ_KEYS) and _is_str_list(read["predicates"])
                and _is_str_list(read["files"]) and isinstance(read["whole_table"], bool)
                and _is_str_list(read["app_ids"])):
            out.append(f"{where}.transaction.read needs {list(READ_KEYS)} (lists of strings, whole_table a bool)")
        elif not set(read["files"]) <= setup_paths:
            out.append(f"{where}.transaction.read.files names a file that is not among setup_files")
        if txn.get("is_blind_append") not in (None, True, False):
            out.append(f"{where}.transaction.is_blind_append is null, true or false")
        if "tags" in txn and not _is_str_map(txn["tags"]):
            out.append(f"{where}.transaction.tags maps names to strings")
        out += _validate_actions(txn.get("actions"), f"{where}.transaction.actions")
    winners = s.get("winning_commits")
    if not (isinstance(winners, list) and winners):
        out.append(f"{where}: winning_commits is not a non-empty list")
        winners = []
    for i, w in enumerate(winners):
        ww = f"{where}.winning_commits[{i}]"
        out += _keys(w, WINNER_KEYS, ww)
        if isinstance(w, dict):
            if w.get("is_blind_append") not in (None, True, False):
                out.append(f"{ww}.is_blind_append is null, true or false")
            if "tags" in w and not _is_str_map(w["tags"]):
                out.append(f"{ww}.tags maps names to strings")
            out += _validate_actions(w.get("actions"), f"{ww}.actions")

    exp_ = s.get("expected")
    out += _keys(exp_, EXPECTED_KEYS, f"{where}.expected")
    if isinstance(exp_, dict) and engine in ENGINES:
        known = ("commit", *ENGINES[engine].outcomes)
        if exp_.get("outcome") not in known:
            out.append(f"{where}: expected outcome {exp_.get('outcome')!r} is not one of {list(known)}")
        for k in ("error_class", "message_contains"):
            if k in exp_ and not (isinstance(exp_[k], str) and exp_[k]):
                out.append(f"{where}.expected.{k} is a non-empty string")
        if exp_.get("outcome") == "commit" and len(exp_) > 1:
            out.append(f"{where}.expected: a commit has no error_class or message")
    for k in ("remarks", "known_difference"):
        if k in s and not (isinstance(s[k], str) and len(s[k].strip()) > 20):
            out.append(f"{where}.{k}: a sentence or more of text")
    return out


def validate_document(doc: Any) -> list[str]:
    """Everything wrong with one scenario file (header, every scenario, duplicate ids)."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        return [f"not a scenario file: the top level must be an object with \"format\": \"{FORMAT}\""]
    out = []
    if doc.get("format_version") != FORMAT_VERSION:
        out.append(f"format_version {doc.get('format_version')!r} is not {FORMAT_VERSION}")
    if set(doc) - {"format", "format_version", "engine", "scenarios"}:
        out.append(f"unknown top-level keys {sorted(set(doc) - {'format', 'format_version', 'engine', 'scenarios'})}")
    scenarios = doc.get("scenarios")
    if not isinstance(scenarios, list):
        return [*out, "`scenarios` is not a list"]
    for s in scenarios:
        out += validate_scenario(s)
        if "engine" in doc and isinstance(s, dict) and s.get("engine") != doc["engine"]:
            out.append(f"scenario {s.get('id')!r}: engine differs from the file's engine {doc['engine']!r}")
    ids = [s.get("id") for s in scenarios if isinstance(s, dict)]
    out += [f"duplicate id {i!r}" for i in sorted({i for i in ids if ids.count(i) > 1}, key=str)]
    return out


# --------------------------------------------------------------------------------------
# loading
# --------------------------------------------------------------------------------------


def shipped_files() -> list[Any]:
    """The shipped scenario files (importlib.resources Traversables), by name."""
    root = resources.files("forensics.conformance").joinpath(SCENARIO_DIR)
    return sorted((f for f in root.iterdir() if f.name.endswith(".json")), key=lambda f: f.name)


def read_documents(path: str | Path | None = None) -> list[tuple[str, Any]]:
    """(name, parsed JSON) of the shipped files, or of `path` (a file, or a folder of *.json)."""
    if path is None:
        files: Iterable[Any] = shipped_files()
    else:
        p = Path(path)
        if p.is_dir():
            files = sorted(p.glob("*.json"))
        elif p.is_file():
            files = [p]
        else:
            raise FileNotFoundError(f"no such file: {p}")
    out = []
    for f in files:
        try:
            out.append((str(f), json.loads(f.read_text(encoding="utf-8"))))
        except ValueError as e:
            raise ValueError(f"{f}: not JSON ({e})") from e
    return out


def load_scenarios(path: str | Path | None = None) -> list[dict[str, Any]]:
    """Every scenario of the shipped set (path None) or of `path`, validated; ValueError if invalid."""
    scenarios: list[dict[str, Any]] = []
    for name, doc in read_documents(path):
        problems = validate_document(doc)
        if problems:
            more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
            raise ValueError(f"{name}: {'; '.join(problems[:3])}{more}")
        scenarios += doc["scenarios"]
    ids = [s["id"] for s in scenarios]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"duplicate scenario ids across files: {dup}")
    return scenarios


# --------------------------------------------------------------------------------------
# scenario -> checker inputs
# --------------------------------------------------------------------------------------


def _columns(pred: str) -> set[str] | None:
    try:
        tree = sqlglot.parse_one(pred, read="spark")
    except Exception:  # noqa: BLE001 - sqlglot raises several types; unparseable = unknown columns
        return None
    return {c.name for c in tree.find_all(exp.Column)}


def classify(pred: str, partition_columns: Iterable[str]) -> tuple[str, str | None]:
    """spec §4.1: (partition predicate, data predicate). A filter that references any
    non-partition column (incl. OR mixing both) is a data filter => partition part TRUE."""
    cols = _columns(pred)
    parts = {p.lower() for p in partition_columns}
    if cols is not None and all(c.lower() in parts for c in cols):
        return pred, None
    return "TRUE", pred


def _type_of(t: str | dict[str, Any]) -> tuple[str, dict[str, Any]]:
    if isinstance(t, dict):
        return str(t["type"]), dict(t.get("metadata") or {})
    return str(t), {}


def schema_string(schema: dict[str, Any]) -> str:
    """metaData.schemaString for a scenario's `schema`, in Delta's JSON type names."""
    fields = []
    for name, t in schema.items():
        typ, md = _type_of(t)
        fields.append({"name": name, "type": _DELTA_TYPE.get(typ.lower(), typ.lower()), "nullable": True,
                       "metadata": md})
    return json.dumps({"type": "struct", "fields": fields}, separators=(",", ":"))


def read_metadata(s: dict[str, Any]) -> Metadata:
    """The table's Metadata at the read version (written as version 0)."""
    return Metadata(id=TABLE_ID, name=None, description=None, format_provider="parquet",
                    schema_string=schema_string(s["schema"]), partition_columns=tuple(s["partition_columns"]),
                    configuration={str(k): str(v) for k, v in s["table_properties"].items()}, created_time=BASE_TS)


def read_protocol(s: dict[str, Any]) -> Protocol:
    p = protocol_from_json(json.dumps(s["table_protocol"]))
    if p is None:
        raise ValueError(f"scenario {s['id']!r}: table_protocol is not a protocol")
    return p


def _file(kind: str, d: dict[str, Any], version: int) -> FileAction:
    dv = d.get("deletionVector")
    dvref = None
    if dv:
        dvref = DeletionVectorRef(storage_type=str(dv["storageType"]), path_or_inline_dv=str(dv["pathOrInlineDv"]),
                                  offset=dv.get("offset"), size_in_bytes=dv.get("sizeInBytes"),
                                  cardinality=dv.get("cardinality"))
    return FileAction(version=version, kind=kind, path=str(d["path"]),  # type: ignore[arg-type]
                      partition_values=dict(d.get("partitionValues") or {}), size=d.get("size", DEFAULT_SIZE),
                      data_change=d.get("dataChange"), stats=d.get("stats"), deletion_vector=dvref,
                      modification_time=d.get("modificationTime", BASE_TS),
                      deletion_timestamp=d.get("deletionTimestamp", BASE_TS + version) if kind == "remove" else None)


@dataclass
class _Actions:
    adds: list[FileAction]
    removes: list[FileAction]
    metadata: Metadata | None
    protocol: Protocol | None
    app_txns: dict[str, int]
    domains: list[str]

    def other_kinds(self) -> list[str]:
        """Non-file actions as effective_isolation_level names them."""
        return (["metaData"] * bool(self.metadata) + ["protocol"] * bool(self.protocol) + ["txn"] * bool(self.app_txns)
                + [f"domainMetadata:{d}" for d in self.domains])


def _actions(actions: list[dict[str, Any]], version: int) -> _Actions:
    out = _Actions([], [], None, None, {}, [])
    for a in actions:
        kind, body = next(iter(a.items()))
        if kind in ("add", "remove"):
            (out.adds if kind == "add" else out.removes).append(_file(kind, body, version))
        elif kind == "metaData":
            out.metadata = metadata_from_json(json.dumps(body))
        elif kind == "protocol":
            out.protocol = protocol_from_json(json.dumps(body))
        elif kind == "txn":
            out.app_txns[str(body["appId"])] = int(body["version"])
        elif kind == "domainMetadata":
            out.domains.append(str(body["domain"]))
    return out


def _levels(s: dict[str, Any]) -> tuple[str, str]:
    """(table level, transaction level); a scenario without isolation levels (Kernel) is Serializable."""
    iso = s.get("isolation") or {}
    return iso.get("table", "Serializable"), iso.get("transaction", "Serializable")


def _winner_params(w: dict[str, Any]) -> dict[str, Any]:
    """operationParameters as delta-spark writes them on disk (spec §8.1): JSON text for lists."""
    op = w.get("operation") or ""
    params: dict[str, Any] = {}
    if w.get("predicate"):
        params["predicate"] = json.dumps([w["predicate"]]) if op in ("DELETE", "UPDATE", "MERGE", "OPTIMIZE") \
            else str(w["predicate"])
    if op == "WRITE":
        params["mode"] = "Append"
    return params


def _commit_info(s: dict[str, Any], w: dict[str, Any], version: int, acts: _Actions) -> dict[str, Any]:
    table_level, _ = _levels(s)
    ci: dict[str, Any] = {
        "timestamp": BASE_TS + version * 1000,
        "operation": w.get("operation") or "WRITE",
        "operationParameters": _winner_params(w),
        "readVersion": version - 1,
        "isolationLevel": effective_isolation_level([*acts.adds, *acts.removes], w.get("operation"), table_level,
                                                    other_actions=acts.other_kinds()),
    }
    if w.get("is_blind_append") is not None:
        ci["isBlindAppend"] = bool(w["is_blind_append"])
    if w.get("tags"):
        ci["tags"] = dict(w["tags"])
    ci["engineInfo"] = ENGINES[s["engine"]].engine_info
    ci["txnId"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{s['id']}#{version}"))
    return ci


def _record(version: int, ci: dict[str, Any], acts: _Actions) -> CommitRecord:
    return CommitRecord(
        version=version, timestamp=ci["timestamp"], in_commit_timestamp=None, file_modification_time=None,
        operation=ci["operation"], operation_parameters=dict(ci["operationParameters"]),
        read_version=ci["readVersion"], isolation_level=ci["isolationLevel"], is_blind_append=ci.get("isBlindAppend"),
        txn_id=ci["txnId"], engine_info=ci["engineInfo"], tags=ci.get("tags"), num_add=len(acts.adds),
        num_remove=len(acts.removes), has_metadata=acts.metadata is not None, has_protocol=acts.protocol is not None,
        has_txn=bool(acts.app_txns), has_domain_metadata=bool(acts.domains), has_commit_info=True,
        txn_app_ids=dict(acts.app_txns), domains=list(acts.domains),
        commit_info_raw=json.dumps(ci, separators=(",", ":")),
    )


def scenario_inputs(s: dict[str, Any]) -> ScenarioInputs:
    """One scenario as (Transaction, [WinningCommit], Profile), read version 0 (spec §13).

    A winner with `is_blind_append` null stands for a commit without commitInfo (delta-rs unit
    tests), so it gets no CommitRecord here; materialize_scenario still writes one.
    """
    engine = ENGINES[s["engine"]]
    profile = get_profile(engine.profile)
    pcols = tuple(s["partition_columns"])
    read_md, read_pr = read_metadata(s), read_protocol(s)
    setup = [_file("add", f, 0) for f in s["setup_files"]]
    by_path = {f.path: f for f in setup}

    cur = s["transaction"]
    read = cur["read"]
    raw_preds = list(read["predicates"])
    part_preds, data_preds = [], []
    for p in raw_preds:
        pp, dp = classify(p, pcols)
        part_preds.append(pp)
        if dp:
            data_preds.append(dp)
    read_files = [by_path[p] for p in read["files"]]
    whole = bool(read["whole_table"])
    acts = _actions(cur["actions"], 1 + len(s["winning_commits"]))
    blind = cur.get("is_blind_append")
    if blind is None:
        blind = is_blind_append([*acts.adds, *acts.removes], raw_preds + (["TRUE"] if whole else []), read_files)
    params: dict[str, Any] = {}
    if s["engine"] == "delta-rs" and raw_preds:  # delta-rs records its read predicate as operationParameters.predicate
        params["predicate"] = raw_preds[0] if len(raw_preds) == 1 else " AND ".join(f"({p})" for p in raw_preds)
    if cur.get("mode"):
        params["mode"] = cur["mode"]
    _, level = _levels(s)
    txn = Transaction(
        operation=cur.get("operation"), operation_parameters=params, read_version=0, isolation_level=level,
        read=ReadSet(partition_predicates=part_preds, data_predicates=data_preds, whole_table=whole, files=read_files,
                     files_bound=Bound.EXACT, app_ids=set(read["app_ids"]),
                     recorded_read=bool(raw_preds or read_files or whole), why="stated by the conformance scenario"),
        write=WriteSet(adds=acts.adds, removes=acts.removes, cdc=[], metadata=acts.metadata, protocol=acts.protocol,
                       app_txns=acts.app_txns, domains=acts.domains, is_blind_append=bool(blind),
                       is_blind_append_recorded=cur.get("is_blind_append")),
        partition_columns=pcols, schema_string=read_md.schema_string, read_metadata=read_md, read_protocol=read_pr,
        engine_info=engine.engine_info, tags=dict(cur.get("tags") or {}),
    )
    winners = []
    for i, w in enumerate(s["winning_commits"], start=1):
        wa = _actions(w["actions"], i)
        rec = _record(i, _commit_info(s, w, i, wa), wa) if w.get("is_blind_append") is not None else None
        winners.append(WinningCommit(
            version=i, operation=w.get("operation"), adds=wa.adds, removes=wa.removes, metadata=wa.metadata,
            protocol=wa.protocol, app_txns=wa.app_txns, domains=wa.domains, is_blind_append=w.get("is_blind_append"),
            commit=rec, tags=dict(w.get("tags") or {}),
        ))
    return ScenarioInputs(s["id"], txn, winners, profile, setup, read_md, read_pr)


# --------------------------------------------------------------------------------------
# comparing
# --------------------------------------------------------------------------------------


def outcome_agrees(expected: dict[str, Any], exception: str | None, error_class: str | None = None,
                   message: str | None = None) -> bool:
    """Does a checker result match the scenario's `expected`?

    Outcomes compare by Delta's simple class name (delta-rs variants map onto them);
    `CommitConflict` accepts any conflict. `error_class` matches exactly, or as the class of
    a sub-class (`DELTA_X` matches `DELTA_X.WITH_PARTITION_HINT`); `message_contains` is a
    substring of the message.
    """
    want = expected["outcome"]
    if want == "commit":
        return exception is None
    if exception is None:
        return False
    if want != ANY_CONFLICT and delta_name(want) != exception:
        return False
    ec = expected.get("error_class")
    if ec and not (error_class == ec or (error_class or "").startswith(ec + ".")):
        return False
    mc = expected.get("message_contains")
    return not mc or mc in (message or "")


# --------------------------------------------------------------------------------------
# materializing
# --------------------------------------------------------------------------------------


def _metadata_json(md: Metadata) -> dict[str, Any]:
    """metaData as delta-spark writes it: format with options, absent name/description omitted."""
    d: dict[str, Any] = {"id": md.id, "format": {"provider": md.format_provider or "parquet", "options": {}},
                         "schemaString": md.schema_string, "partitionColumns": list(md.partition_columns),
                         "configuration": dict(md.configuration), "createdTime": md.created_time}
    if md.name is not None:
        d["name"] = md.name
    if md.description is not None:
        d["description"] = md.description
    return d


def _on_disk(action: dict[str, Any], version: int) -> dict[str, Any]:
    """A scenario action as a log line: the fields a scenario may leave out filled in."""
    kind, body = next(iter(action.items()))
    body = dict(body)
    if kind == "add":
        body.setdefault("size", DEFAULT_SIZE)
        body.setdefault("modificationTime", BASE_TS)
    elif kind == "remove":
        body.setdefault("deletionTimestamp", BASE_TS + version)
        body.setdefault("size", DEFAULT_SIZE)
    elif kind == "txn":
        body.setdefault("lastUpdated", BASE_TS + version * 1000)
    return {kind: body}


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, separators=(",", ":"))


def materialize_scenario(s: dict[str, Any], directory: str | Path) -> Path:
    """Write the scenario as a real `_delta_log` (delta-spark on-disk format); return the table root.

    Version 0 = commitInfo + protocol + metaData + the setup files as adds; versions 1..n =
    the winning commits (commitInfo with timestamp, operation, operationParameters,
    readVersion, isolationLevel, isBlindAppend (omitted when null), tags, engineInfo, txnId,
    then the winner's actions as stated). The current transaction read version 0 and is not
    written. Data files are not written.
    """
    root = Path(directory) / s["id"]
    log = root / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    md = read_metadata(s)
    v0 = [
        {"commitInfo": {"timestamp": BASE_TS, "operation": "CREATE TABLE",
                        "operationParameters": {"partitionBy": json.dumps(list(md.partition_columns))},
                        "isolationLevel": "Serializable", "isBlindAppend": True,
                        "engineInfo": ENGINES[s["engine"]].engine_info,
                        "txnId": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{s['id']}#0"))}},
        {"protocol": dict(s["table_protocol"])},
        {"metaData": _metadata_json(md)},
        *(_on_disk({"add": f}, 0) for f in s["setup_files"]),
    ]
    (log / f"{0:020d}.json").write_text("\n".join(_line(o) for o in v0) + "\n")
    for version, w in enumerate(s["winning_commits"], start=1):
        info = _commit_info(s, w, version, _actions(w["actions"], version))
        lines = [{"commitInfo": info}, *(_on_disk(a, version) for a in w["actions"])]
        (log / f"{version:020d}.json").write_text("\n".join(_line(o) for o in lines) + "\n")
    return root

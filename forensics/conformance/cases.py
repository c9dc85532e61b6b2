"""Conformance scenarios: load and validate them, and write each one as the log its engine would leave.

A scenario file is ours (format: `scenarios/README.md`); the shipped set lives in
`forensics/conformance/scenarios/` and is read with `importlib.resources`, so it works from a
wheel or a fresh clone. `load_scenarios(path)` reads another file (or folder of files) in the
same format instead.

`materialize_scenario` writes a scenario as a real `_delta_log` in its writer's on-disk form,
through the synth writer (`forensics.synth.SparkLogWriter`, delta-spark's action and commitInfo
classes, `forensics.synth.opparams` for delta-spark's parameter encoding; a Databricks runtime adds
its own commitInfo fields): version 0 = the
setup, then one version per winning commit, then the current transaction *as the commit it
would have written* (`transaction_version`). What a transaction read is never computed here:
the log holds only what the engine records (operation, operationParameters, readVersion,
isolationLevel, isBlindAppend), and `forensics.Table` rebuilds the rest. `whatif_request` is
the question a user would put to `Table.whatif` for the same transaction; `outcome_agrees`
compares an answer with the scenario's `expected`.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from forensics.model import EXCEPTION_NAMES, ISOLATION_LEVELS, operation_class
from forensics.rules.isolation import operation_changes_data
from forensics.rules.messages import DELTA_RS_VARIANT, delta_name
from forensics.synth.actions import (
    AddFile,
    CommitInfo,
    DeletionVector,
    DomainMetadata,
    MetaData,
    ProtocolAction,
    RemoveFile,
    SetTransaction,
    dumps,
)
from forensics.synth.opparams import json_list
from forensics.synth.sparkformat import SparkLogWriter
from forensics.synth.sparktable import Databricks

FORMAT = "delta-forensics/conformance-scenarios"
FORMAT_VERSION = 1
SCENARIO_DIR = "scenarios"  # inside this package

ANY_CONFLICT = "CommitConflict"  # expected outcome: the test asserts some conflict, not which one

SOURCE_KEYS = ("repo", "commit", "file", "test")  # an engine test: where it is, exactly as named there
DOC_SOURCE_KEYS = ("url", "page", "table", "row")  # a documentation row: the page, its table, the row and cell


@dataclass(frozen=True)
class Engine:
    profile: str  # the rule profile the engine's commits select (from engineInfo) in forensics
    engine_info: str  # commitInfo.engineInfo as the engine at the scenarios' source commit writes it
    outcomes: tuple[str, ...]  # the failure names its tests assert (besides "commit")
    release: str  # which build `engine_info` names, and why
    source_keys: tuple[str, ...] = SOURCE_KEYS  # what a scenario's `source` names


ENGINES: dict[str, Engine] = {
    # delta-io/delta @ bb1057f: version.sbt says 4.4.0-SNAPSHOT, the default Spark is 4.2.0
    # (project/CrossSparkVersions.scala); engineInfo = "Apache-Spark/<SPARK_VERSION> Delta-Lake/<VERSION>".
    "delta-spark": Engine("delta-spark-4.1+", "Apache-Spark/4.2.0 Delta-Lake/4.4.0-SNAPSHOT",
                          (*EXCEPTION_NAMES, "DeltaIllegalStateException"),
                          "delta-io/delta bb1057f (version.sbt 4.4.0-SNAPSHOT, default Spark 4.2.0)"),
    # delta-io/delta-rs @ 2c996fa = python/Cargo.toml 1.6.3; engineInfo = "delta-rs:" + crate_version(),
    # which the Python binding sets to "py-<version>" (crates/core/src/lib.rs, protocol/mod.rs get_commit_info).
    "delta-rs": Engine("delta-rs", "delta-rs:py-1.6.3", (*DELTA_RS_VARIANT, ANY_CONFLICT),
                       "delta-io/delta-rs 2c996fa (python 1.6.3)"),
    # Kernel writes "Kernel-" + Meta.KERNEL_VERSION + "/" + the engine's own info (TransactionImpl
    # .generateCommitAction); the kernel-defaults tests pass "test-engine" (WriteUtils.testEngineInfo).
    "delta-kernel-java": Engine("kernel", "Kernel-4.4.0-SNAPSHOT/test-engine",
                                ("ConcurrentWriteException", "ConcurrentTransactionException",
                                 "MetadataChangedException", "ProtocolChangedException"),
                                "delta-io/delta bb1057f kernel (4.4.0-SNAPSHOT), kernel-defaults test engine"),
    # Databricks Runtime is closed source: its scenarios are the rows of its documentation's conflict
    # tables, which say "can conflict" without naming an exception (hence ANY_CONFLICT). engineInfo is
    # "Databricks-Runtime/<runtime>", the runtime per scenario (`runtime`), 14.3 LTS when not given.
    "databricks": Engine("databricks", "Databricks-Runtime/14.3.x-scala2.12", (*EXCEPTION_NAMES, ANY_CONFLICT),
                         "Databricks documentation (conflict-rules §11); the runtime each scenario names",
                         DOC_SOURCE_KEYS),
}

# delta-rs operations that put readVersion into their commitInfo (app_metadata "readVersion"):
# crates/core/src/operations/{delete,update,merge/mod,optimize,filesystem_check,restore}.rs @ 2c996fa.
# Every other delta-rs operation (WRITE, STREAMING UPDATE, SET TBLPROPERTIES, ...) records none.
DELTA_RS_READ_VERSION_OPS = frozenset({"DELETE", "UPDATE", "MERGE", "OPTIMIZE", "FSCK", "RESTORE"})
DELTA_RS_CLIENT_VERSION = "delta-rs.py-1.6.3"

TABLE_ID = "00000000-0000-0000-0000-00000000c0de"  # metaData.id of every materialized scenario
BASE_TS = 1_700_000_000_000  # version 0's timestamp (ms); version v is BASE_TS + 1000 v
DEFAULT_SIZE = 1024  # add/remove `size` when a scenario leaves it out

_DELTA_TYPE = {"int": "integer", "bigint": "long", "smallint": "short", "tinyint": "byte"}


# --------------------------------------------------------------------------------------
# the format: keys and validation
# --------------------------------------------------------------------------------------

SCENARIO_KEYS = {  # key -> required
    "id": True, "title": True, "engine": True, "source": True, "isolation": True, "partition_columns": True,
    "schema": True, "table_properties": True, "table_protocol": True, "setup_files": True, "transaction": True,
    "winning_commits": True, "expected": True, "whatif": False, "not_expressible": False, "remarks": False,
    "known_difference": False, "runtime": False, "clustering_columns": False,
}
TRANSACTION_KEYS = {"operation": True, "read": True, "is_blind_append": True, "actions": True, "mode": False,
                    "commit": False, "sql": False, "condition": False, "tags": False}
COMMIT_KEYS = {"operation": False, "parameters": False}
READ_KEYS = ("predicates", "files", "whole_table", "app_ids")
WINNER_KEYS = {"operation": True, "is_blind_append": True, "actions": True, "predicate": False,
               "parameters": False, "sql": False, "tags": False}
EXPECTED_KEYS = {"outcome": True, "error_class": False, "message_contains": False, "winning_commit": False}
WHATIF_KEYS = {"operation": True, "predicate": False, "mode": False, "partitions": False, "isolation_level": False,
               "app_id": False, "note": False}
PATHS = ("explain", "whatif")  # the two ways a scenario is answered
ACTION_REQUIRED = {  # Delta's on-disk action name -> fields a scenario must give
    "add": ("path", "partitionValues", "dataChange"),
    "remove": ("path", "partitionValues", "dataChange"),
    "metaData": ("id", "format", "schemaString", "partitionColumns", "configuration"),
    "protocol": ("minReaderVersion", "minWriterVersion"),
    "txn": ("appId", "version"),
    "domainMetadata": ("domain", "configuration", "removed"),
}
_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_RUNTIME = re.compile(r"^\d+\.\d+\.x-(?:photon-)?scala2\.1[23]$")  # what follows "Databricks-Runtime/"
_MIN_REASON = 20  # a reason is a sentence, not a word


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


def _is_reason(v: Any) -> bool:
    return isinstance(v, str) and len(v.strip()) > _MIN_REASON


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


def _validate_per_path(v: Any, where: str) -> list[str]:
    if not (isinstance(v, dict) and v and set(v) <= set(PATHS)):
        return [f"{where}: an object with `explain` and/or `whatif`, each a sentence or more of text"]
    return [f"{where}.{k}: a sentence or more of text" for k, r in v.items() if not _is_reason(r)]


def _validate_whatif(w: Any, where: str) -> list[str]:
    out = _keys(w, WHATIF_KEYS, where)
    if out:
        return out
    if not (isinstance(w["operation"], str) and w["operation"].strip()):
        out.append(f"{where}.operation is an operation name (`delta-forensics whatif --operation`)")
    for k in ("predicate", "mode", "isolation_level", "app_id"):
        if k in w and not (isinstance(w[k], str) and w[k]):
            out.append(f"{where}.{k} is a non-empty string")
    if "note" in w and not _is_reason(w["note"]):
        out.append(f"{where}.note: a sentence or more of text")
    if "isolation_level" in w and w["isolation_level"] not in ISOLATION_LEVELS:
        out.append(f"{where}.isolation_level is one of {list(ISOLATION_LEVELS)}")
    if "partitions" in w and not (isinstance(w["partitions"], list) and all(_is_str_map(p) for p in w["partitions"])):
        out.append(f"{where}.partitions is a list of {{column: value}} objects")
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
    src, src_keys = s.get("source"), (ENGINES[engine].source_keys if engine in ENGINES else SOURCE_KEYS)
    if not (isinstance(src, dict) and set(src) == set(src_keys)
            and all(isinstance(src[k], str) and src[k] for k in src_keys)):
        out.append(f"{where}: source needs exactly {list(src_keys)}, each non-empty")
    if "runtime" in s and not (engine == "databricks" and isinstance(s["runtime"], str) and _RUNTIME.match(s["runtime"])):
        out.append(f"{where}: runtime is a Databricks scenario's runtime as engineInfo names it (e.g. 14.3.x-scala2.12)")
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
    cc = s.get("clustering_columns")
    if cc is not None and not (_is_str_list(cc) and cc and isinstance(schema, dict) and set(cc) <= set(schema)
                               and not set(cc) & set(pcols or [])):
        out.append(f"{where}: clustering_columns lists schema columns that are not partition columns")
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
        commit = txn.get("commit")
        if commit is not None:
            out += _keys(commit, COMMIT_KEYS, f"{where}.transaction.commit")
            if isinstance(commit, dict) and "parameters" in commit and not isinstance(commit["parameters"], dict):
                out.append(f"{where}.transaction.commit.parameters is an object")
        if not txn.get("operation") and not (isinstance(commit, dict) and commit.get("operation")):
            out.append(f"{where}.transaction: an engine test without an operation needs `commit.operation`, "
                       "the operation whose commit states the same reads and actions")
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
            if "parameters" in w and not isinstance(w["parameters"], dict):
                out.append(f"{ww}.parameters is an object")
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
            out.append(f"{where}.expected: a commit has no error_class, message or winning commit")
        wc = exp_.get("winning_commit")
        if wc is not None and not (isinstance(wc, int) and not isinstance(wc, bool) and 1 <= wc <= len(winners)):
            out.append(f"{where}.expected.winning_commit is the 1-based position of a winning commit")
        if exp_.get("outcome") != "commit" and len(winners) > 1 and wc is None:
            out.append(f"{where}.expected: with several winning commits an abort names `winning_commit`")

    if "whatif" in s:
        out += _validate_whatif(s["whatif"], f"{where}.whatif")
    for k in ("not_expressible", "known_difference"):
        if k in s:
            out += _validate_per_path(s[k], f"{where}.{k}")
    nx, kd = s.get("not_expressible") or {}, s.get("known_difference") or {}
    if isinstance(nx, dict) and isinstance(kd, dict):
        both = sorted(set(nx) & set(kd))
        if both:
            out.append(f"{where}: {both} cannot be both not expressible and a known difference")
        if "whatif" not in s and "whatif" not in nx:
            out.append(f"{where}: needs `whatif` (the question for Table.whatif) or `not_expressible.whatif`")
        if "whatif" in s and "whatif" in nx:
            out.append(f"{where}: `whatif` is given although `not_expressible.whatif` says it cannot be asked")
    if "remarks" in s and not _is_reason(s["remarks"]):
        out.append(f"{where}.remarks: a sentence or more of text")
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
    """(name, parsed JSON) of each scenario file: the shipped set, or `path` (a file or a folder)."""
    if path is None:
        files: list[Any] = shipped_files()
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
# what the scenario asks of the two paths
# --------------------------------------------------------------------------------------


def transaction_version(s: dict[str, Any]) -> int:
    """The version the current transaction's commit takes in the materialized log."""
    return len(s["winning_commits"]) + 1


def expected_winner(s: dict[str, Any]) -> int | None:
    """The version of the winning commit an expected abort names (None for a commit)."""
    exp_ = s["expected"]
    if exp_["outcome"] == "commit":
        return None
    return int(exp_.get("winning_commit") or 1)


def whatif_request(s: dict[str, Any]) -> dict[str, Any] | None:
    """The `Table.whatif` keyword arguments for the scenario's transaction (None: it cannot be asked).

    The transaction read version 0; the window it is checked against ends at the last winning
    commit (`until`), so the transaction's own commit, which the log also holds, is not a winner.
    """
    w = s.get("whatif")
    if w is None:
        return None
    req: dict[str, Any] = {"read_version": 0, "until": len(s["winning_commits"]), "operation": w["operation"]}
    for k in ("predicate", "mode", "isolation_level", "app_id"):
        if w.get(k):
            req[k] = w[k]
    if w.get("partitions"):
        req["partitions"] = [dict(p) for p in w["partitions"]]
    return req


def outcome_agrees(expected: dict[str, Any], exception: str | None, error_class: str | None = None,
                   message: str | None = None) -> bool:
    """Does a checker result match the scenario's `expected`?

    Outcomes compare by Delta's simple class name (delta-rs variants map onto them);
    `CommitConflict` accepts any conflict. `error_class` matches exactly, or as the class of
    a sub-class (`DELTA_X` matches `DELTA_X.WITH_PARTITION_HINT`); `message_contains` is a
    substring of the message. (Which winner it names is compared by the runner.)
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
# materializing: each engine's on-disk form
# --------------------------------------------------------------------------------------


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


def setup_metadata(s: dict[str, Any]) -> dict[str, Any]:
    """The table's metaData at the read version (version 0), on-disk field names."""
    return {"id": TABLE_ID, "format": {"provider": "parquet", "options": {}}, "schemaString": schema_string(s["schema"]),
            "partitionColumns": list(s["partition_columns"]),
            "configuration": {str(k): str(v) for k, v in s["table_properties"].items()}, "createdTime": BASE_TS}


def _levels(s: dict[str, Any]) -> tuple[str, str]:
    """(table level, transaction level); a scenario without isolation levels (Kernel) is Serializable."""
    iso = s.get("isolation") or {}
    return iso.get("table", "Serializable"), iso.get("transaction", "Serializable")


def _kinds(actions: list[dict[str, Any]]) -> list[str]:
    return [next(iter(a)) for a in actions]


def _read_anything(read: dict[str, Any]) -> bool:
    return bool(read["predicates"] or read["files"] or read["whole_table"])


def derived_blind_append(txn: dict[str, Any]) -> bool:
    """`isBlindAppend` as delta-spark's commitImpl computes it when the scenario leaves it open:
    every file action is an add, and no read predicate, file or whole-table read was recorded."""
    kinds = _kinds(txn["actions"])
    return all(k != "remove" for k in kinds) and not _read_anything(txn["read"])


def _winner_level(s: dict[str, Any], actions: list[dict[str, Any]], operation: str | None) -> str:
    """A winner's recorded isolationLevel, as delta-spark computes it (conflict-rules §2.1):
    SnapshotIsolation when it only rearranges files (every action a file action with dataChange
    false) on a Serializable table, or on a WriteSerializable one under an operation that changes
    no data (OPTIMIZE); else the table's level. Winners' levels are shown, never checked."""
    table_level, _ = _levels(s)
    files = [a for a in actions if next(iter(a)) in ("add", "remove")]
    if actions and len(files) == len(actions) and not any(next(iter(a.values())).get("dataChange") for a in files) \
            and (table_level == "Serializable" or not operation_changes_data(operation)):
        return "SnapshotIsolation"
    return table_level


def _ts(version: int) -> int:
    return BASE_TS + version * 1000


def _txn_id(s: dict[str, Any], version: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{s['id']}#{version}"))


class _Writer:
    """One engine's on-disk form; `lines_*` give the action objects of a version, in file order."""

    engine: str

    def __init__(self, s: dict[str, Any]):
        self.s = s
        self.info = engine_info(s)

    # file actions, metadata, protocol, txn, domain metadata: the delta-spark forms (Jackson
    # declaration order, forensics.synth.actions); delta-rs overrides the file actions it writes differently.
    def add(self, d: dict[str, Any], version: int) -> dict[str, Any]:
        dv = d.get("deletionVector")
        return AddFile(path=str(d["path"]), partition_values=dict(d.get("partitionValues") or {}),
                       size=int(d.get("size", DEFAULT_SIZE)), modification_time=int(d.get("modificationTime", _ts(version))),
                       data_change=bool(d["dataChange"]), stats=d.get("stats"), tags=d.get("tags"),
                       deletion_vector=_dv(dv)).to_obj()

    def remove(self, d: dict[str, Any], version: int) -> dict[str, Any]:
        return RemoveFile(path=str(d["path"]), deletion_timestamp=int(d.get("deletionTimestamp", _ts(version))),
                          data_change=bool(d["dataChange"]), extended_file_metadata=d.get("extendedFileMetadata", True),
                          partition_values=dict(d.get("partitionValues") or {}), size=int(d.get("size", DEFAULT_SIZE)),
                          tags=d.get("tags"), deletion_vector=_dv(d.get("deletionVector")), stats=d.get("stats")).to_obj()

    def metadata(self, d: dict[str, Any]) -> dict[str, Any]:
        return MetaData(id=str(d["id"]), schema_string=str(d["schemaString"]), partition_columns=list(d["partitionColumns"]),
                        configuration=dict(d["configuration"]), created_time=d.get("createdTime"), name=d.get("name"),
                        description=d.get("description")).to_obj()

    def protocol(self, d: dict[str, Any]) -> dict[str, Any]:
        return ProtocolAction(int(d["minReaderVersion"]), int(d["minWriterVersion"]), d.get("readerFeatures"),
                              d.get("writerFeatures")).to_obj()

    def txn(self, d: dict[str, Any], version: int) -> dict[str, Any]:
        return SetTransaction(str(d["appId"]), int(d["version"]), d.get("lastUpdated", _ts(version))).to_obj()

    def domain(self, d: dict[str, Any]) -> dict[str, Any]:
        return DomainMetadata(str(d["domain"]), str(d["configuration"]), bool(d["removed"])).to_obj()

    def action(self, a: dict[str, Any], version: int) -> dict[str, Any]:
        kind, body = next(iter(a.items()))
        if kind == "add":
            return self.add(body, version)
        if kind == "remove":
            return self.remove(body, version)
        if kind == "metaData":
            return self.metadata(body)
        if kind == "protocol":
            return self.protocol(body)
        if kind == "txn":
            return self.txn(body, version)
        return self.domain(body)

    def actions(self, actions: list[dict[str, Any]], version: int) -> list[dict[str, Any]]:
        """Non-file actions first (metaData, protocol, txn, domainMetadata), then file actions as given."""
        order = {"metaData": 0, "protocol": 1, "txn": 2, "domainMetadata": 3}
        objs = [self.action(a, version) for a in actions]
        return sorted(objs, key=lambda o: order.get(next(iter(o)), 9))

    # commits
    def setup(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    def winner(self, w: dict[str, Any], version: int) -> list[dict[str, Any]]:
        raise NotImplementedError

    def transaction(self) -> list[dict[str, Any]]:
        raise NotImplementedError


def _dv(dv: dict[str, Any] | None) -> DeletionVector | None:
    if not dv:
        return None
    return DeletionVector(storage_type=str(dv["storageType"]), path_or_inline_dv=str(dv["pathOrInlineDv"]),
                          size_in_bytes=int(dv.get("sizeInBytes", 0)), cardinality=int(dv.get("cardinality", 0)),
                          offset=dv.get("offset"))


def _commit(txn: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(operation, decoded operationParameters) the current transaction's commitInfo records."""
    c = txn.get("commit") or {}
    op = c.get("operation") or txn["operation"]
    params = dict(c.get("parameters") or {})
    if txn.get("mode") and "mode" not in params and op == "WRITE":
        params["mode"] = txn["mode"]
    return op, params


def _winner_commit(w: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    params = dict(w.get("parameters") or {})
    op = w.get("operation")
    if w.get("predicate") and "predicate" not in params:
        params["predicate"] = [w["predicate"]] if (op or "").upper() in ("DELETE", "UPDATE", "OPTIMIZE") \
            else w["predicate"]
    if (op or "WRITE") == "WRITE" and "mode" not in params:
        params["mode"] = "Append"
    return op, params


class _SparkWriter(_Writer):
    """delta-spark: `CommitInfo` in Jackson order; list/map parameters as JSON text (conflict-rules §8.1)."""

    engine = "delta-spark"
    managed = "false"  # CREATE TABLE's isManaged: the engine tests write path-based tables

    @staticmethod
    def params(params: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in params.items():
            if isinstance(v, (list, dict)):
                out[k] = json_list(v) if isinstance(v, list) else dumps(v)  # JSON text inside a JSON string
            else:
                out[k] = v  # strings as strings, booleans raw
        return out

    def commit_info(self, version: int, op: str, params: dict[str, Any], read_version: int | None, level: str | None,
                    blind: bool | None, tags: dict[str, str] | None, actions: list[dict[str, Any]]) -> dict[str, Any]:
        return CommitInfo(timestamp=_ts(version), operation=op, operation_parameters=self.params(params),
                          read_version=read_version, isolation_level=level, is_blind_append=blind,
                          engine_info=self.info, txn_id=_txn_id(self.s, version), tags=tags or None).to_obj()

    def setup(self) -> list[dict[str, Any]]:
        md = setup_metadata(self.s)
        op = "CREATE TABLE AS SELECT" if self.s["setup_files"] else "CREATE TABLE"
        clustering = list(self.s.get("clustering_columns") or [])
        params = {"partitionBy": list(md["partitionColumns"]), "clusterBy": clustering, "description": None,
                  "isManaged": self.managed, "properties": md["configuration"]}
        files = [{"add": f} for f in self.s["setup_files"]]
        ci = self.commit_info(0, op, {k: v for k, v in params.items() if v is not None}, None, self.setup_level(),
                              True, None, files)
        domains = [self.domain(clustering_domain(clustering))] if clustering else []
        return [ci, self.metadata(md), self.protocol(self.s["table_protocol"]), *domains,
                *(self.add(f, 0) for f in self.s["setup_files"])]

    def setup_level(self) -> str:
        return "Serializable"  # the engine tests' tables (OSS accepts no other table level)

    def winner(self, w: dict[str, Any], version: int) -> list[dict[str, Any]]:
        op, params = _winner_commit(w)
        ci = self.commit_info(version, op or "WRITE", params, version - 1, _winner_level(self.s, w["actions"], op or "WRITE"),
                              w.get("is_blind_append"), w.get("tags"), w["actions"])
        return [ci, *self.actions(w["actions"], version)]

    def transaction(self) -> list[dict[str, Any]]:
        txn, v = self.s["transaction"], transaction_version(self.s)
        op, params = _commit(txn)
        blind = txn["is_blind_append"] if txn.get("is_blind_append") is not None else derived_blind_append(txn)
        ci = self.commit_info(v, op, params, 0, _levels(self.s)[1], blind, txn.get("tags"), txn["actions"])
        return [ci, *self.actions(txn["actions"], v)]


def clustering_domain(columns: list[str]) -> dict[str, Any]:
    """The `delta.clustering` domain a liquid-clustered table's CREATE writes (its clustering columns)."""
    return {"domain": "delta.clustering", "removed": False,
            "configuration": dumps({"clusteringColumns": [[c] for c in columns], "domainName": "delta.clustering"})}


class _DatabricksWriter(_SparkWriter):
    """Databricks Runtime: delta-spark's commitInfo plus the fields a runtime adds (userId, userName,
    notebook, clusterId, operationMetrics, the `restoresDeletedRows` tag), engineInfo naming the
    runtime (`Databricks-Runtime/14.3.x-scala2.12`), WRITE and CREATE parameters with `statsOnLoad`,
    managed tables (forensics.synth.sparktable.Databricks holds the observed field values)."""

    engine = "databricks"
    managed = "true"
    who = Databricks()

    def setup_level(self) -> str:
        return _levels(self.s)[0]

    def commit_info(self, version: int, op: str, params: dict[str, Any], read_version: int | None, level: str | None,
                    blind: bool | None, tags: dict[str, str] | None, actions: list[dict[str, Any]]) -> dict[str, Any]:
        if op in ("WRITE", "CREATE TABLE AS SELECT", "CREATE TABLE") and "statsOnLoad" not in params:
            params = {**params, "statsOnLoad": False}
        db = self.who
        return CommitInfo(timestamp=_ts(version), operation=op, operation_parameters=self.params(params),
                          read_version=read_version, isolation_level=level, is_blind_append=blind,
                          operation_metrics=databricks_metrics(op, actions), engine_info=self.info,
                          txn_id=_txn_id(self.s, version), user_id=db.user_id, user_name=db.user_name,
                          notebook={"notebookId": db.notebook_id} if db.notebook_id else None,
                          cluster_id=db.cluster_id, tags={**db.tags, **(tags or {})}).to_obj()


def databricks_metrics(op: str, actions: list[dict[str, Any]]) -> dict[str, str]:
    """operationMetrics as a runtime records them for the commit's file actions (strings, as on disk)."""
    adds = [a["add"] for a in actions if "add" in a]
    removes = [a["remove"] for a in actions if "remove" in a]

    def rows(fs: list[dict[str, Any]]) -> int:
        return sum(int(json.loads(f["stats"]).get("numRecords", 0)) for f in fs if f.get("stats"))

    def size(fs: list[dict[str, Any]]) -> int:
        return sum(int(f.get("size", DEFAULT_SIZE)) for f in fs)

    kind = operation_class(op)
    if kind == "INSERT" or op.startswith("CREATE"):
        return {"numFiles": str(len(adds)), "numOutputRows": str(rows(adds)), "numOutputBytes": str(size(adds))}
    if kind in ("UPDATE/DELETE/MERGE", "OPTIMIZE"):
        dvs = sum(1 for f in adds if f.get("deletionVector"))
        return {"numAddedFiles": str(len(adds) - dvs), "numRemovedFiles": str(len(removes) - dvs),
                "numDeletionVectorsAdded": str(dvs), "numDeletionVectorsRemoved": str(sum(1 for f in removes if f.get("deletionVector"))),
                "numAddedBytes": str(size(adds)), "numRemovedBytes": str(size(removes)), "executionTimeMs": "1830"}
    return {}


class _DeltaRsWriter(_Writer):
    """delta-rs: commitInfo fields in `CommitInfo` declaration order (timestamp, operation,
    operationParameters, readVersion, engineInfo, then the flattened clientVersion and
    operationMetrics); every parameter value a string; readVersion only from the operations that
    record it; no isolationLevel, no isBlindAppend, no txnId. Adds carry their null fields; txn
    actions come last (kernel/models/actions.rs, kernel/transaction/mod.rs @ 2c996fa)."""

    engine = "delta-rs"

    @staticmethod
    def params(params: dict[str, Any]) -> dict[str, str]:
        # protocol/mod.rs operation_parameter_value: strings as they are, anything else as JSON text
        return {k: (v if isinstance(v, str) else dumps(v)) for k, v in params.items() if v is not None}

    def commit_info(self, version: int, op: str, params: dict[str, Any], read_version: int | None,
                    actions: list[dict[str, Any]]) -> dict[str, Any]:
        d: dict[str, Any] = {"timestamp": _ts(version), "operation": op, "operationParameters": self.params(params)}
        if read_version is not None and op in DELTA_RS_READ_VERSION_OPS:
            d["readVersion"] = read_version
        d["engineInfo"] = self.info
        d["clientVersion"] = DELTA_RS_CLIENT_VERSION
        kinds = _kinds(actions)
        d["operationMetrics"] = {"num_added_files": kinds.count("add"), "num_removed_files": kinds.count("remove")}
        return {"commitInfo": d}

    def add(self, d: dict[str, Any], version: int) -> dict[str, Any]:
        out: dict[str, Any] = {"path": str(d["path"]), "partitionValues": dict(d.get("partitionValues") or {}),
                               "size": int(d.get("size", DEFAULT_SIZE)),
                               "modificationTime": int(d.get("modificationTime", _ts(version))),
                               "dataChange": bool(d["dataChange"]), "stats": d.get("stats"), "tags": d.get("tags")}
        if d.get("deletionVector"):
            out["deletionVector"] = _dv(d["deletionVector"]).to_obj()  # type: ignore[union-attr]
        out.update({"baseRowId": None, "defaultRowCommitVersion": None, "clusteringProvider": None})
        return {"add": out}

    def remove(self, d: dict[str, Any], version: int) -> dict[str, Any]:
        out: dict[str, Any] = {"path": str(d["path"]), "dataChange": bool(d["dataChange"]),
                               "deletionTimestamp": int(d.get("deletionTimestamp", _ts(version))),
                               "extendedFileMetadata": d.get("extendedFileMetadata", True),
                               "partitionValues": dict(d.get("partitionValues") or {}),
                               "size": int(d.get("size", DEFAULT_SIZE))}
        if d.get("deletionVector"):
            out["deletionVector"] = _dv(d["deletionVector"]).to_obj()  # type: ignore[union-attr]
        return {"remove": out}

    def metadata(self, d: dict[str, Any]) -> dict[str, Any]:
        return {"metaData": {"id": d["id"], "name": d.get("name"), "description": d.get("description"),
                             "format": d["format"], "schemaString": d["schemaString"],
                             "partitionColumns": list(d["partitionColumns"]), "createdTime": d.get("createdTime"),
                             "configuration": dict(d["configuration"])}}

    def actions(self, actions: list[dict[str, Any]], version: int) -> list[dict[str, Any]]:
        """Actions in the order given, application transactions appended last (CommitData::new)."""
        objs = [self.action(a, version) for a in actions]
        return [o for o in objs if "txn" not in o] + [o for o in objs if "txn" in o]

    @staticmethod
    def winner_operation(w: dict[str, Any]) -> str:
        """A delta-rs unit test's winner has no operation: the delta-rs operation that writes such actions."""
        if w.get("operation"):
            return str(w["operation"])
        kinds = _kinds(w["actions"])
        if "metaData" in kinds:
            return "SET TBLPROPERTIES"
        removes = [next(iter(a.values())) for a in w["actions"] if "remove" in a]
        if removes and not any(r.get("dataChange") for r in removes):
            return "OPTIMIZE"
        if removes:
            return "DELETE"
        return "WRITE"

    def setup(self) -> list[dict[str, Any]]:
        md = setup_metadata(self.s)
        ci = self.commit_info(0, "WRITE", {"mode": "ErrorIfExists", "partitionBy": list(md["partitionColumns"])}, None,
                              [{"add": f} for f in self.s["setup_files"]])
        return [ci, self.protocol(self.s["table_protocol"]), self.metadata(md),
                *(self.add(f, 0) for f in self.s["setup_files"])]

    def winner(self, w: dict[str, Any], version: int) -> list[dict[str, Any]]:
        op = self.winner_operation(w)
        _, params = _winner_commit({**w, "operation": op})
        if op == "SET TBLPROPERTIES" and "properties" not in params:
            md = next(a["metaData"] for a in w["actions"] if "metaData" in a)
            params["properties"] = md["configuration"]
        if op == "OPTIMIZE" and "targetSize" not in params:
            params = {"targetSize": "104857600", "predicate": [], **params}
        return [self.commit_info(version, op, params, version - 1, w["actions"]), *self.actions(w["actions"], version)]

    def transaction(self) -> list[dict[str, Any]]:
        txn, v = self.s["transaction"], transaction_version(self.s)
        op, params = _commit(txn)
        return [self.commit_info(v, op, params, 0, txn["actions"]), *self.actions(txn["actions"], v)]


class _KernelWriter(_Writer):
    """Delta Kernel (Java): commitInfo in `CommitInfo.FULL_SCHEMA` order (timestamp, engineInfo,
    operation, operationParameters, isBlindAppend, txnId, operationMetrics); no readVersion, no
    isolationLevel; isBlindAppend always false (TransactionImpl.generateCommitAction, isBlindAppend)."""

    engine = "delta-kernel-java"

    def commit_info(self, version: int, op: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"commitInfo": {"timestamp": _ts(version), "engineInfo": self.info, "operation": op,
                               "operationParameters": {k: str(v) for k, v in params.items()},
                               "isBlindAppend": False, "txnId": _txn_id(self.s, version), "operationMetrics": {}}}

    def remove(self, d: dict[str, Any], version: int) -> dict[str, Any]:
        # RemoveFile.FULL_SCHEMA order: path, deletionTimestamp, dataChange, extendedFileMetadata, partitionValues, size, ...
        out: dict[str, Any] = {"path": str(d["path"]), "deletionTimestamp": int(d.get("deletionTimestamp", _ts(version))),
                               "dataChange": bool(d["dataChange"])}
        if "extendedFileMetadata" in d:
            out["extendedFileMetadata"] = d["extendedFileMetadata"]
        out["partitionValues"] = dict(d.get("partitionValues") or {})
        out["size"] = int(d.get("size", DEFAULT_SIZE))
        if d.get("deletionVector"):
            out["deletionVector"] = _dv(d["deletionVector"]).to_obj()  # type: ignore[union-attr]
        return {"remove": out}

    def setup(self) -> list[dict[str, Any]]:
        md = setup_metadata(self.s)
        ci = self.commit_info(0, "CREATE TABLE", {"partitionBy": json.dumps(list(md["partitionColumns"]))})
        return [ci, self.protocol(self.s["table_protocol"]), self.metadata(md),
                *(self.add(f, 0) for f in self.s["setup_files"])]

    def winner(self, w: dict[str, Any], version: int) -> list[dict[str, Any]]:
        return [self.commit_info(version, w.get("operation") or "WRITE", {}), *self.actions(w["actions"], version)]

    def transaction(self) -> list[dict[str, Any]]:
        txn, v = self.s["transaction"], transaction_version(self.s)
        op, params = _commit(txn)
        return [self.commit_info(v, op, params), *self.actions(txn["actions"], v)]


_WRITERS: dict[str, Callable[[dict[str, Any]], _Writer]] = {
    "delta-spark": _SparkWriter, "delta-rs": _DeltaRsWriter, "delta-kernel-java": _KernelWriter,
    "databricks": _DatabricksWriter,
}


def engine_info(s: dict[str, Any]) -> str:
    """commitInfo.engineInfo of the scenario's writer: its engine's, or the Databricks runtime it names."""
    if s["engine"] == "databricks" and s.get("runtime"):
        return f"Databricks-Runtime/{s['runtime']}"
    return ENGINES[s["engine"]].engine_info


def scenario_commits(s: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """Every version of the scenario's log as action objects: setup, winners, the current transaction."""
    w = _WRITERS[s["engine"]](s)
    out = [w.setup()]
    out += [w.winner(c, v) for v, c in enumerate(s["winning_commits"], start=1)]
    out.append(w.transaction())
    return out


def materialize_scenario(s: dict[str, Any], directory: str | Path) -> Path:
    """Write the scenario as a real `_delta_log` in its engine's on-disk form; return the table root.

    Version 0 = the setup (commitInfo, metaData, protocol, setup files), versions 1..n = the
    winning commits, version n+1 = the current transaction as the commit it would have written
    (readVersion 0 where the engine records one). Data files are not written. Written through
    `forensics.synth.SparkLogWriter` (one JSON object per line, put-if-absent version files).
    """
    root = Path(directory) / s["id"]
    writer = SparkLogWriter(root, engine_info=engine_info(s))
    for version, objs in enumerate(scenario_commits(s)):
        writer.commit(objs, version=version, sort=False)
    return root

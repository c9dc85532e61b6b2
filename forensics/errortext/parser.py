"""Read one Delta concurrency error text into an ErrorReport (conflict-rules §7).

Order of evidence, strongest first: the 4.1+ sub-classed error class (§7.3), the base sentences
of §7.1/§7.2 (they survive truncation and wrapping best), Kernel sentences (§7.6), delta-rs
sentences (§7.5), the bare error class, and last an exception name with no sentence (a message
cut right after the name). The exception reported is the one the text *names* where it names
one (e.g. Kernel throws delete-delete as ConcurrentWriteException); the check that fired goes
in `rule`. Everything read from the text is untrusted: nothing is evaluated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import forensics.errortext.patterns as P
from forensics.errortext.exceptions import error_text, is_exception_input
from forensics.errortext.lenient_json import parse_lenient
from forensics.errortext.negatives import why_not as negative_reason
from forensics.errortext.partition import ROOT, parse_partition
from forensics.errortext.report import ErrorReport, WinnerHint
from forensics.errortext.textprep import excerpt, find_wrappers, first_lines, is_frame, normalize
from forensics.log.params import decode_parameters

_DELTA_PACKAGES = ("io.delta", "org.apache.spark.sql.delta", "com.databricks", "delta.exceptions", "delta")
# Names other libraries also use: accepted alone only with a Delta package in front.
_GENERIC_NAMES = {"ConcurrentWriteException", "ConcurrentTransactionException"}
_RS_HELP = re.compile(r"[ \t]*\n?[ \t]*Help:[^\n]*")


@dataclass
class _Hit:
    """The verdict being assembled."""

    exception: str | None = None
    rule: str | None = None
    error_class: str | None = None
    family: str | None = None
    start: int = 0
    end: int = 0
    partition_text: str | None = None
    file: str | None = None
    table: str | None = None
    winner_version: int | None = None
    winner_operation: str | None = None
    truncated: bool = False
    generic_sentence: bool = False  # Kernel's shared "encountered a conflict" text: the class decides
    details: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def parse_error_text(text: object) -> ErrorReport:
    """Classify a pasted error text, or what a job caught (an exception, its causes, a
    traceback: forensics.errortext.exceptions); never raises (input bounded to 2 MiB)."""
    try:
        return _parse(normalize(error_text(text)))
    except Exception as e:  # noqa: BLE001 - untrusted input must not crash the CLI
        return _unrecognized("", [], f"internal error while reading the text ({type(e).__name__})")


def read_error(error: object) -> ErrorReport:
    """An ErrorReport from whatever `explain_error` was given: an ErrorReport as is; text, bytes,
    an exception or a traceback read (parse_error_text). TypeError for anything else."""
    if isinstance(error, ErrorReport):
        return error
    if isinstance(error, (str, bytes, bytearray)) or is_exception_input(error):
        return parse_error_text(error)
    raise TypeError(f"an error text, an exception, a traceback or an ErrorReport, not {type(error).__name__}")


# ------------------------------------------------------------------------------ helpers


def _unrecognized(t: str, wrappers: list[str], reason: str) -> ErrorReport:
    return ErrorReport(
        recognized=False, exception=None, error_class=None, family="unknown", rule=None, partition=None,
        partition_text=None, file=None, table=None, winner=None, empty_directory=False,
        wrapper=wrappers, excerpt=first_lines(t) if t else "", why_not=reason,
    )


def _is_delta_package(pkg: str | None) -> bool:
    return bool(pkg) and any(pkg == p or pkg.startswith(p + ".") for p in _DELTA_PACKAGES)


@dataclass(frozen=True)
class _Name:
    """An exception simple name printed in the text, with the package in front of it."""

    name: str
    pkg: str | None
    start: int  # where the qualified name starts
    end: int


_PKG_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.")
MAX_NAMES = 1000


def _package_before(t: str, pos: int) -> tuple[str | None, int]:
    """Walk back from `pos` over `pkg.` (bounded to 200 chars); linear, no regex backtracking."""
    if pos == 0 or t[pos - 1] != ".":
        return None, pos
    i = pos - 1
    lo = max(0, pos - 200)
    while i > lo and t[i - 1] in _PKG_CHARS:
        i -= 1
    cand = t[i : pos - 1].lstrip(".")
    if cand and P.PACKAGE.fullmatch(cand):
        return cand, pos - 1 - len(cand)
    return None, pos


def _names(t: str) -> list[_Name]:
    out: list[_Name] = []
    for m in P.EXCEPTION_NAME.finditer(t):
        pkg, start = _package_before(t, m.start())
        if pkg and not _is_delta_package(pkg):
            continue  # e.g. some.other.lib.ConcurrentWriteException
        out.append(_Name(m.group("name"), pkg, start, m.end()))
        if len(out) >= MAX_NAMES:
            break
    return out


def _named_near(names: list[_Name], pos: int) -> _Name | None:
    """The exception name printed for the sentence at `pos`: the last one before it, else the first after."""
    before = [n for n in names if n.start <= pos]
    if before:
        return before[-1]
    return names[0] if names else None


def _first(t: str, pats: list[tuple[re.Pattern[str], str]]) -> tuple[re.Match[str], str] | None:
    best: tuple[re.Match[str], str] | None = None
    for pat, exc in pats:
        m = P.search(pat, t)
        if m and (best is None or m.start() < best[0].start()):
            best = (m, exc)
    return best


def _ends_cut(t: str) -> bool:
    """The last line is message text (not a frame) that stops mid-word or mid-sentence."""
    tail = t.rstrip()
    if not tail:
        return False
    last = tail[tail.rfind("\n") + 1 :]
    return not is_frame(last) and (tail[-1].isalnum() or tail[-1] in ",:;-(")


# ------------------------------------------------------------------------------ detectors


def _spark_sentence(t: str, hit: _Hit) -> bool:
    """delta-spark v1.x-v4.0 base sentences (conflict-rules §7.1, §7.2); also Standalone and Databricks."""
    found = _first(t, [
        (P.APPEND, "ConcurrentAppendException"),
        (P.DELETE_READ, "ConcurrentDeleteReadException"),
        (P.DELETE_DELETE, "ConcurrentDeleteDeleteException"),
        (P.METADATA, "MetadataChangedException"),
        (P.PROTOCOL, "ProtocolChangedException"),
        (P.TXN, "ConcurrentTransactionException"),
        (P.DOMAIN, "ConcurrentTransactionException"),
        (P.WRITE, "ConcurrentWriteException"),
    ])
    if not found:
        return False
    m, exc = found
    hit.exception, hit.start, hit.end = exc, m.start(), m.end()
    hit.rule = P.EXCEPTION_RULE[exc]
    if m.re is P.APPEND:
        if m.group("root"):
            hit.partition_text = ROOT
        elif m.group("part"):
            hit.partition_text = m.group("part")
        else:
            hit.partition_text = m.group("partcut").rstrip()
            hit.truncated = True
        if "by a concurrent update" not in t[m.end() : m.end() + 40]:
            hit.truncated = True
        if P.RETRY_UPGRADE.search(t, m.end()):
            hit.details["retry_message"] = "upgrade-writers"
            hit.notes.append("retry text asks to upgrade writers: the winner only added files and wrote no "
                             "isBlindAppend field, and this transaction ran at WriteSerializable (conflict-rules §7.1)")
    elif m.re in (P.DELETE_READ, P.DELETE_DELETE):
        fm = P.EXAMPLE_FILE.search(t, m.end(), m.end() + 8192)
        if fm:
            raw = fm.group("file") if fm.group("file") is not None else fm.group("cut")
            if fm.group("file") is None:
                hit.truncated = True
            hit.end = fm.end()
            _split_file(raw.strip(), hit)
        else:
            hit.truncated = True
    elif m.re is P.METADATA:
        if m.group("table"):
            hit.table = m.group("table").strip()
            hit.family = "delta-spark-4.1+"
            hit.notes.append("MetadataChanged text names the table: delta-spark v4.4+ template (conflict-rules §7.3)")
    elif m.re is P.DOMAIN:
        hit.rule = "domain"
        hit.details["domain"] = m.group("domain")
    return True


def _split_file(raw: str, hit: _Hit) -> None:
    """DeleteRead prints `<path> in <partition>` (conflict-rules §7.1); DeleteDelete just the path."""
    m = re.match(r"(?P<path>.+?) in (?P<p>partition \[.*\]?|the root of the table)$", raw)
    if m and hit.exception == "ConcurrentDeleteReadException":
        hit.file = m.group("path")
        hit.partition_text = m.group("p").strip()
        if hit.partition_text.startswith("partition "):
            hit.partition_text = hit.partition_text[len("partition ") :]
    else:
        hit.file = raw or None


def _v41(t: str, hit: _Hit) -> bool:
    """delta-spark v4.1+ sub-classed file-conflict texts (conflict-rules §7.3); no Conflicting commit JSON."""
    m = P.SUBCLASS.search(t)
    if not m:
        return False
    hit.error_class = f"{m.group('cls')}.{m.group('sub')}"
    hit.exception = P.ERROR_CLASS_EXCEPTION[m.group("cls")]
    hit.rule = P.EXCEPTION_RULE[hit.exception]  # type: ignore[index]
    hit.family = "delta-spark-4.1+"
    hit.start, hit.end = m.start(), m.end()
    window = m.end() + 8192  # the main sentence follows the class tag directly
    mm = P.search(P.V41_MAIN, t, m.end(), window)
    if mm:
        op = mm.group("op").strip()
        hit.winner_operation = None if op == P.V41_TRANSACTION_OP else op
        if op == P.V41_TRANSACTION_OP:
            hit.notes.append("winner operation printed as TRANSACTION: the winner wrote no commitInfo.operation")
        hit.table = mm.group("table").strip()
        hit.winner_version = int(mm.group("v"))
        hit.end = mm.end()
    else:
        hit.truncated = True
    if m.group("sub") == "WITH_PARTITION_HINT":
        pm = P.V41_PART.search(t, hit.end, hit.end + 8192)
        if pm:
            hit.partition_text = pm.group("part") or pm.group("cut").rstrip()
            hit.truncated = hit.truncated or pm.group("part") is None
            hit.end = max(hit.end, pm.end())
        else:
            hit.truncated = True
    if hit.exception == "ConcurrentDeleteDeleteException":
        hit.notes.append("4.1+ DELETE_DELETE sub-messages are copied from DELETE_READ ('...was read by this "
                         "operation'); the main sentence decides the rule (conflict-rules §7.3)")
    return True


def _kernel(t: str, hit: _Hit) -> bool:
    """Delta Kernel (Java) texts (conflict-rules §7.6, §10)."""
    m = P.search(P.KERNEL_DELETE_DELETE, t)
    if m:
        hit.exception, hit.rule = "ConcurrentWriteException", "delete-delete"
        hit.file = m.group("file").strip()
        hit.details["attempt_version"] = int(m.group("v"))
        hit.start, hit.end = m.start(), m.end()
        hit.family = "kernel"
        return True
    m = P.KERNEL_TXN.search(t)
    if m:
        hit.exception, hit.rule, hit.family = "ConcurrentTransactionException", "txn", "kernel"
        if m.group("app"):
            hit.details.update(app_id=m.group("app").strip(), attempted_txn_version=int(m.group("av")),
                               latest_txn_version=int(m.group("lv")))
        hit.start, hit.end = m.start(), m.end()
        return True
    m = P.KERNEL_CONFLICT.search(t)
    if m:
        hit.exception, hit.rule, hit.family = "ConcurrentWriteException", "write", "kernel"
        hit.start, hit.end = m.start(), m.end()
        hit.generic_sentence = True
        return True
    return False


def _delta_rs(t: str, hit: _Hit) -> bool:
    """delta-rs CommitConflictError texts, usually after `Failed to commit transaction: ` (conflict-rules §7.5)."""
    found = _first(t, list(P.RS_SENTENCES))
    if found:
        m, exc = found
        hit.exception, hit.rule, hit.family = exc, P.EXCEPTION_RULE[exc], "delta-rs"
        wrap = P.RS_FAILED.search(t, max(0, m.start() - 200), m.start() + 1)
        hit.start = wrap.start() if wrap else m.start()
        hit.end = m.end()
        after = m.end() + (1 if t[m.end() : m.end() + 1] == "." else 0)
        help_m = _RS_HELP.match(t, after)
        if help_m:
            hit.end = help_m.end()
        if exc == "ProtocolChangedException" and m.group("detail"):
            nm = P.RS_PROTOCOL_NUMBERS.search(m.group("detail"))
            if nm:
                hit.details.update({
                    "winner_min_reader_version": int(nm.group("wr")), "winner_min_writer_version": int(nm.group("ww")),
                    "current_min_reader_version": int(nm.group("cr")), "current_min_writer_version": int(nm.group("cw")),
                })
        hit.notes.append("delta-rs texts name no winner version, operation or file (conflict-rules §7.5)")
        if P.RS_VERSION_EXISTS.search(t):
            hit.notes.append("a log-store VersionAlreadyExists came first; the verdict is the conflict checker's "
                             "after the writer re-read the winner (conflict-rules §9)")
        if exc == "ConcurrentDeleteReadException":
            hit.notes.append("delta-rs counts only data-changing removes and, without a read predicate, "
                             "reads every file of the snapshot (conflict-rules §9)")
        return True
    m = P.RS_MAX_ATTEMPTS.search(t)
    if m:
        hit.exception, hit.rule, hit.family = None, "max-retries", "delta-rs"
        hit.details["attempts"] = int(m.group("n"))
        hit.start, hit.end = m.start(), m.end()
        hit.notes.append("delta-rs MaxCommitAttempts: the writer gave up after its retries (default 15, conflict-rules §9)")
        return True
    return False


def _max_retries(t: str, hit: _Hit) -> bool:
    """DELTA_MAX_COMMIT_RETRIES_EXCEEDED (conflict-rules §7.3 'Other')."""
    m = P.MAX_RETRIES.search(t)
    if not m:
        return False
    hit.rule = "max-retries"
    hit.error_class = "DELTA_MAX_COMMIT_RETRIES_EXCEEDED"
    hit.details["attempts"] = int(m.group("n"))
    for key, pat in (("start_version", P.MAX_RETRIES_START), ("fail_version", P.MAX_RETRIES_FAIL),
                     ("num_actions", P.MAX_RETRIES_ACTIONS), ("time_ms", P.MAX_RETRIES_TIME)):
        mm = pat.search(t, m.end())
        if mm:
            hit.details[key] = int(mm.group("v"))
            hit.end = max(hit.end, mm.end())
    hit.start, hit.end = m.start(), max(hit.end, m.end())
    return True


# ------------------------------------------------------------------------------ winner JSON


def _winner(t: str, hit: _Hit) -> WinnerHint | None:
    cm = P.CONFLICTING_COMMIT.search(t, max(0, hit.start - 4096))
    commit_info: dict[str, Any] = {}
    present = complete = False
    redacted: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    if cm:
        present = True
        brace = t.find("{", cm.end(), cm.end() + 200)
        if brace >= 0:
            res = parse_lenient(t, brace)
            if isinstance(res.value, dict):
                commit_info = res.value
            complete = res.complete
            redacted = tuple(res.redacted)
            problems = tuple(p for p in res.problems)
            hit.end = max(hit.end, res.end)
            if res.end >= len(t) and not res.complete:
                hit.truncated = True
        else:
            problems = ("no JSON object after 'Conflicting commit:'",)
            hit.truncated = True
        rt = P.REFER_TO.search(t, hit.end, hit.end + 400)
        if rt:
            hit.details["docs_link"] = rt.group("link")
            hit.end = rt.end()
    elif hit.winner_version is None and hit.winner_operation is None:
        return None

    def typed(key: str, kind: type) -> Any:
        v = commit_info.get(key)
        if kind is bool and isinstance(v, str) and v in ("true", "false"):
            return v == "true"
        if kind is int and isinstance(v, str) and v.isdigit():
            return int(v)
        if kind is int and isinstance(v, bool):
            return None
        return v if isinstance(v, kind) else None

    params = commit_info.get("operationParameters")
    version = hit.winner_version if hit.winner_version is not None else typed("version", int)
    return WinnerHint(
        version=version,
        txn_id=typed("txnId", str),
        timestamp=typed("timestamp", int),
        operation=hit.winner_operation or typed("operation", str),
        read_version=typed("readVersion", int),
        isolation_level=typed("isolationLevel", str),
        is_blind_append=typed("isBlindAppend", bool),
        engine_info=typed("engineInfo", str),
        operation_parameters=decode_parameters(params) if isinstance(params, dict) else None,
        commit_info=commit_info,
        json_complete=complete,
        json_present=present,
        redacted_keys=redacted,
        json_problems=problems,
    )


# ------------------------------------------------------------------------------ main


def _parse(t: str) -> ErrorReport:
    wrappers = find_wrappers(t)
    hit = _Hit()
    names = _names(t)
    cls = P.ERROR_CLASS.search(t)

    matched = _v41(t, hit) or _spark_sentence(t, hit) or _kernel(t, hit) or _delta_rs(t, hit) or _max_retries(t, hit)
    if not matched and cls:
        exc = P.ERROR_CLASS_EXCEPTION[cls.group("cls")]
        hit.exception, hit.rule = exc, (P.EXCEPTION_RULE[exc] if exc else "max-retries")
        hit.start, hit.end, hit.truncated = cls.start(), cls.end(), True
        hit.notes.append("only the error class is printed; the message after it is missing")
        matched = True
    if not matched:
        strong = [n for n in names if n.pkg or n.name not in _GENERIC_NAMES]
        if strong:
            n = strong[0]
            hit.exception, hit.rule = n.name, P.EXCEPTION_RULE[n.name]
            hit.start, hit.end, hit.truncated = n.start, n.end, True
            hit.notes.append("only the exception name is printed; its message is missing (cut off)")
            matched = True
    if not matched:
        return _unrecognized(t, wrappers, negative_reason(t))

    # the exception the text names, next to the verdict (conflict-rules §7.7)
    named = _named_near(names, hit.start) if hit.family != "delta-rs" else None
    package = None
    if named is not None:
        package = named.pkg
        if hit.exception != named.name:
            if hit.family == "kernel" or (package or "").startswith("io.delta.kernel"):
                hit.exception = named.name  # Kernel names the class; the rule stays from the sentence
                if hit.generic_sentence:
                    hit.rule = P.EXCEPTION_RULE[hit.exception]
            elif hit.exception is None:
                hit.exception = named.name
            else:
                hit.notes.append(f"text names {named.name} but its sentence is {hit.exception}'s")
        hit.start = min(hit.start, named.start)
    if (package or "").startswith("io.delta.kernel"):
        hit.family = "kernel"
    if hit.error_class is None and cls is not None:
        hit.error_class = cls.group("cls")
        hit.start = min(hit.start, cls.start())
    if hit.exception == "ConcurrentTransactionException" and hit.rule == "txn" and P.search(P.DOMAIN, t):
        hit.rule = "domain"

    # family (conflict-rules §7.1-§7.6); Databricks signals win over the OSS delta-spark families
    if hit.family is None:
        hit.family = "delta-spark-3.2-4.0" if hit.error_class else "delta-spark<=3.1"
        if hit.error_class and hit.error_class in ("DELTA_PROTOCOL_CHANGED", "DELTA_CONCURRENT_TRANSACTION",
                                                   "DELTA_CONCURRENT_WRITE", "DELTA_METADATA_CHANGED",
                                                   "DELTA_MAX_COMMIT_RETRIES_EXCEEDED"):
            hit.notes.append(f"{hit.error_class} texts are unchanged in 4.1+; the release may be newer than 4.0")
    if package and package.startswith("io.delta.standalone"):
        hit.notes.append("Delta Standalone (io.delta.standalone) prints the delta-spark <=3.1 plain messages")
    if hit.family.startswith("delta-spark"):
        signals = [label for pat, label in P.DATABRICKS_SIGNALS if pat.search(t)]
        if signals:
            hit.notes.append(f"Databricks build ({', '.join(signals)}); template family {hit.family}")
            hit.family = "databricks"

    empty = P.EMPTY_DIR.search(t)
    empty_directory = bool(empty) and hit.exception in ("ProtocolChangedException", "ConcurrentWriteException", None)
    if empty and empty_directory:
        hit.end = max(hit.end, empty.end())
        hit.notes.append("empty-directory race: the winner is version 0 (two writers created the table, conflict-rules §5.1)")
        if not empty.group("rest"):
            hit.truncated = True
            hit.notes.append("empty-directory sentence is cut off; read from its first words")

    winner = _winner(t, hit)
    if "docs_link" not in hit.details:
        rt = P.REFER_TO.search(t, hit.start, hit.end + 400)
        if rt:
            hit.details["docs_link"] = rt.group("link")
            hit.end = max(hit.end, rt.end())
    templated_end = hit.family.startswith("delta-spark") or hit.family == "databricks"
    if templated_end and hit.rule != "max-retries" and _ends_cut(t):
        hit.truncated = True
        hit.notes.append("the text ends mid-sentence: cut off by the platform or the copy")
    part = parse_partition(hit.partition_text)
    if part is not None and not part.complete:
        hit.truncated = True
    return ErrorReport(
        recognized=True,
        exception=hit.exception,
        error_class=hit.error_class,
        family=hit.family,
        rule=hit.rule,
        partition=dict(part.values) if part is not None else None,
        partition_text=part.text if part is not None else hit.partition_text,
        file=hit.file,
        table=hit.table,
        winner=winner,
        empty_directory=empty_directory,
        wrapper=wrappers,
        excerpt=excerpt(t, hit.start, hit.end),
        why_not=None,
        package=package,
        truncated=hit.truncated,
        details=hit.details,
        notes=tuple(hit.notes),
    )

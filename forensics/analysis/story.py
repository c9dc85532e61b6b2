"""The incident story: who beat whom, when, by which rule, how sure, and what to change, in a few
plain lines that lead `explain`, `explain-error` and the TUI's explain pane (and `story` in JSON).

The rule engine and the evidence speak in the project's own shorthand (rule-reference citations,
profile descriptors, `[superset]`, `exact:` prefixes); `in_words` is the one place that shorthand
becomes words, and `rule_in_words` the one place a rule gets its name. The why-texts themselves
stay as they are (the JSON keeps them verbatim).
"""

from __future__ import annotations

import re
from typing import Any

from forensics.errortext.patterns import EXCEPTION_RULE
from forensics.evidence.loser import ErrorExplanation
from forensics.log.delta_log import DeltaLog
from forensics.model import Bound, CommitRecord
from forensics.times import fmt_duration, fmt_time, utc_default


class StoryLine(str):
    """One line of the story: the line's plain words, a `str` (so `"\\n".join(story)` prints it),
    with its `kind`: this (the explained commit or the winner), other (the other side), rule, sure
    (how sure), fix (what to change), more (anything after those five); basis (right after the
    first line, only when the answer stands on a damaged commit). `style` is its Rich style for
    terminals."""

    kind: str
    style: str

    def __new__(cls, kind: str, text: str, style: str = "") -> "StoryLine":
        line = super().__new__(cls, text)
        line.kind, line.style = kind, style
        return line

    @property
    def text(self) -> str:
        """The line as a plain `str`."""
        return str.__str__(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (StoryLine, (self.kind, self.text, self.style))

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "text": self.text}


# ---- words for the rules ------------------------------------------------------------------------

# Check names (rules/) and error-text rules (errortext/) -> (name, what it means).
_RULES: dict[str, tuple[str, str]] = {
    "appends": ("concurrent append", "files were added in a partition the transaction had read"),
    "deleteRead": ("concurrent delete of a file it read", "a file the transaction had read was removed"),
    "deleteDelete": ("same file deleted twice", "both transactions removed the same file"),
    "metadata": ("metadata change", "the table's schema or properties changed under the transaction"),
    "protocol": ("protocol change", "the table's protocol (its reader/writer features) changed under the transaction"),
    "appIds": ("same streaming query", "both committed a batch of the same streaming query (the same txn appId)"),
    "domainMetadata": ("same metadata domain", "both wrote the same metadata domain"),
    "rowTrackingBackfill": ("row-tracking backfill", "a row-tracking backfill ran concurrently"),
    "rowTrackingUnbackfill": ("row-tracking removal", "row tracking was being removed concurrently"),
    "rowIds": ("row IDs", "row IDs of the new files were reassigned"),
    "rowCommitVersions": ("row commit versions", "row commit versions were moved to the next version"),
    "typeWidening": ("type widening", "the column types' widening record was updated"),
    "ict": ("in-commit timestamps", "the in-commit timestamp was raised above the winner's"),
    "write": ("concurrent write", "a concurrent transaction wrote data this one had read"),
    "max-retries": ("retries exhausted", "the writer gave up retrying"),
}
_RULE_ALIASES = {"append": "appends", "delete-read": "deleteRead", "delete-delete": "deleteDelete", "txn": "appIds",
                 "domain": "domainMetadata"}


def _rule_key(rule: str | None) -> str:
    return _RULE_ALIASES.get(rule or "", rule or "")


def rule_in_words(rule: str | None) -> str:
    """`appends` / `append` -> `concurrent append`: a check or error-text rule named in words."""
    return _RULES.get(_rule_key(rule), (rule or "unknown rule", ""))[0]


def rule_meaning(rule: str | None) -> str:
    return _RULES.get(_rule_key(rule), ("", "a conflict check failed"))[1]


def rule_of_exception(exception: str | None) -> str | None:
    return EXCEPTION_RULE.get(exception or "")


# ---- the project's shorthand, in words ----------------------------------------------------------

_REF = r"(?:conflict-rules|spec)\s*§\s*\d[\d.]*(?:\s?[a-z](?![\w-]))?"
_CITE = re.compile(_REF + r"(?:\s*(?:,|and|;)?\s*§\s*\d[\d.]*(?:\s?[a-z](?![\w-]))?)*")
_BARE_CITE = re.compile(r"§\s*\d[\d.]*")
_PROFILE = re.compile(r"(?P<name>[\w.<=+@-]+) \[(?P<body>[^\[\]]*?);\s*(?P<kind>exact \(read from source\)|inferred \(source not public\))\]")
_BOUNDS = {"superset": "an upper bound", "subset": "a lower bound", "exact": "exact", "unknown": "unknown",
           "inferred": "inferred", "doc": "documented"}
_TAGS = {k: f"({v})" for k, v in _BOUNDS.items()}
_TAG = re.compile(r"\[(" + "|".join(_TAGS) + r")\]")
_PAREN_BOUND = re.compile(r"\((superset|subset)\)")
_LEVEL_TAG = re.compile(r"\[(Serializable|WriteSerializable|SnapshotIsolation)\]")
_ARE = {
    ("read files", "superset"): "the files it read are an upper bound (the log does not list them)",
    ("read files", "subset"): "it may have read more files than shown",
    ("read files", "unknown"): "the files it read are not known",
    ("read predicates", "superset"): "its read predicates are an upper bound",
    ("read predicates", "subset"): "it may have read more than its recorded predicates say",
    ("read predicates", "unknown"): "its read predicates are not fully known",
    ("isolation level", "superset"): "its isolation level is not recorded",
    ("isolation level", "subset"): "its isolation level is not recorded",
    ("isolation level", "unknown"): "its isolation level is not recorded",
}
_ARE_RE = re.compile(r"\b(read files|read predicates|isolation level) are (superset|subset|unknown)\b")
_PREFIX = re.compile(r"(^|[:;(]\s*|\.\s+)(?:exact|inferred): ")


def bound_in_words(bound: str | None) -> str:
    """`superset` -> `an upper bound`: how a rebuilt set relates to what the engine recorded (model.Bound)."""
    return _BOUNDS.get(bound or "", bound or "unknown")


def in_words(text: str | None) -> str:
    """Internal why-text made readable for people: rule-reference citations dropped (the code keeps
    them), profile descriptors, bound and isolation labels and `exact:`/`inferred:` prefixes said in
    words. Meaning is kept: the certainty itself is said by the story, once, with its reason."""
    if not text:
        return ""
    s = _PROFILE.sub(_profile_words, text)
    s = _CITE.sub("", s)
    s = _BARE_CITE.sub("", s)
    s = _TAG.sub(lambda m: _TAGS[m.group(1)], s)
    s = _PAREN_BOUND.sub(lambda m: _TAGS[m.group(1)], s)
    s = _LEVEL_TAG.sub(lambda m: f"(under {m.group(1)})", s)
    s = _ARE_RE.sub(lambda m: _ARE[(m.group(1), m.group(2))], s)
    s = _PREFIX.sub(lambda m: m.group(1), s)
    s = s.replace("⇒", "so")
    # what removing a citation leaves behind
    for a, b in (("(; ", "("), ("(, ", "("), ("; )", ")"), (", )", ")"), (",)", ")"), (";)", ")"), ("()", "")):
        while a in s:
            s = s.replace(a, b)
    s = re.sub(r"\(\s*\)", "", s)
    s = re.sub(r"\(\(([^()]*)\)\)", r"(\1)", s)
    s = re.sub(r" +([,;.])(?=\s|$)", r"\1", s)
    s = re.sub(r"[ \t]{2,}", " ", s)
    return s.strip()


def _profile_words(m: re.Match) -> str:
    body = m.group("body").replace("; ", ", ")
    how = "read from its source" if m.group("kind").startswith("exact") else "modelled from its documentation, source not public"
    return f"the rules of {body} ({how})"


def clauses(text: str | None) -> list[str]:
    """A long why-text split where it says one thing after another (`; ` and sentence ends, not
    inside parentheses or `quotes`), each clause in words."""
    s = in_words(text)
    out, depth, quoted, start, i = [], 0, False, 0, 0
    while i < len(s):
        ch = s[i]
        if ch == "`":
            quoted = not quoted
        elif not quoted and ch in "([":
            depth += 1
        elif not quoted and ch in ")]":
            depth = max(0, depth - 1)
        elif not quoted and depth == 0 and ch in ";." and s[i + 1:i + 2] == " " and (ch == ";" or s[i + 2:i + 3].isupper()):
            out.append(s[start:i].strip())
            start = i + 2
            i += 1
        i += 1
    out.append(s[start:].strip().rstrip("."))
    return [c for c in out if c]


# ---- who, when, what ----------------------------------------------------------------------------


def when(ms: int | None, utc: bool | None = None) -> str:
    """`2024-06-25 10:00:03+0200 (08:00:03Z)`: local time with its offset and UTC, or UTC alone when asked for UTC."""
    if ms is None:
        return "at a time the log does not record"
    utc = utc_default() if utc is None else utc
    if utc:
        return fmt_time(ms, True)
    local, z = fmt_time(ms, False), fmt_time(ms, True)
    return f"{local} ({z[11:] if z[:10] == local[:10] else z})"


def who(rec: CommitRecord | None) -> str:
    """`by alice, job nightly-load (run 42), cluster 0612-…, on Apache-Spark/3.5.1 Delta-Lake/3.2.0`: from commitInfo."""
    if rec is None:
        return ""
    parts = []
    if rec.user_name or rec.user_id:
        parts.append(f"by {rec.user_name or 'user ' + str(rec.user_id)}")
    job = rec.job if isinstance(rec.job, dict) else {}
    if job.get("jobName") or job.get("jobId"):
        run = job.get("jobRunId") or job.get("runId")
        parts.append(f"job {job.get('jobName') or job.get('jobId')}" + (f" (run {run})" if run else ""))
    nb = rec.notebook if isinstance(rec.notebook, dict) else {}
    if nb.get("notebookPath") or nb.get("notebookId"):
        parts.append(f"notebook {nb.get('notebookPath') or nb.get('notebookId')}")
    if rec.cluster_id:
        parts.append(f"cluster {rec.cluster_id}")
    if rec.engine_info:
        parts.append(f"on {rec.engine_info}")
    return ", ".join(str(p)[:120] for p in parts)


def partitions(parts: list[dict[str, Any]] | tuple | None, limit: int = 3) -> str:
    """`date=2024-06-18, date=2024-06-19 and 2 more`; `the table root` for an unpartitioned write."""
    items = [",".join(f"{k}={v}" for k, v in p.items()) for p in (parts or []) if isinstance(p, dict)]
    items = [i or "the table root" for i in items]
    if not items:
        return ""
    return ", ".join(items[:limit]) + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _files(n: int) -> str:
    return f"{n} file{'' if n == 1 else 's'}"


def did(rec: CommitRecord | None) -> str:
    """What a commit did, from its actions: `added 1 file and removed 1 file in date=2024-06-19`."""
    if rec is None:
        return "is not in the retained log"
    where = partitions(rec.partitions_touched)
    acts = []
    if rec.num_add and not rec.num_remove and rec.is_blind_append:
        acts.append(f"blind-appended {_files(rec.num_add)}")
    else:
        if rec.num_add:
            acts.append(f"added {_files(rec.num_add)}")
        if rec.num_remove:
            acts.append(f"removed {_files(rec.num_remove)}")
    text = " and ".join(acts) + (f" in {where}" if acts and where else "")
    extra = []
    if rec.has_metadata:
        extra.append("changed the table's metadata")
    if rec.has_protocol:
        extra.append("changed the table's protocol")
    if rec.txn_app_ids:
        extra.append("committed streaming batch " + ", ".join(f"{v} of query {k}" for k, v in sorted(rec.txn_app_ids.items())))
    text = "; ".join(x for x in [text, *extra] if x)
    return text or "changed no files"


def _by(rec: CommitRecord | None) -> str:
    """`by alice` (or the job): the short who of a story line; `who` has the rest."""
    if rec is None:
        return ""
    job = rec.job if isinstance(rec.job, dict) else {}
    name = rec.user_name or rec.user_id or job.get("jobName") or job.get("jobId")
    return f" by {str(name)[:60]}" if name else ""


def commit_words(rec: CommitRecord | None, version: int, utc: bool | None = None) -> str:
    """`v3 MERGE by alice committed 2024-06-20 10:02:14+0200 (08:02:14Z)`."""
    op = (rec.operation if rec else None) or "(no operation recorded)"
    return f"v{version} {op}{_by(rec)} committed {when(rec.timestamp if rec else None, utc)}"


def who_line(recs: list[tuple[int, CommitRecord | None]]) -> StoryLine | None:
    """`Who: v3 by alice, job …, cluster …, on Databricks-Runtime/15.4; v2 …`: what commitInfo says of each side."""
    said: dict[str, list[int]] = {}
    for v, rec in recs:
        if w := who(rec):
            said.setdefault(w, []).append(v)
    parts = [" and ".join(f"v{v}" for v in vs) + f" {w}" for w, vs in said.items()]
    return StoryLine("more", "Who: " + "; ".join(parts) + ".", "dim") if parts else None


def _after(later: int | None, earlier: int | None, what: str) -> str:
    if later is None or earlier is None:
        return ""
    gap = later - earlier
    return f", {fmt_duration(gap)} {'after' if gap >= 0 else 'before'} {what}"


def _fix_line(advice: list[Any], none: str) -> StoryLine:
    if not advice:
        return StoryLine("fix", f"What to change: {none}", "cyan")
    a = advice[0]
    text = a.title.rstrip(".")
    if a.example:
        text += f": {a.example}"
    more = len(advice) - 1
    return StoryLine("fix", f"What to change: {text}" + (f" (and {more} more below)" if more else ""), "cyan")


# Findings (forensics.log) that mean the reader rejected part of a commit file: the story built on
# that commit may miss what the rejected lines held.
DAMAGE_CODES = ("commit.bad_line", "commit.bad_action", "commit.unreadable", "commit.empty", "commit.unknown_action",
                "commit.non_utf8")


def damaged_commits(log: DeltaLog, versions: Any) -> dict[int, list[str]]:
    """version -> what the reader rejected in its commit file, for the versions a story names."""
    want = {v for v in versions if v is not None}
    out: dict[int, list[str]] = {}
    for f in log.findings:
        if f.version in want and f.code in DAMAGE_CODES:
            out.setdefault(f.version, []).append(f.message)
    return out


def stands_on(damaged: dict[int, list[str]], assumptions: list[str]) -> StoryLine | None:
    """`Stands on ...`: said right after the first line when the answer uses a damaged commit (and then
    with every assumption it makes too; without damage lines 1-2 say the assumptions themselves)."""
    if not damaged:
        return None
    parts = [f"v{v}, whose commit file has {'a line' if len(msgs) == 1 else f'{len(msgs)} lines'} the reader rejected "
             f"({'; '.join(m.rstrip('.') for m in msgs[:2])}{' …' if len(msgs) > 2 else ''})" for v, msgs in sorted(damaged.items())]
    lines = sum(len(m) for m in damaged.values())
    text = ("Stands on a damaged commit: " + "; ".join(parts)
            + f"; what {'that line' if lines == 1 else 'those lines'} held is not in this answer")
    if assumptions:
        text += "; and on assumptions: " + "; ".join(assumptions)
    return StoryLine("basis", text + ".", "bold yellow")


def _profile_exact(name: str | None) -> bool | None:
    from forensics.rules import get_profile

    try:
        return get_profile(name).exact if name else None
    except KeyError:
        return None


# ---- explain V ------------------------------------------------------------------------------------


def explanation_story(e: Any, utc: bool | None = None) -> list[StoryLine]:
    """The story of one version (an analysis.explain.Explanation): lines 1-5 say who and when, what
    each side did, which rule fired or was forgiven, how sure, and what to change. `utc`: times in
    UTC alone (None: as the environment asks, forensics.times.utc_default)."""
    v, V, rv = e.replayed, e.version, e.read_version
    rec: CommitRecord | None = e.commits.get(V)
    rrec: CommitRecord | None = e.commits.get(rv) if rv is not None else None
    ts = rec.timestamp if rec else None
    this = commit_words(rec, V, utc)
    if rv is None:
        this += "; its readVersion is not recorded"
    else:
        this += _after(ts, rrec.timestamp if rrec else None, f"v{rv} (the version it read)") or f"; it read v{rv}"
    this += f"; it {did(rec)}."
    lines = [StoryLine("this", this, "bold")]

    other_v = v.winning_version if v.verdict == "anomaly" else (v.reordered_before[0] if v.reordered_before else None)
    # an attempt this version beat for sure before one it is only a lower-ranked answer for
    defeated = sorted(e.defeated, key=_is_alternative)
    d = defeated[0] if defeated and v.verdict in ("clean", "skipped") else None
    if other_v is not None:
        orec = e.commits.get(other_v)
        landed = "first" if v.verdict == "anomaly" else "in between"
        lines.append(StoryLine("other", f"{commit_words(orec, other_v, utc)} {landed}"
                               + _after(orec.timestamp if orec else None, rrec.timestamp if rrec else None, f"v{rv}")
                               + f"; it {did(orec)}."))
    elif d is not None:
        lines.append(StoryLine("other", _defeated_words(e, d)))
    elif v.verdict == "skipped":
        lines.append(StoryLine("other", f"It was not checked: {in_words(v.why)}."))
    elif _abort_only_under_a_bound(v):
        w = v.result.winning_version
        orec = e.commits.get(w)
        lines.append(StoryLine("other", f"{commit_words(orec, w, utc)} in between"
                               + _after(orec.timestamp if orec else None, rrec.timestamp if rrec else None, f"v{rv}")
                               + f"; it {did(orec)}. It would have conflicted only with reads the log does not record."))
    elif e.winners:
        ws = ", ".join(f"v{w.version} {w.operation or '?'}" for w in e.winners[:5]) + (" …" if len(e.winners) > 5 else "")
        lines.append(StoryLine("other", f"{len(e.winners)} commit(s) landed between its read and its commit ({ws}); none conflicted with it."))
    else:
        lines.append(StoryLine("other", "No other commit landed between its read and its commit, and no aborted attempt is known to have lost to it."))

    lines.append(_rule_line(e, d))
    lines.append(_sure_line(e, d))
    if v.verdict == "reordered":
        none = "nothing, if rows the forgiven commits added may survive"
    else:
        none = "nothing: no conflict" if v.verdict == "clean" else "nothing the log can ground"
    lines.append(_fix_line(e.advice, none))
    for extra in defeated[1:] if d is not None else defeated:
        lead = "It may also have beaten " if _is_alternative(extra) else "It also beat "
        lines.append(StoryLine("more", lead + _defeated_words(e, extra, lead="")))
    sides = [(V, rec)] + ([(other_v, e.commits.get(other_v))] if other_v is not None else [])
    if d is not None and d.retry_version is not None:
        sides.append((d.retry_version, e.commits.get(d.retry_version)))
    w = who_line(sides)
    named = [V, rv, other_v, *(x.version for x in e.winners), *(x.retry_version for x in e.defeated)]
    assumed = (["the version it read (not recorded)"] if rv is None else []) + (
        [f"what the aborted transaction did (most likely it {in_words(d.hypothesis)})"] if d is not None and d.hypothesis
        and d.retry_version is None else [])
    basis = stands_on({v: m for v, m in getattr(e, "damaged", {}).items() if v in named}, assumed)
    return lines[:1] + ([basis] if basis else []) + lines[1:] + ([w] if w else [])


def _is_alternative(d: Any) -> bool:
    """A defeated attempt this version is only a lower-ranked answer for (forensics.evidence.defeated)."""
    return (d.why or "").startswith("one of ")


def _defeated_words(e: Any, d: Any, lead: str = "It beat ") -> str:
    if lead == "It beat " and _is_alternative(d):
        lead = "It may have beaten "
    retry = e.commits.get(d.retry_version) if d.retry_version is not None else None
    op = retry.operation if retry is not None and retry.operation else None
    what = f"an aborted {op}" if op else "an aborted transaction"
    facts = []
    if d.read_version is not None:
        facts.append(f"read v{d.read_version}")
    if d.wrote:
        facts.append(f"wrote {partitions(list(d.wrote))}")
    text = lead + what + (" that " + " and ".join(facts) if facts else "")
    # DefeatedAttempt.source is "orphan files (N) in ..." or "error text NAME (winner found by ...)"
    text += ", named by your error text" if d.source.startswith("error text") else ", seen by the orphan files it left"
    if retry is not None:
        text += f"; its re-run landed as v{d.retry_version}"
    elif d.hypothesis:
        text += f"; most likely it {in_words(d.hypothesis)}"
    if _is_alternative(d):
        text += f" ({in_words(d.why.split(': ', 1)[0].split(' (the most likely', 1)[0])}; its most likely winner is " \
                f"{d.why.split('the most likely is ', 1)[1].split(';', 1)[0]})" if "the most likely is " in d.why else ""
    return text + "."


def _rule_line(e: Any, d: Any) -> StoryLine:
    v = e.replayed
    if v.verdict == "anomaly":
        where = partitions([v.partition]) if v.partition is not None else ""
        return StoryLine("rule", f"Rule that fired: {rule_in_words(v.rule)}: {rule_meaning(v.rule)}"
                         + (f" ({where})" if where else "") + f"; the engine aborts v{e.version} with {v.exception}.", "bold red")
    if v.verdict == "reordered":
        res = v.result
        c = next((c for c in (res.checks if res else []) if c.reordered), None)
        rule = c.check if c else "appends"
        where = partitions([c.partition]) if c and c.partition is not None else ""
        level = v.isolation_level or e.header.isolation_level
        why = ("a blind append does not conflict under WriteSerializable" if level == "WriteSerializable"
               else f"{level or 'this isolation level'} does not check concurrent appends")
        later = ", ".join(f"v{x}" for x in v.reordered_before)
        return StoryLine("rule", f"Rule forgiven: {rule_in_words(rule)}: {why}"
                         + (f" (the files were in {where})" if where else "")
                         + f"; so v{e.version} counts as committed before {later}, and rows {later} added that it would have "
                         "changed are left as they are.", "yellow")
    if d is not None:
        rule = rule_of_exception(d.exception)
        where = partitions([d.partition]) if d.partition is not None else ""
        return StoryLine("rule", f"Rule that fired: {rule_in_words(rule)}: {rule_meaning(rule)}"
                         + (f" ({where})" if where else "")
                         + f"; the aborted transaction failed with {d.exception or 'an exception the log does not show'}.", "bold red")
    if v.verdict == "skipped":
        return StoryLine("rule", "Rule: none decided: without the version it read, the commits it raced cannot be told.", "dim")
    if _abort_only_under_a_bound(v):
        r = v.result
        return StoryLine("rule", f"Rule: none fired on what it really read. The log records only an upper bound of its reads "
                         f"({in_words(e.sets.read.why)}); under that bound "
                         f"{rule_in_words(r.rule)} against v{r.winning_version} would abort it with {r.exception}; it committed, "
                         "so it read less than the bound (no anomaly is claimed).", "yellow")
    if e.winners:
        n = len(v.result.checks) if v.result is not None else 0
        return StoryLine("rule", f"Rule: none fired: all {n} checks passed against the {len(e.winners)} commit(s).", "green")
    return StoryLine("rule", "Rule: none to check: Delta checks a commit only against commits that landed after the version it read.", "green")


def _abort_only_under_a_bound(v: Any) -> bool:
    """A commit the rules abort only under an upper bound of its reads (replay/verdict.py: clean,
    certainty unknown): the story says which commit the bound catches, and that it proves nothing."""
    return v.verdict == "clean" and v.result is not None and v.result.verdict == "abort"


def _sure_line(e: Any, d: Any) -> StoryLine:
    v = e.replayed
    if d is not None:
        if d.source.startswith("error text"):
            return StoryLine("sure", f"How sure: inferred, because the error text names v{e.version} as its winner ({in_words(d.source)}); "
                             "what the failed transaction did is rebuilt from the rule it names.")
        how = (f"its orphan files and its re-run v{d.retry_version} say what it did" if d.retry_version is not None
               else "its orphan files say where it wrote, and what it did is the first guess whose replay aborts")
        return StoryLine("sure", f"How sure: inferred, because the aborted transaction never reached the log; {how}.")
    if v.verdict == "skipped":
        return StoryLine("sure", "How sure: not decided, because the log does not record the version it read.")
    if not e.winners and v.verdict == "clean":
        return StoryLine("sure", "How sure: exact, because nothing landed between its read and its commit, so there was nothing to check.")
    if v.certainty == Bound.EXACT.value:
        return StoryLine("sure", "How sure: exact, because every fact comes from the log, and the rules were read from the engine's source.")
    return StoryLine("sure", f"How sure: inferred, because {_inferred_reason(e)}.")


def _inferred_reason(e: Any) -> str:
    v, r = e.replayed, e.sets.read
    if _profile_exact(v.profile) is False:
        engine = "Databricks" if "databricks" in (v.profile or "") else v.profile
        return f"the conflict rules of {engine} are not public; its documented behaviour is modelled"
    if r.files_bound == Bound.SUPERSET:
        return "the log does not list the files it read; they are rebuilt from its read predicate, an upper bound"
    if r.files_bound == Bound.SUBSET:
        return "it may have read more files than the log shows"
    if r.files_bound == Bound.UNKNOWN:
        return "the files it read are not known"
    if r.predicate_bound != Bound.EXACT:
        return "its read predicates are not fully known"
    if not e.header.isolation_level:
        return "its isolation level is not recorded (the table's default is assumed)"
    notes = clauses(v.result.why if v.result is not None else v.why)[1:]
    return notes[0] if notes else "part of the answer rests on an inference"


# ---- explain-error --------------------------------------------------------------------------------


def error_story(x: ErrorExplanation, log: DeltaLog, utc: bool | None = None) -> list[StoryLine]:
    """The story of a failed transaction, from its error text and the table's log."""
    r, w = x.report, x.winning_version
    exc = r.exception or "a concurrency error"
    match = x.match
    rule = r.rule
    R = x.replay.request.read_version if x.replay is not None else None
    if match is not None and match.how == "none" and w is None and not match.candidates:
        lines = [StoryLine("this", f"Your transaction failed with {exc}; no commit in this table's log is its winner: "
                           f"{in_words(match.why)}.", "bold")]
    elif w is None:
        cands = ", ".join(f"v{c}" for c in (match.candidates if match else []))
        lines = [StoryLine("this", f"Your transaction failed with {exc}; "
                           + (f"the winner is one of {cands}" if cands else "no commit could be named its winner")
                           + (f": {in_words(match.why)}." if match else "."), "bold")]
    else:
        wrec = log.record(w) if log.has_version(w) else None
        rrec = log.record(R) if R is not None and log.has_version(R) else None
        assumed = ", assumed" if x.read_why and "assumed" in x.read_why else ""
        lines = [StoryLine("this", f"Your transaction failed with {exc}: {commit_words(wrec, w, utc)} first"
                           + _after(wrec.timestamp if wrec else None, rrec.timestamp if rrec else None,
                                    f"v{R} (the version your transaction read{assumed})")
                           + f"; it {did(wrec)}.", "bold")]
    lines.append(StoryLine("other", _loser_words(x, R)))
    where = partitions([r.partition]) if r.partition is not None else ""
    rule_text = f"Rule that fired: {rule_in_words(rule)}: {rule_meaning(rule)}" + (f" ({where})" if where else "")
    if r.file:
        rule_text += f"; the file: {r.file}"
    lines.append(StoryLine("rule", rule_text + ".", "bold red"))
    lines.append(StoryLine("sure", _error_sure(x)))
    lines.append(_fix_line(x.advice, "nothing the log can ground"))
    who_ = who_line([(w, log.record(w))]) if w is not None and log.has_version(w) else None
    assumed = ([f"the version your transaction read (v{R}, {in_words(x.read_why)})"] if R is not None and x.read_why
               and "assumed" in x.read_why else [])
    if x.hypothesis and not in_words(x.hypothesis).startswith("as stated"):
        assumed.append(f"what your transaction did (most likely {in_words(x.hypothesis)})")
    basis = stands_on(damaged_commits(log, [w, R, *(match.candidates if match else [])]), assumed)
    return lines[:1] + ([basis] if basis else []) + lines[1:] + ([who_] if who_ else [])


def _loser_words(x: ErrorExplanation, R: int | None) -> str:
    facts = []
    if x.loser_partitions:
        facts.append(f"wrote {partitions(x.loser_partitions)} (the aborted attempt's orphan files)")
    if R is not None:
        facts.append(f"read v{R}" + (" (assumed: the version before the winner)" if x.read_why and "assumed" in x.read_why else ""))
    text = "Your transaction " + (" and ".join(facts) if facts else "is known only from its error text")
    if x.hypothesis:
        op = x.replay.request.operation if x.replay is not None else None
        hyp = in_words(x.hypothesis)
        # loser_hypotheses labels what the user stated "as stated: ..."; anything else is a guess
        text += (f"; {hyp.replace('as stated', 'as you stated', 1)}" if hyp.startswith("as stated") else f"; most likely {hyp}")
        text += f"; replayed as {op}" if op else ""
    return text + "."


_EXACT_MATCH = {"version": "the text names its version", "txnId": "the text's txnId matches it alone"}


def _error_sure(x: ErrorExplanation) -> str:
    m = x.match
    if x.winning_version is None:
        return "How sure: not decided, because " + (in_words(m.why) if m else "no winner found") + "."
    if m is not None and m.how in _EXACT_MATCH and not m.ambiguous:
        winner = f"the winner is exact ({_EXACT_MATCH[m.how]})"
    else:
        first = clauses(m.why)[0] if m is not None and m.why else "by its rule"
        others = [c for c in (m.candidates if m else []) if c != x.winning_version]
        winner = (f"the winner is inferred ({first})"
                  + (f"; it could also be {', '.join(f'v{c}' for c in others)}: give --read-version to decide" if m and m.ambiguous and others else ""))
    if x.replay is None:
        return f"How sure: {winner}; your transaction was not replayed."
    loser = ("what your transaction did is inferred (rebuilt from the rule"
             + (" and its orphan files" if x.loser_partitions else "")
             + ("; the replay reproduces the error)" if x.reproduced else "; the replay does not reproduce the error)"))
    return f"How sure: {winner}; {loser}."


def text_story(report: Any, utc: bool | None = None) -> list[StoryLine]:
    """What an error text says on its own (no table given), as the story's five lines."""
    from forensics.replay.advice import general_fixes

    exc = report.exception or "a concurrency error"
    hint = report.winner
    first = f"Your transaction failed with {exc}"
    if hint is not None and (hint.operation or hint.timestamp or hint.version is not None):
        first += ": the winner was " + (f"v{hint.version} " if hint.version is not None else "a ") + (hint.operation or "commit")
        if hint.timestamp is not None:
            first += f", committed {when(hint.timestamp, utc)}"
    where = partitions([report.partition]) if report.partition is not None else ""
    return [
        StoryLine("this", first + ".", "bold"),
        StoryLine("other", "Your transaction: what it did is not in the text; give the table to rebuild and replay it."),
        StoryLine("rule", f"Rule that fired: {rule_in_words(report.rule)}: {rule_meaning(report.rule)}" + (f" ({where})" if where else "")
                  + (f"; the file: {report.file}" if report.file else "") + ".", "bold red"),
        StoryLine("sure", "How sure: exact for what the text says (the exception and the rule); nothing was replayed."),
        _fix_line(general_fixes(report.rule), "nothing the text can ground"),
    ]

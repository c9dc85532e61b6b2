"""What the HTML post-mortem says around its timeline: the incident story, the advice, the
statistics and the counterfactuals, gathered into one record so the report is rendered (and
redacted, `forensics.export.redact`) from one place.

The story is a list of plain sentences: for the table's conflicts (anomalies, then reorders, then
aborted attempts; a few) the lines `explain V` prints first (`forensics.analysis.story`), so the
report and the terminal say the same words, and the report opens with them; without a table to
explain from, sentences built from the timeline's own verdict fields. The range's overview comes
last. Each piece of advice names the conflicts it serves (`serves`: span ids), so the report can
list a change once for every conflict it would prevent.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from forensics.analysis.story import in_words, partitions, rule_in_words, rule_meaning, when
from forensics.analysis.timeline import Span, Timeline
from forensics.errors import ForensicsError

if TYPE_CHECKING:
    from forensics.export.redact import Redactor

STORY_CAP = 3  # conflicts told in the story; the verdict table has them all
_ORDER = {"anomaly": 0, "reordered": 1, "aborted": 2}


@dataclass
class Postmortem:
    """The report's words besides the timeline; every field is plain data (JSON-ready)."""

    story: list[str] = field(default_factory=list)
    advice: list[dict[str, Any]] = field(default_factory=list)  # {"version", "title", "detail", "evidence", "example", "serves"}
    stats: dict[str, Any] | None = None
    counterfactuals: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def redacted(self, r: "Redactor") -> "Postmortem":
        return Postmortem(**r.apply(self.to_dict()))


def conflicts(tl: Timeline) -> list[Span]:
    """Anomalies, reorders, then aborted attempts, each in log order (attempts nothing attributes
    last): what the story tells first."""
    picked = [s for s in tl.spans if s.verdict in _ORDER]
    return sorted(picked, key=lambda s: (_ORDER[s.verdict], s.kind == "attempt" and s.winning_version is None,
                                         s.version if s.version is not None else s.winning_version or 0, s.id))


def build_postmortem(tl: Timeline, explain: Callable[[int], Any] | None = None, *, stats: dict[str, Any] | None = None,
                     counterfactuals: list[dict[str, Any]] | None = None, utc: bool | None = None,
                     cap: int = STORY_CAP) -> Postmortem:
    """The story and advice of `tl`'s conflicts; `explain(version)` (Table.explain) gives each its
    explanation: the story lines and the advice of the commit (an attempt: of the commit that beat it)."""
    story: list[str] = []
    advice: list[dict[str, Any]] = []
    picked = conflicts(tl)
    told: set[int] = set()
    for s in picked[:cap]:
        v = s.version if s.kind == "commit" else s.winning_version
        if v is not None and v in told:
            continue  # two attempts beaten by one commit: its explanation tells both
        ex = None
        if explain is not None and v is not None:
            try:
                ex = explain(v)
            except ForensicsError:  # the winner is no longer retained: the timeline's own words
                ex = None
        if ex is None:
            story += span_story(s, tl, utc)
            continue
        told.add(v)  # type: ignore[arg-type]
        story += explanation_lines(ex)
        serves = [x.id for x in picked if (x.version if x.kind == "commit" else x.winning_version) == v]
        advice += [{"version": v, **a.to_dict(), "serves": serves} for a in ex.advice]
    if len(picked) > cap:
        story.append(f"{len(picked) - cap} more conflict(s), reorder(s) or aborted attempt(s) are in the verdict table below.")
    if not picked:
        story.append("No commit in this range conflicted, was reordered or is known to have beaten an aborted attempt: "
                     "there is nothing to change.")
    story.append(overview(tl, utc))
    return Postmortem(story=story, advice=advice, stats=stats, counterfactuals=list(counterfactuals or []))


def explanation_lines(ex: Any) -> list[str]:
    """The story lines `explain V` leads with."""
    from forensics.analysis.story import explanation_story

    return [line.text for line in explanation_story(ex)]


def overview(tl: Timeline, utc: bool | None = None) -> str:
    """`Versions 0..3: 4 commits from … to …; 1 read a version older than the one before it (1 reordered); …`."""
    commits = tl.commits
    times = [s.end_ms for s in commits if s.end_ms is not None]
    span = f" from {when(min(times), utc)} to {when(max(times), utc)}" if times else ""
    windows = [s for s in commits if s.verdict != "serial"]
    counts: dict[str, int] = {}
    for s in windows:
        counts[s.verdict] = counts.get(s.verdict, 0) + 1
    words = {"anomaly": "should have aborted", "reordered": "reordered", "clean": "clean", "skipped": "not checked"}
    said = ", ".join(f"{n} {words.get(k, k)}" for k, n in sorted(counts.items(), key=lambda kv: list(words).index(kv[0])
                                                                  if kv[0] in words else 9))
    text = (f"Versions {tl.from_version}..{tl.to_version}: {len(commits)} commit(s){span}; "
            f"{len(windows)} had other commits land between their read and their commit" + (f" ({said})" if said else ""))
    n = len(tl.attempts)
    text += f"; {n} aborted attempt(s) found from orphan files." if tl.evidence else "; aborted attempts were not looked for."
    return text


def verdict_rule(s: Span) -> str:
    """The rule behind a verdict, in words (the verdict table and the story)."""
    if s.verdict in ("anomaly", "aborted"):
        where = partitions([s.partition]) if s.partition is not None else ""
        return (f"{rule_in_words(s.rule)}: {rule_meaning(s.rule)}" + (f" ({where})" if where else "")
                + (f"; {'it most likely failed' if s.kind == 'attempt' else 'the engine aborts it'} with {s.exception}"
                   if s.exception else ""))
    if s.verdict == "reordered":
        level = s.isolation_level
        why = ("a blind append does not conflict under WriteSerializable" if level == "WriteSerializable"
               else f"{level or 'this isolation level'} does not check concurrent appends")
        later = ", ".join(f"v{x}" for x in s.reordered_before)
        return f"{rule_in_words('appends')} forgiven: {why}; it counts as committed before {later}"
    if s.verdict == "clean":
        n = len(s.window)
        return f"none fired against the {n} commit(s) in its window" if n else "none fired"
    if s.verdict == "skipped":
        return f"not checked: {in_words(s.why)}"
    return in_words(s.why)


def span_story(s: Span, tl: Timeline, utc: bool | None = None) -> list[str]:
    """Sentences for one conflict from the timeline alone (no explanation to hand)."""
    labels = {w.id: w.label for w in tl.writers}
    by = labels.get(s.writer, s.writer)
    sure = f"How sure: {s.certainty}" + (f": {in_words(s.why)}" if s.certainty != "exact" and s.why else "") + "."
    if s.kind == "attempt":
        where = partitions(s.partitions) or "an unknown place"
        at = f" around {when(s.file_time_ms, utc)}" if s.file_time_ms is not None else ""  # only a trusted file time
        lost = (f"; it lost to {s.one_of}" if s.one_of and s.one_of.startswith("one of") else
                f"; it most likely lost to v{s.winning_version}" if s.winning_version is not None else "")
        first = f"An aborted attempt ({by}) wrote {len(s.files)} file(s) in {where}{at} and never reached the log{lost}"
        retry = f"; its re-run most likely landed as v{s.retry_version}" if s.retry_version is not None else ""
        return [first + retry + ".", f"Rule: {verdict_rule(s)}.", sure]
    first = (f"v{s.version} {s.operation or '(no operation recorded)'} by {by} committed {when(s.end_ms, utc)}"
             + (f"; it read v{s.read_version}" if s.read_version is not None else "") + ".")
    if s.verdict == "anomaly":
        second = (f"v{s.winning_version} landed first, and the rules abort v{s.version} against it, yet it committed"
                  + (f" ({in_words(s.likely_reason)})" if s.likely_reason else "") + ".")
    else:
        second = f"{', '.join(f'v{x}' for x in s.reordered_before)} landed in between."
    return [first, second, f"Rule: {verdict_rule(s)}.", sure]

"""Stable placeholders for the identities in a report that leaves the team (`--redact`).

A post-mortem shared outside the team must still tell its story (the same user is `user-1`
everywhere in one report, the cluster that lost is `cluster-2` in the story, the chart and the
table) while saying nothing about who or where: user names and ids, e-mail addresses, notebook
ids and paths, cluster ids, job ids, names and run ids, bucket/container/account and host names
in URIs, and the user name in a home directory path. Placeholders are numbered per kind in order
of first appearance (the log's commits in version order first, then the payload as it is walked);
they are never derived from the value, so nothing can be reversed.

What is not an identity stays: operations, predicates, partition values, file names, engine
versions, the delta-rs `writer` property and streaming app ids. E-mail addresses and URIs are
found anywhere in any string; the values the log names as identities are replaced wherever
they occur as a whole token (`user:5113846617090401`, `cluster 0611-093015-k3v9q2lm`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping

if TYPE_CHECKING:
    import polars as pl

    from forensics.analysis.timeline import Timeline

KINDS = ("user", "notebook", "cluster", "job", "run", "bucket", "container", "account", "host")

# commitInfo fields (camelCase as in the log and `history --json`, snake_case as in the commit
# index) -> kind; the fields of one group in one record name one identity (userName and userId of
# one commit are one user).
IDENTITY_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("user", ("userName", "user_name", "userId", "user_id")),
    ("cluster", ("clusterId", "cluster_id")),
    ("notebook", ("notebookId", "notebook_id", "notebookPath", "notebook_path")),
    ("job", ("jobId", "job_id", "jobName", "job_name")),
    ("run", ("jobRunId", "runId", "run_id")),
    ("user", ("jobOwnerId",)),
)
IDENTITY_KEYS: dict[str, str] = {k: kind for kind, keys in IDENTITY_GROUPS for k in keys}
NESTED_KEYS = ("notebook", "job")  # commitInfo.notebook / commitInfo.job: an object (or its JSON text)

_PLACEHOLDER = re.compile(r"(?:%s)-\d+" % "|".join(KINDS))
# Bucket-style URI schemes: the authority is a bucket (or an Azure container); hosts otherwise.
_BUCKET_SCHEMES = {"s3", "s3a", "s3n", "gs", "gcs", "oss", "r2", "cos"}
_CONTAINER_SCHEMES = {"az", "azure", "abfs", "abfss", "wasb", "wasbs", "adl"}
_AZURE_SUFFIXES = (".dfs.core.windows.net", ".blob.core.windows.net", ".azuredatalakestore.net",
                   ".dfs.fabric.microsoft.com", ".onelake.dfs.fabric.microsoft.com")
# Bounded scheme after a non-scheme character: linear time on hostile strings.
_URI = re.compile(r"(?<![A-Za-z0-9+.-])(?P<scheme>[A-Za-z][A-Za-z0-9+.-]{0,31})://(?P<auth>[A-Za-z0-9._~%!$&*+=:@\[\]-]*)")
_DOMAIN = re.compile(r"[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_AT_TAIL = re.compile(r"[A-Za-z0-9._%+-]*")
_LOCAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%+-")
_HOME = re.compile(r"(?i:/home/|/users/|\\users\\)(?P<name>[^/\\\s\"'<>:;,]+)")
_TOKEN = re.compile(r"[A-Za-z0-9_.%+-]+")
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_EDGE = "._%+-"
REDACTED_NOTE = ("identities redacted: user names, e-mail addresses, notebook, cluster and job ids, bucket, container, "
                 "account and host names are stable placeholders (user-1, cluster-1, bucket-1, host-1, ...)")
MIN_TEXT_LEN = 3  # shorter identity values are replaced only where a field holds them whole,
MIN_DIGITS = 6  # and so are short numbers (a job id 123 in text is more likely a count)


def _trie_pattern(words: Iterable[str]) -> str:
    """One regex for many literal words, shared prefixes factored out: fast to match."""
    trie: dict[str, Any] = {}
    for w in words:
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict[str, Any]) -> str:
        alts = [re.escape(ch) + build(node[ch]) for ch in sorted(k for k in node if k)]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return f"(?:{body})?" if "" in node else body

    return build(trie)


@dataclass
class Redactor:
    """Replaces identities with `user-1`, `cluster-1`, `bucket-1`, ...; the same value, the same
    placeholder, for the life of one Redactor (one report)."""

    _maps: dict[str, dict[str, str]] = field(default_factory=dict, repr=False)
    _counts: dict[str, int] = field(default_factory=dict, repr=False)
    _tokens: dict[str, str] = field(default_factory=dict, repr=False)  # token-shaped values, matched per token
    _odd: dict[str, str] = field(default_factory=dict, repr=False)  # values with spaces, slashes...: one regex
    _odd_re: re.Pattern[str] | None = field(default=None, repr=False)

    # ---- learning what the identities are -------------------------------------------------

    @classmethod
    def for_table(cls, commits: "pl.DataFrame | None" = None, location: str | None = None) -> "Redactor":
        """Seeded with the table's location and every commit's identities, in version order."""
        r = cls()
        if location:
            r.learn_location(location)
        if commits is not None and commits.height:
            cols = [c for c in ("user_name", "user_id", "cluster_id", "notebook", "job") if c in commits.columns]
            frame = commits.sort("version").select(cols).unique(maintain_order=True) if cols else None
            for row in frame.iter_rows(named=True) if frame is not None else ():
                r.learn_record(row)
        return r

    def learn_record(self, record: Mapping[str, Any]) -> None:
        """The identities one record (a commitInfo, a history row) names; a group's fields are one identity."""
        for kind, keys in IDENTITY_GROUPS:
            self._link(kind, [record.get(k) for k in keys])
        for k in NESTED_KEYS:
            nested = record.get(k)
            if isinstance(nested, str) and nested.startswith("{"):
                try:
                    nested = json.loads(nested)
                except ValueError:
                    continue
            if isinstance(nested, Mapping):
                self.learn_record(nested)

    def learn_location(self, location: str) -> None:
        """A table URI's bucket, container or account, also where it appears outside a URI (the
        mirror of a remote log is a local path that names the bucket)."""
        self.text(location)
        for m in _URI.finditer(location):
            userinfo, _, hostport = m.group("auth").rpartition("@")
            host = hostport.split(":")[0].lower()
            account = next((host[: -len(x)] for x in _AZURE_SUFFIXES if host.endswith(x)), "")
            for value in (userinfo, host, account):
                for kind in ("bucket", "container", "account"):
                    ph = self._maps.get(kind, {}).get(value.lower())
                    if value and ph:
                        self._register(kind, value, ph)

    def learn(self, obj: Any) -> None:
        """Every record with identity fields anywhere in a payload (dicts and lists, recursively)."""
        if isinstance(obj, Mapping):
            if any(k in obj for k in IDENTITY_KEYS) or any(k in obj for k in NESTED_KEYS):
                self.learn_record(obj)
            for v in obj.values():
                self.learn(v)
        elif isinstance(obj, (list, tuple)):
            for v in obj:
                self.learn(v)

    def _link(self, kind: str, values: list[Any]) -> None:
        vals = [str(v).strip() for v in values if isinstance(v, (str, int)) and not isinstance(v, bool) and str(v).strip()]
        vals = [v for v in vals if not _PLACEHOLDER.fullmatch(v)]
        if not vals:
            return
        known = self._maps.setdefault(kind, {})
        ph = next((known[self._key(v)] for v in vals if self._key(v) in known), None) or self._new(kind)
        for v in vals:
            self._register(kind, v, ph)

    @staticmethod
    def _key(value: str) -> str:
        return value.lower() if "@" in value else value  # e-mail addresses and host names ignore case

    def _new(self, kind: str) -> str:
        self._counts[kind] = self._counts.get(kind, 0) + 1
        return f"{kind}-{self._counts[kind]}"

    def _register(self, kind: str, value: str, ph: str, *, in_text: bool = True) -> None:
        """Remember `value`; `in_text`: also replace it wherever it stands as a whole token in any string."""
        self._maps.setdefault(kind, {}).setdefault(self._key(value), ph)
        if not in_text or len(value) < MIN_TEXT_LEN or (value.isdigit() and len(value) < MIN_DIGITS) or _EMAIL.fullmatch(value):
            return  # too short to find safely in text; e-mail addresses are found by their shape
        if _TOKEN.fullmatch(value):
            self._tokens.setdefault(value, ph)
        elif value not in self._odd:
            self._odd[value] = ph
            self._odd_re = None

    def placeholder(self, kind: str, value: str) -> str:
        """The placeholder of `value` as a `kind` (a new one on first sight); placeholders stay."""
        if _PLACEHOLDER.fullmatch(value):
            return value
        known = self._maps.setdefault(kind, {}).get(self._key(value))
        if known is None:
            known = self._new(kind)
            self._register(kind, value, known, in_text=False)
        return known

    # ---- replacing -------------------------------------------------------------------------

    def apply(self, obj: Any) -> Any:
        """A redacted copy of a JSON-like payload: every string (keys too), identity fields whole."""
        self.learn(obj)
        return self._apply(obj, None)

    def _apply(self, obj: Any, key: str | None) -> Any:
        if isinstance(obj, str):
            kind = IDENTITY_KEYS.get(key or "")
            return self.placeholder(kind, obj.strip()) if kind and obj.strip() else self.text(obj)
        if isinstance(obj, int) and not isinstance(obj, bool) and key in IDENTITY_KEYS:
            return self.placeholder(IDENTITY_KEYS[key], str(obj))
        if isinstance(obj, Mapping):
            # keys are field names (a span's `window`, a partition column): only what has an identity's shape
            return {self.text(k, learned=False) if isinstance(k, str) else k: self._apply(v, k if isinstance(k, str) else None)
                    for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [self._apply(v, None) for v in obj]
        return obj

    def timeline(self, tl: "Timeline") -> "Timeline":
        """A redacted copy of a Timeline (what every export format is made from)."""
        from forensics.analysis.timeline import Timeline

        out = Timeline.from_json(self.apply(tl.to_dict()))
        out.findings = list(tl.findings)  # for --strict; never exported
        out.notes.append(REDACTED_NOTE)
        return out

    def text(self, s: str, *, learned: bool = True) -> str:
        """One string with every identity in it replaced (`learned=False`: e-mails, URIs and home
        directories only, not the values the log named)."""
        if not s:
            return s
        protected: list[tuple[int, int, str]] = []
        authorities: list[tuple[int, int]] = []
        if "://" in s:
            for m in _URI.finditer(s):
                a0, a1 = m.span("auth")
                authorities.append((a0, a1))
                rep = self._authority(m.group("scheme").lower(), m.group("auth"))
                if rep != m.group("auth"):
                    protected.append((a0, a1, rep))
        if "@" in s:
            protected += self._emails(s, authorities)
            protected.sort()
        candidates = self._known(s, learned)
        if not protected and not candidates:
            return s
        spans = _merge(protected, candidates)
        out, pos = [], 0
        for a, b, rep in spans:
            out.append(s[pos:a])
            out.append(rep)
            pos = b
        out.append(s[pos:])
        return "".join(out)

    def _emails(self, s: str, authorities: list[tuple[int, int]]) -> list[tuple[int, int, str]]:
        """Every `local@dotted.domain` outside a URI authority; linear in len(s)."""
        out: list[tuple[int, int, str]] = []
        floor, i = 0, s.find("@")
        while i != -1:
            auth = next(((a, b) for a, b in authorities if a <= i < b), None)
            if auth is not None:
                floor, i = auth[1], s.find("@", auth[1])
                continue
            m = _DOMAIN.match(s, i + 1)
            if m is None:
                i = s.find("@", i + 1)
                continue
            lo = max(floor, i - 64)
            start = i
            while start > lo and s[start - 1] in _LOCAL:
                start -= 1
            end = m.end()
            while end < len(s) and s[end] == "@":  # a@b.c@d.e: one blob, nothing of it left
                end = _AT_TAIL.match(s, end + 1).end()  # type: ignore[union-attr]
            out.append((start, end, self.placeholder("user", s[start:end])))
            floor, i = end, s.find("@", end)
        return out

    def _authority(self, scheme: str, auth: str) -> str:
        """`user:pw@host:port` with user and host replaced; an Azure container@account keeps its suffix."""
        if not auth:
            return auth
        userinfo, _, hostport = auth.rpartition("@")
        host, port = hostport, ""
        if not hostport.startswith("["):
            h, sep, p = hostport.rpartition(":")
            if sep and p.isdigit():
                host, port = h, ":" + p
        out = ""
        if userinfo:
            kind = "container" if scheme in _CONTAINER_SCHEMES else "user"
            out = self.placeholder(kind, userinfo.split(":", 1)[0]) + "@"  # a password never survives
        if host:
            low = host.lower()
            suffix = next((x for x in _AZURE_SUFFIXES if low.endswith(x) and len(low) > len(x)), None)
            if suffix:
                out += self.placeholder("account", low[: -len(suffix)]) + suffix
            elif scheme in _CONTAINER_SCHEMES:
                out += self.placeholder("container" if not userinfo else "account", low)
            else:
                out += self.placeholder("bucket" if scheme in _BUCKET_SCHEMES else "host", low)
        return out + port

    def _known(self, s: str, learned: bool = True) -> list[tuple[int, int, str]]:
        """Spans of learned identity values (whole tokens) and home-directory user names."""
        out: list[tuple[int, int, str]] = []
        if self._odd and learned:
            if self._odd_re is None:
                self._odd_re = re.compile(r"(?<![A-Za-z0-9])(?:%s)(?![A-Za-z0-9])" % _trie_pattern(self._odd))
            out += [(m.start(), m.end(), self._odd[m.group()]) for m in self._odd_re.finditer(s)]
        if self._tokens and learned:
            for m in _TOKEN.finditer(s):
                t = m.group()
                ph = self._tokens.get(t)
                if ph is not None:
                    out.append((m.start(), m.end(), ph))
                    continue
                core = t.strip(_EDGE)
                if core and core != t and core in self._tokens:
                    a = m.start() + t.index(core)
                    out.append((a, a + len(core), self._tokens[core]))
        if "/" in s or "\\" in s:
            for m in _HOME.finditer(s):
                name = m.group("name")
                if not _PLACEHOLDER.fullmatch(name):
                    out.append((m.start("name"), m.end("name"), self.placeholder("user", name)))
        return out


def _merge(protected: list[tuple[int, int, str]], candidates: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Non-overlapping spans: e-mails and URI authorities always; a learned value only where it
    overlaps none of them, or holds every one it overlaps whole (a notebook path with an e-mail)."""
    taken = list(protected)
    for a, b, rep in sorted(candidates, key=lambda c: (c[0], c[0] - c[1])):
        inside = [p for p in taken if p[0] < b and a < p[1]]
        if all(a <= p[0] and p[1] <= b and p in protected for p in inside):
            for p in inside:
                taken.remove(p)
            taken.append((a, b, rep))
    return sorted(taken)

"""Parse the partition hint printed in ConcurrentAppend / DeleteRead texts (conflict-rules §7.1, §7.3).

delta-spark prints `partition [c1=v1, c2=v2]` (partition-schema order, logical names) or
`the root of the table`; 4.1+ prints `[c1=v1, c2=v2]` with a missing value as `null`. Values
are not quoted, so a value holding `, x=` is ambiguous: we split only before `, name=`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ROOT = "the root of the table"
# split before ", <name>=" where name has no spaces, commas, '=' or brackets
_SPLIT = re.compile(r", (?=[^,=\[\]\s][^,=\[\]]*=)")


@dataclass(frozen=True)
class PartitionHint:
    values: dict[str, str | None]  # {} = root of the table
    text: str  # as printed
    complete: bool  # False when the closing bracket was cut off (last pair dropped)


def parse_partition(text: str | None) -> PartitionHint | None:
    """`[a=1, b=x]` -> {"a": "1", "b": "x"}; `the root of the table` -> {}.

    `null` becomes None (Delta prints a null partition value as `null`; a string value
    "null" cannot be told apart and is read as null too). When the text is cut before `]`,
    the last pair may be cut too and is dropped.
    """
    if text is None:
        return None
    t = text.strip()
    if t.startswith("partition "):
        t = t[len("partition ") :].strip()
    if t == ROOT:
        return PartitionHint({}, ROOT, True)
    if not t.startswith("["):
        return None
    complete = t.endswith("]")
    body = t[1:-1] if complete else t[1:]
    pairs = [p for p in _SPLIT.split(body) if p != ""] if body.strip() else []
    if not complete and pairs:
        pairs = pairs[:-1]
    values: dict[str, str | None] = {}
    for p in pairs:
        if "=" not in p:
            continue
        k, v = p.split("=", 1)
        k = k.strip()
        if not k:
            continue
        values[k] = None if v == "null" else v
    return PartitionHint(values, t, complete)

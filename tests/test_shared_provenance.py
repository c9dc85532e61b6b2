"""Our conformance scenarios against the reference material they were taken from.

A provenance check, not a conformance test: it needs ../shared (the test-suite scenarios as
first written down there) and skips cleanly where that is absent. Every shared case must be
represented by exactly one shipped scenario of the same source test, with the same outcome, in
our own words.
"""

from __future__ import annotations

import json

import pytest

from forensics.conformance.cases import SOURCE_KEYS, load_scenarios


@pytest.fixture(scope="module")
def scenarios() -> list[dict]:
    return load_scenarios()


# --------------------------------------------------------------------------------------


def _shared_outcome(case: dict) -> tuple[str, str | None]:
    """(outcome, error class) of a shared-file case, in our terms."""
    raw = str(case["expected"]).strip()
    head = raw.split("(")[0].strip()
    inner = raw[raw.find("(") + 1:raw.rfind(")")] if "(" in raw else ""
    error_class = case.get("expected_error_class") or case.get("expected_error_class_contains")
    if head != "CommitConflict" and inner and inner.replace("_", "").replace(".", "").isalnum() and inner.isupper():
        error_class = error_class or inner  # `X(ERROR_CLASS)`
    return head, error_class


@pytest.mark.shared
def test_every_shared_case_is_represented(shared_dir, scenarios):
    cases = json.loads((shared_dir / "conformance" / "cases.json").read_text())["cases"]
    by_source: dict[tuple, list[dict]] = {}
    for s in scenarios:
        if all(k in s["source"] for k in SOURCE_KEYS):  # engine tests; documentation rows name a page instead
            by_source.setdefault(tuple(s["source"][k] for k in SOURCE_KEYS), []).append(s)
    missing, differ = [], []
    for case in cases:
        key = tuple(case["source"][k] for k in SOURCE_KEYS)
        found = by_source.get(key, [])
        if len(found) != 1:
            missing.append((key, len(found)))
            continue
        s = found[0]
        outcome, error_class = _shared_outcome(case)
        if (s["engine"], s["expected"]["outcome"], s["expected"].get("error_class")) != \
                (case["engine"], outcome, error_class):
            differ.append((s["id"], case["expected"], s["expected"]))
        assert s["title"] != case["name"], f"{s['id']}: the title is the shared file's wording"
    assert missing == []
    assert differ == []

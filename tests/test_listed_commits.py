"""The names-only listing the TUI paints first (`listing.commit_versions_local`) finds exactly the
commit files `commit_version` finds, one name at a time, whatever else the folder holds: names
with newlines, near-misses, gaps, checkpoints. Real files in a real folder, drawn by hypothesis."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forensics.log.listing import commit_version, commit_versions_local

_versions = st.integers(min_value=0, max_value=10**6)
_OTHER_DIGITS = {ord("0") + i: chr(0x0660 + i) for i in range(10)}  # ARABIC-INDIC DIGIT ZERO..NINE
_commit = _versions.map(lambda v: f"{v:020d}.json")
_near = st.one_of(
    _versions.map(lambda v: f"{v:020d}.json.tmp"),
    _versions.map(lambda v: f"{v:020d}.checkpoint.parquet"),
    _versions.map(lambda v: f"{v:020d}.crc"),
    _versions.map(lambda v: f"{v:019d}.json"),  # 19 digits
    _versions.map(lambda v: f"{v:021d}.json"),  # 21 digits
    _versions.map(lambda v: f"x{v:020d}.json"),
    _versions.map(lambda v: f"{v:020d}".translate(_OTHER_DIGITS) + ".json"),  # digits, but not ASCII ones
    _versions.map(lambda v: f"{v:020d}.jsonx"),
    _versions.map(lambda v: f"a\n{v:020d}.json"),  # a newline before a commit's name
    _versions.map(lambda v: f"{v:020d}.json\nb"),  # and after it
    _versions.map(lambda v: f"\n{v:020d}.json\n"),
    st.text(alphabet=st.characters(blacklist_characters="/\0", blacklist_categories=("Cs",)), min_size=1, max_size=30),
)
_contiguous = st.tuples(st.integers(0, 50), st.integers(0, 40)).map(lambda t: [f"{v:020d}.json" for v in range(t[0], t[0] + t[1])])


def _folder(names: set[str]) -> Path:
    root = Path(tempfile.mkdtemp(prefix="listed-"))
    log = root / "_delta_log"
    log.mkdir()
    for n in names:
        if n in (".", "..") or len(n.encode("utf-8", "surrogatepass")) > 255:
            continue
        try:
            (log / n).write_bytes(b"{}")
        except (OSError, UnicodeEncodeError):
            pass  # a name this file system refuses
    return root


def _expected(root: Path) -> list[int]:
    return sorted(v for n in os.listdir(root / "_delta_log") if (v := commit_version(n)) is not None)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_contiguous, st.lists(_commit, max_size=30)), st.lists(_near, max_size=15))
def test_the_names_alone_give_every_commit_and_nothing_else(commits, others):
    root = _folder(set(commits) | set(others))
    try:
        want = _expected(root)
        assert commit_versions_local(str(root), times=False) == [(v, None) for v in want]
        timed = commit_versions_local(str(root), times=True)
        assert [v for v, _ in timed] == want  # every one a regular file here
        assert all(isinstance(t, int) for _, t in timed)
    finally:
        shutil.rmtree(root)


def test_only_ascii_digits_name_a_commit(tmp_path):
    """Delta matches commit and checkpoint names with Java's `\\d`, ASCII digits only; other
    scripts' digits (which Python's `\\d` and `int` accept) name no version: a stray file."""
    from forensics.log.listing import list_log

    arabic = "0".translate(_OTHER_DIGITS) * 19 + "1".translate(_OTHER_DIGITS)
    log = tmp_path / "_delta_log"
    log.mkdir()
    (log / "00000000000000000000.json").write_text("{}")
    for name in (f"{arabic}.json", f"{arabic}.checkpoint.parquet", f"{arabic}.crc"):
        (log / name).write_text("{}")
        assert commit_version(name) is None
    listing = list_log(str(tmp_path))
    assert listing.versions == [0] and not listing.checkpoints and not listing.crc
    assert sorted(f.file for f in listing.findings if f.code == "stray.unknown") == sorted(
        f"_delta_log/{arabic}{ext}" for ext in (".json", ".checkpoint.parquet", ".crc"))
    assert commit_versions_local(str(tmp_path), times=False) == [(0, None)]
    # nor in a remote log's keys, whose versions place the tail a refresh lists
    from forensics.storage.mirror import _version_of

    assert _version_of(f"_delta_log/{arabic}.json") is None
    assert _version_of("_delta_log/00000000000000000042.json") == 42

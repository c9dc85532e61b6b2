"""`positional_builder` (forensics/model.py): the fast way replay and the commit index build
FileActions and CommitRecords gives the very object the dataclass's own constructor gives, still
frozen, for any values."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.model import CommitRecord, FileAction, Metadata, new_commit_record, new_file_action, positional_builder

_value = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=6),
                   st.dictionaries(st.text(max_size=3), st.one_of(st.none(), st.text(max_size=3)), max_size=2),
                   st.lists(st.integers(), max_size=2))


def _values(cls):
    return st.tuples(*[_value] * len(dataclasses.fields(cls)))


@pytest.mark.parametrize("cls,build", [(FileAction, new_file_action), (CommitRecord, new_commit_record)])
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_built_equals_constructed_and_stays_frozen(cls, build, data):
    values = data.draw(_values(cls))
    got, want = build(*values), cls(*values)
    assert type(got) is cls and got == want and repr(got) == repr(want)
    assert [getattr(got, f.name) for f in dataclasses.fields(cls)] == list(values)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(got, dataclasses.fields(cls)[0].name, 1)
    assert dataclasses.replace(got) == want and copy.copy(got) == want and pickle.loads(pickle.dumps(got)) == want


def test_every_value_is_required_and_only_slotted_dataclasses_qualify():
    with pytest.raises(TypeError):
        new_file_action(1, "add")  # no defaults: a value left out is an error, not a default
    with pytest.raises(TypeError, match="not a slotted dataclass"):
        positional_builder(Metadata)

"""The wire form of reward items (arbiter.rewards.wire): what trainers put in extra_info (numpy
scalars and arrays, bytes, tuples, nested dicts, ``$`` keys) survives the trip to ``arbiter serve``
as values the reward reads alike, and the JSON text it makes is plain JSON."""

from __future__ import annotations

import json
from decimal import Decimal

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.rewards.wire import BYTES_KEY, from_wire, item_to_wire, to_wire


def trip(value):
    return from_wire(json.loads(json.dumps(to_wire(value), allow_nan=True)))


def test_numpy_and_pyarrow_values_become_the_plain_values_they_hold():
    value = {"num_turns": np.int64(2), "ratio": np.float32(0.5), "flag": np.bool_(True), "name": np.str_("apps"),
             "ids": np.array([1, 2, 3]), "rows": np.array([{"a": np.int32(1)}], dtype=object),
             "arrow": pa.scalar(7), "list": pa.array([1, None]), "tuple": (1, (2, 3)), "limit": Decimal("1.5")}
    got = trip(value)
    assert got == {"num_turns": 2, "ratio": 0.5, "flag": True, "name": "apps", "ids": [1, 2, 3], "rows": [{"a": 1}],
                   "arrow": 7, "list": [1, None], "tuple": [1, [2, 3]], "limit": 1.5}
    assert type(got["num_turns"]) is int and type(got["flag"]) is bool and type(got["name"]) is str


def test_bytes_come_back_as_bytes_and_dollar_keys_as_they_were():
    value = {"blob": b"\x00\xffhi", BYTES_KEY: "not bytes", "$$x": [bytearray(b"ab")], "nested": {"k": {"$bytes": 1}}}
    assert trip(value) == {"blob": b"\x00\xffhi", BYTES_KEY: "not bytes", "$$x": [b"ab"], "nested": {"k": {"$bytes": 1}}}


def test_other_objects_travel_as_their_text():
    class Odd:
        def __str__(self):
            return "odd"

    assert trip({"index": Odd(), 3: "int key", b"k": 1}) == {"index": "odd", "3": "int key", "k": 1}


def test_an_item_is_an_object_of_the_four_fields():
    item = ("apps", "text", '{"inputs": [], "outputs": []}', {"index": np.int64(3)})
    assert item_to_wire(item) == {"data_source": "apps", "solution_str": "text",
                                  "ground_truth": '{"inputs": [], "outputs": []}', "extra_info": {"index": 3}}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text() | st.binary(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_any_plain_value_with_bytes_round_trips(value):
    assert trip(value) == value

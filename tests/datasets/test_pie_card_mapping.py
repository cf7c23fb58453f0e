"""The card functions take a row as Hugging Face ``datasets`` yields it (a plain mapping of the card's columns)
as well as a parsed ``PieRow`` / ``PieBysrcRow``, with the same results."""

from __future__ import annotations

import random

import pytest

from arbiter.datasets.pie.card import (
    as_row, ceiling_speedup, fastest_speedup, flag_low_headroom, oracle_speedup, oracle_ticks, speedup,
)
from arbiter.datasets.pie.errors import PieRowError
from arbiter.datasets.pie.rows import parse_row
from test_pie_rows import make_bysrc_raw, make_pairs_raw


def test_pairs_mapping_gives_the_same_figures_as_the_parsed_row():
    raw = make_pairs_raw()
    row = parse_row(raw)
    assert speedup(raw) == speedup(row)
    assert speedup(raw, 1, random.Random(3)) == speedup(row, 1, random.Random(3))
    assert fastest_speedup(raw) == fastest_speedup(row)
    assert ceiling_speedup(raw) == ceiling_speedup(row)
    assert flag_low_headroom(raw) == flag_low_headroom(row)
    assert as_row(row) is row


def test_bysrc_mapping_gives_the_same_figures_as_the_parsed_row():
    raw = make_bysrc_raw()
    row = parse_row(raw, kind="bysrc")
    assert speedup(raw) == speedup(row) == oracle_speedup(raw)
    assert oracle_ticks(raw) == oracle_ticks(row)


def test_a_bad_mapping_names_the_column_and_other_types_raise_type_error():
    raw = make_pairs_raw()
    raw["gem5_src_per_tc_ticks"] = "not json"
    with pytest.raises(PieRowError, match="gem5_src_per_tc_ticks"):
        speedup(raw)
    with pytest.raises(TypeError):
        speedup(["not", "a", "row"])

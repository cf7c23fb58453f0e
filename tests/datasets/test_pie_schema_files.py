"""PIE files as users load them: PIE's own ``val.jsonl`` (real rows, ``realdata/pie_purdue``) read by ``iter_rows``
as PIE-schema rows with a statement of what they lack, and the card functions on a plain mapping that holds only
the columns they read (what ``load_dataset(..., columns=[...])`` yields)."""

from __future__ import annotations

import json
import random
import warnings

import pytest

from arbiter.datasets.pie.card import ceiling_speedup, fastest_speedup, flag_low_headroom, oracle_speedup, speedup
from arbiter.datasets.pie.errors import PieRowError, RowIssues
from arbiter.datasets.pie.read import PieReleaseRows, iter_rows, load_rows
from arbiter.datasets.pie.rows import PIE_RELEASE_LACKS, PiePair, parse_row
from test_pie_rows import make_bysrc_raw, make_pairs_raw

SPEEDUP_COLUMNS = ["gem5_src_per_tc_ticks", "gem5_tgt_per_tc_ticks", "usable_case_ids"]


@pytest.fixture(scope="module")
def val_jsonl(shared):
    path = shared / "realdata" / "pie_purdue" / "val.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return path


def test_pie_val_jsonl_loads_as_pie_schema_rows_saying_what_it_lacks(val_jsonl):
    plain = [json.loads(line) for line in val_jsonl.read_text(encoding="utf-8").splitlines() if line.strip()]
    with pytest.warns(PieReleaseRows) as caught:
        rows = list(iter_rows(val_jsonl))
    assert len(caught) == 1  # said once for the file, not per row
    message = str(caught[0].message)
    assert message.startswith("val.jsonl: PIE release rows (PIE's own schema)") and PIE_RELEASE_LACKS in message
    for column in ("gem5_src_per_tc_ticks", "usable_case_ids", "our_speedup_usable"):
        assert column in message
    assert not [r for r in rows if isinstance(r, RowIssues)]
    assert len(rows) == len(plain) and all(isinstance(r, PiePair) for r in rows)
    assert [(r.problem_id, r.src_id, r.tgt_id) for r in rows] == [(p["problem_id"], p["src_id"], p["tgt_id"])
                                                                 for p in plain]
    assert [r.speedup for r in rows] == pytest.approx([float(p["speedup"]) for p in plain])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # asked for by name: nothing to warn about
        assert len(load_rows(val_jsonl, kind="pie")) == len(plain)


def test_card_functions_on_a_pie_release_row_say_what_it_lacks(val_jsonl):
    with pytest.warns(PieReleaseRows):
        row = next(iter_rows(val_jsonl))
    with pytest.raises(TypeError, match="has no gem5 timings") as ei:
        speedup(row)
    assert "usable_case_ids" in str(ei.value)
    # the raw line is a mapping without the gem5 columns: the error names the first column read, only that one
    raw = json.loads(val_jsonl.read_text(encoding="utf-8").splitlines()[0])
    with pytest.raises(PieRowError) as ei:
        speedup(raw)
    assert ei.value.error.columns in (("gem5_tgt_per_tc_ticks",), ("usable_case_ids",), ("gem5_src_per_tc_ticks",))


def card_snippet(row: dict, k: int = -1, rng: random.Random | None = None, tgt: str = "gem5_tgt_per_tc_ticks"):
    """The card's own snippet ("How to compute the reward"), verbatim but for K and the generator."""
    src = json.loads(row["gem5_src_per_tc_ticks"])
    tg = json.loads(row[tgt])
    usable = json.loads(row["usable_case_ids"])
    cases = usable if k < 0 else rng.sample(usable, min(k, len(usable)))
    return sum(src[str(c)] for c in cases) / sum(tg[str(c)] for c in cases)


def test_card_functions_take_a_mapping_of_only_the_columns_they_read():
    full = make_pairs_raw()
    only = {c: full[c] for c in SPEEDUP_COLUMNS}
    assert speedup(only) == speedup(parse_row(full)) == pytest.approx(card_snippet(full))
    assert speedup(only, 2, random.Random(5)) == pytest.approx(card_snippet(full, 2, random.Random(5)))
    assert oracle_speedup(only) == speedup(only)  # a bysrc view of the same columns: tgt is the snippet's column
    need = {c: full[c] for c in ("gem5_src_per_tc_ticks", "usable_case_ids")}
    assert ceiling_speedup(need) == ceiling_speedup(parse_row(full))
    assert flag_low_headroom(need) == flag_low_headroom(parse_row(full))
    fast = {**need, "gem5_fastest_per_tc_ticks": full["gem5_fastest_per_tc_ticks"]}
    assert fastest_speedup(fast) == fastest_speedup(parse_row(full))
    # a missing or bad column is named alone, never the 30+ columns the function does not read
    with pytest.raises(PieRowError) as ei:
        fastest_speedup(only)
    assert ei.value.error.columns == ("gem5_fastest_per_tc_ticks",)
    with pytest.raises(PieRowError) as ei:
        speedup({**only, "usable_case_ids": "[0, 0]"})
    assert ei.value.error.columns == ("usable_case_ids",)


def test_bysrc_oracle_columns_alone_give_the_oracle_speedup():
    full = make_bysrc_raw()
    only = {c: full[c] for c in ("gem5_src_per_tc_ticks", "gem5_oracle_per_tc_ticks", "usable_case_ids")}
    assert oracle_speedup(only) == oracle_speedup(full) == speedup(parse_row(full, kind="bysrc"))
    assert oracle_speedup(only) == pytest.approx(card_snippet(full, tgt="gem5_oracle_per_tc_ticks"))


def test_hugging_face_rows_with_selected_columns_get_the_reward():
    datasets = pytest.importorskip("datasets")
    raws = [make_pairs_raw(), make_pairs_raw(src_id="s2")]
    ds = datasets.Dataset.from_list(raws).select_columns(SPEEDUP_COLUMNS)
    got = [speedup(row) for row in ds]
    assert got == [speedup(parse_row(r)) for r in raws]

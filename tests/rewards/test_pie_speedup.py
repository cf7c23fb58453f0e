"""The card's reward ("How to compute the reward"), the startup ceiling, and the reward transforms.

Rows come from tests/test_pie_rows.py (its docstring has the tick table). In millions of ticks (M):

    case        0     1     2     4        (usable, pairs row)
    src       400   600   200  1000        sum 2200
    tgt       100   200   100   200        sum  600   -> speedup 2200/600 = 11/3
    fastest    50   100    50   100        sum  300   -> fastest 2200/300 = 22/3
    per-case src/tgt: 4, 3, 2, 5
"""

from __future__ import annotations

import itertools
import json
import math
import random

import pytest

try:
    from test_pie_rows import FASTEST, SRC, TGT, M, make_bysrc_raw, make_pairs_raw
except ImportError:  # tests/ imported as a package
    from tests.test_pie_rows import FASTEST, SRC, TGT, M, make_bysrc_raw, make_pairs_raw

from arbiter.datasets.pie.rows import parse_row
from arbiter.datasets.pie.card import (
    STARTUP_FLOOR_TICKS,
    PieRewardError,
    ceiling_speedup,
    fastest_speedup,
    flag_low_headroom,
    oracle_speedup,
    oracle_ticks,
    select_cases,
    speedup,
    sum_ratio,
    ticks_to_seconds,
)
from arbiter.rewards.pie.transforms import DEFAULT_LOG_FAILURE_PENALTY, TRANSFORMS, apply_reward, make_transform


def card_snippet(raw: dict, K: int, seed: int) -> float:
    """The card's reward code, verbatim, on a stored row (module-level random seeded)."""
    random.seed(seed)
    src = json.loads(raw["gem5_src_per_tc_ticks"])     # {idx: ticks}
    tgt = json.loads(raw["gem5_tgt_per_tc_ticks"])
    usable = json.loads(raw["usable_case_ids"])
    cases = usable if K < 0 else random.sample(usable, min(K, len(usable)))
    return sum(src[str(c)] for c in cases) / sum(tgt[str(c)] for c in cases)


@pytest.fixture
def row():
    return parse_row(make_pairs_raw(), index=0)


# ---------------------------------------------------------------------------------------- full-set reward


def test_all_cases_k_minus_one(row):
    # (400+600+200+1000) / (100+200+100+200) = 2200/600 = 11/3
    assert speedup(row, -1) == pytest.approx(11 / 3, rel=1e-15)
    assert speedup(row) == speedup(row, -7) == speedup(row, -1)  # any K < 0 means all; default is all
    assert speedup(row, -1) == pytest.approx(row.our_speedup_usable, rel=1e-15)


def test_k_equal_to_usable_is_the_full_sum(row):
    # K = len(usable) = 4: a permutation of all four cases, same sums 2200/600
    for seed in range(5):
        assert speedup(row, 4, random.Random(seed)) == pytest.approx(11 / 3, rel=1e-15)
    assert speedup(row, 4) == pytest.approx(11 / 3, rel=1e-15)  # no rng needed: nothing to sample


def test_k_above_usable_is_clamped_not_padded(row):
    # K = 10 > 4 usable: clamped to 4, so still 2200/600
    assert speedup(row, 10, random.Random(1)) == pytest.approx(11 / 3, rel=1e-15)
    assert speedup(row, 10) == pytest.approx(11 / 3, rel=1e-15)


def test_k_zero_is_an_error(row):
    with pytest.raises(ValueError, match="K = 0"):
        speedup(row, 0, random.Random(0))


def test_k_one_gives_one_per_case_ratio_and_covers_all(row):
    # per-case src/tgt: case0 400/100 = 4, case1 600/200 = 3, case2 200/100 = 2, case4 1000/200 = 5
    seen = {speedup(row, 1, random.Random(seed)) for seed in range(60)}
    assert seen == {4.0, 3.0, 2.0, 5.0}


def test_k_two_values_are_the_pairwise_ratios(row):
    # all 2-subsets of usable, on paper:
    # {0,1} 1000/300, {0,2} 600/200 = 3, {0,4} 1400/300, {1,2} 800/300, {1,4} 1600/400 = 4, {2,4} 1200/300 = 4
    paper = {1000 / 300, 3.0, 1400 / 300, 800 / 300, 4.0}
    got = {speedup(row, 2, random.Random(seed)) for seed in range(200)}
    assert all(any(math.isclose(g, p, rel_tol=1e-12) for p in paper) for g in got)
    assert len(got) == len(paper)


def test_sampling_is_deterministic_and_matches_the_card_snippet(row):
    raw = make_pairs_raw()
    for k, seed in itertools.product((1, 2, 3, 4, 9, -1), range(8)):
        a = speedup(row, k, random.Random(seed))
        assert a == speedup(row, k, random.Random(seed))
        assert a == card_snippet(raw, k, seed)


def test_sampling_follows_stored_usable_order():
    # usable stored as [4, 0, 2, 1]: rng.sample is applied to that list, as in the card's snippet
    raw = make_pairs_raw(usable_case_ids="[4, 0, 2, 1]")
    r = parse_row(raw)
    assert select_cases(r.usable_case_ids, 2, random.Random(3)) == random.Random(3).sample([4, 0, 2, 1], 2)
    for seed in range(10):
        assert speedup(r, 2, random.Random(seed)) == card_snippet(raw, 2, seed)


def test_shared_rng_advances_like_the_snippet(row):
    rng = random.Random(42)
    ours = [speedup(row, 2, rng) for _ in range(5)]
    random.seed(42)
    src, tgt, usable = SRC, TGT, [0, 1, 2, 4]
    theirs = []
    for _ in range(5):
        cases = random.sample(usable, 2)
        theirs.append(sum(src[c] for c in cases) / sum(tgt[c] for c in cases))
    assert ours == theirs


def test_sampling_without_rng_is_refused(row):
    with pytest.raises(ValueError, match="pass rng"):
        speedup(row, 2)


def test_string_and_int_case_keys_give_the_same_reward():
    a = parse_row(make_pairs_raw())
    b = parse_row(make_pairs_raw(gem5_src_per_tc_ticks=dict(SRC), gem5_tgt_per_tc_ticks=dict(TGT)))
    c = parse_row(make_pairs_raw(gem5_tgt_per_tc_ticks={str(k): v for k, v in TGT.items()}))
    for k, seed in ((1, 0), (2, 5), (-1, 0)):
        values = [speedup(x, k, random.Random(seed)) for x in (a, b, c)]
        assert values[0] == values[1] == values[2]


# ------------------------------------------------------------------------------------- card's edge cases


def test_single_case_problem():
    # one case: src 240M, tgt 200M -> 240/200 = 1.2 whatever K; ceiling 240M/192M = 1.25 < 1.5 -> low headroom
    raw = make_pairs_raw(
        gem5_src_per_tc_ticks='{"0": 240000000}', gem5_tgt_per_tc_ticks='{"0": 200000000}',
        gem5_fastest_per_tc_ticks='{"0": 100000000}', gem5_fastest_usable_case_ids="[0]",
        gem5_fastest_sum_ticks_usable=100 * M, gem5_tgt_excluded="[]", gem5_tgt_status="ok",
        gem5_src_sum_ticks_all=240 * M, gem5_tgt_sum_ticks_all=200 * M,
        common_timed_case_ids="[0]", correctness_kept_case_ids="[0]", usable_case_ids="[0]",
        n_common_timed=1, n_kept=1, n_usable=1, n_cases_available=1, tgt_n_fail=0, pair_n_fail=0,
        our_speedup_usable=1.2, our_speedup_all=1.2, our_fastest_speedup=2.4, ceiling_speedup=1.25,
        flag_single_case=True, flag_low_headroom=True,
    )
    r = parse_row(raw)
    assert speedup(r, -1) == pytest.approx(1.2)
    assert speedup(r, 1, random.Random(0)) == pytest.approx(1.2)
    assert speedup(r, 5, random.Random(0)) == pytest.approx(1.2)   # K=5 clamped to 1
    assert fastest_speedup(r, 5) == pytest.approx(2.4)              # 240/100
    assert ceiling_speedup(r) == pytest.approx(1.25)                # 240M / 192M
    assert flag_low_headroom(r) is True and flag_low_headroom(1.25) is True


def test_empty_kept_uses_the_all_timed_fallback_as_given():
    # flag_empty_kept: kept = [], usable = all-timed [0, 1] (the row carries the fallback; not re-derived)
    # src 500M + 700M = 1200M, tgt 300M + 300M = 600M -> 2.0
    raw = make_pairs_raw(
        gem5_src_per_tc_ticks='{"0": 500000000, "1": 700000000}',
        gem5_tgt_per_tc_ticks='{"0": 300000000, "1": 300000000}',
        gem5_fastest_per_tc_ticks='{"0": 100000000, "1": 200000000}', gem5_fastest_usable_case_ids="[0, 1]",
        gem5_fastest_sum_ticks_usable=300 * M, gem5_tgt_excluded="[]", gem5_tgt_status="ok",
        gem5_src_sum_ticks_all=1200 * M, gem5_tgt_sum_ticks_all=600 * M,
        common_timed_case_ids="[0, 1]", correctness_kept_case_ids="[]", usable_case_ids="[0, 1]",
        n_common_timed=2, n_kept=0, n_usable=2, n_cases_available=2, tgt_n_fail=0, pair_n_fail=0,
        our_speedup_usable=2.0, our_speedup_all=2.0, our_fastest_speedup=4.0, ceiling_speedup=600 / 192,
        flag_empty_kept=True,
    )
    r = parse_row(raw)
    assert r.flag_empty_kept and r.correctness_kept_case_ids == [] and r.usable_case_ids == [0, 1]
    assert speedup(r, -1) == pytest.approx(2.0)               # 1200/600
    assert speedup(r, 3, random.Random(0)) == pytest.approx(2.0)
    assert {speedup(r, 1, random.Random(s)) for s in range(30)} == {500 / 300, 700 / 300}
    assert fastest_speedup(r) == pytest.approx(4.0)           # 1200/300
    assert ceiling_speedup(r) == pytest.approx(600 / 192)     # mean 600M / 192M = 3.125


def test_empty_usable_raises_naming_row_and_column():
    r = parse_row(make_pairs_raw(usable_case_ids="[]", n_usable=0), index=12)
    for fn in (lambda: speedup(r, -1), lambda: speedup(r, 3, random.Random(0)), lambda: fastest_speedup(r),
               lambda: ceiling_speedup(r)):
        with pytest.raises(PieRewardError) as ei:
            fn()
        assert ei.value.column == "usable_case_ids"
        assert str(ei.value).startswith("row 12 (problem_id=p02915, src_id=s100): column 'usable_case_ids'")


def test_usable_case_missing_from_ticks_raises():
    # put case 5 (the tgt was never timed on it) into usable
    r = parse_row(make_pairs_raw(usable_case_ids="[0, 1, 5]", n_usable=3), index=2)
    with pytest.raises(PieRewardError) as ei:
        speedup(r, -1)
    assert ei.value.column == "gem5_tgt_per_tc_ticks" and "case(s) [5]" in str(ei.value)
    assert "row 2 (problem_id=p02915, src_id=s100)" in str(ei.value)
    # fastest has case 5: (400+600+300)/(50+100+150) = 1300/300
    assert fastest_speedup(r) == pytest.approx(1300 / 300)


def test_zero_tgt_sum_raises_instead_of_inf():
    r = parse_row(make_pairs_raw(gem5_tgt_per_tc_ticks='{"0": 0, "1": 0, "2": 0, "3": 0, "4": 0}'))
    with pytest.raises(PieRewardError, match="sums to 0 ticks") as ei:
        speedup(r, -1)
    assert ei.value.column == "gem5_tgt_per_tc_ticks"


def test_sum_ratio_for_re_timed_candidates():
    # candidate timed on cases 1 and 4: src (600 + 1000) / candidate (150 + 250) = 1600/400 = 4
    assert sum_ratio(SRC, {1: 150 * M, 4: 250 * M}, [1, 4]) == pytest.approx(4.0)
    with pytest.raises(PieRewardError, match="no case selected"):
        sum_ratio(SRC, TGT, [])
    with pytest.raises(PieRewardError, match="case\\(s\\) \\[2\\]"):
        sum_ratio(SRC, {1: 1}, [1, 2], den_column="candidate")


# ------------------------------------------------------------------------------------ fastest, ceiling


def test_fastest_speedup_reproduces_our_fastest_speedup(row):
    # 2200 / (50+100+50+100) = 2200/300 = 22/3
    assert fastest_speedup(row) == pytest.approx(22 / 3, rel=1e-15)
    assert fastest_speedup(row) == pytest.approx(row.our_fastest_speedup, rel=1e-15)
    assert sum(FASTEST[c] for c in row.usable_case_ids) == row.gem5_fastest_sum_ticks_usable
    # K=1: per-case src/fastest = 400/50 = 8, 600/100 = 6, 200/50 = 4, 1000/100 = 10
    assert {fastest_speedup(row, 1, random.Random(s)) for s in range(60)} == {8.0, 6.0, 4.0, 10.0}


def test_ceiling_speedup_over_usable_and_timed(row):
    assert STARTUP_FLOOR_TICKS == 192_000_000
    # usable [0,1,2,4]: mean (400+600+200+1000)/4 = 550M; 550/192 = 2.864583...
    assert ceiling_speedup(row) == pytest.approx(550 / 192, rel=1e-15)
    assert ceiling_speedup(row) == pytest.approx(row.ceiling_speedup, rel=1e-15)
    # all six timed: (400+600+200+800+1000+300)/6 = 550M as well; change case 5 to see the difference
    assert ceiling_speedup(row, cases="timed") == pytest.approx(550 / 192, rel=1e-15)
    r2 = parse_row(make_pairs_raw(gem5_src_per_tc_ticks={**SRC, 5: 900 * M}))
    # (400+600+200+800+1000+900)/6 = 650M -> 650/192
    assert ceiling_speedup(r2, cases="timed") == pytest.approx(650 / 192, rel=1e-15)
    assert flag_low_headroom(row) is False
    assert flag_low_headroom(1.4999) is True and flag_low_headroom(1.5) is False


def test_ticks_to_seconds():
    # PIE's pytest_simulator.py expects 0.001035073468 s = 1_035_073_468 ps
    assert ticks_to_seconds(1_035_073_468) == pytest.approx(0.001035073468, rel=1e-15)
    assert ticks_to_seconds(14_000_000_000) == pytest.approx(0.014)  # the card's 2-min wall is 1.4e10 ticks


# ------------------------------------------------------------------------------------------------ bysrc


def test_bysrc_oracle_speedup_auto_detects_the_oracle_column():
    r = parse_row(make_bysrc_raw(), kind="bysrc", index=0)
    # usable [0,1,2,4,5]: src 400+600+200+1000+300 = 2500, oracle 100+200+100+200+150 = 750 -> 10/3
    assert oracle_ticks(r)[0] == "gem5_oracle_per_tc_ticks"
    assert speedup(r, -1) == pytest.approx(10 / 3, rel=1e-15) == oracle_speedup(r)
    assert speedup(r, -1) == pytest.approx(r.our_speedup_usable, rel=1e-15)
    # case 5 alone: 300/150 = 2; case 4 alone: 1000/200 = 5
    assert {oracle_speedup(r, 1, random.Random(s)) for s in range(80)} == {4.0, 3.0, 2.0, 5.0}
    # fastest: 2500 / (50+100+50+100+150) = 2500/450 = 50/9; ceiling (2500/5)/192 = 500/192
    assert fastest_speedup(r) == pytest.approx(50 / 9, rel=1e-15)
    assert ceiling_speedup(r) == pytest.approx(500 / 192, rel=1e-15)


def test_bysrc_oracle_column_resolution():
    named = parse_row(make_bysrc_raw(oracle_column="best_tgt_ticks_x"), kind="bysrc")
    with pytest.raises(PieRewardError, match="no oracle per-case ticks column"):
        speedup(named, -1)
    assert speedup(named, -1, ticks_column="best_tgt_ticks_x") == pytest.approx(10 / 3)
    # a bysrc export that keeps the snippet's name gem5_tgt_per_tc_ticks for the oracle
    kept = parse_row(make_bysrc_raw(oracle_column="gem5_tgt_per_tc_ticks"), kind="bysrc")
    assert oracle_ticks(kept)[0] == "gem5_tgt_per_tc_ticks" and speedup(kept) == pytest.approx(10 / 3)
    two = parse_row(make_bysrc_raw(oracle_tgt_per_tc_ticks="{}"), kind="bysrc")
    with pytest.raises(PieRewardError, match="several oracle tick columns"):
        speedup(two)
    with pytest.raises(PieRewardError, match="is not a column"):
        speedup(named, ticks_column="nope")
    bad = parse_row(make_bysrc_raw(gem5_oracle_per_tc_ticks='{"0": -1}'), kind="bysrc", index=3)
    with pytest.raises(PieRewardError) as ei:
        speedup(bad)
    assert ei.value.column == "gem5_oracle_per_tc_ticks" and "row 3" in str(ei.value)


def test_bysrc_oracle_missing_a_usable_case_raises():
    # bysrc usable = kept ∩ src-timed ∩ wall: the oracle may lack case 5
    oracle_without_5 = json.dumps({str(k): v for k, v in TGT.items()})
    r = parse_row(make_bysrc_raw(gem5_oracle_per_tc_ticks=oracle_without_5), kind="bysrc")
    with pytest.raises(PieRewardError) as ei:
        oracle_speedup(r)
    assert ei.value.column == "gem5_oracle_per_tc_ticks" and "[5]" in str(ei.value)


def test_ticks_column_is_refused_on_pairs_rows(row):
    with pytest.raises(ValueError, match="only for pie-gem5-bysrc"):
        speedup(row, ticks_column="gem5_fastest_per_tc_ticks")
    with pytest.raises(TypeError):
        oracle_speedup(row)


# -------------------------------------------------------------------------------------------- transforms


def test_raw_transform():
    assert apply_reward(2.5) == 2.5 and apply_reward(0.4, "raw") == 0.4
    assert apply_reward(None, "raw") == 0.0


def test_log_transform():
    assert apply_reward(math.e, "log") == pytest.approx(1.0)
    assert apply_reward(0.5, "log") == pytest.approx(-math.log(2))      # ln(1/2) = -0.693
    assert apply_reward(1.0, "log") == 0.0
    assert apply_reward(None, "log") == pytest.approx(-2.302585092994046) == DEFAULT_LOG_FAILURE_PENALTY  # ln(1/10)
    assert apply_reward(None, "log", failure_penalty=-5.0) == -5.0


def test_clipped_transform():
    assert apply_reward(15.0, "clipped") == 10.0 and apply_reward(0.5, "clipped") == 0.5
    assert apply_reward(None, "clipped") == 0.0
    t = make_transform("clipped", lo=1.0, hi=3.0)
    assert [t(0.5), t(2.0), t(4.0), t(None)] == [1.0, 2.0, 3.0, 1.0]
    with pytest.raises(ValueError):
        make_transform("clipped", lo=3.0, hi=1.0)


def test_pie_floor_transform():
    # PIE gem5_eval.py: speedup clipped below at 1.0; failures count as 1.0
    assert apply_reward(0.5, "pie_floor") == 1.0
    assert apply_reward(2.0, "pie_floor") == 2.0
    assert apply_reward(None, "pie_floor") == 1.0


def test_opt_indicator_transform():
    assert apply_reward(1.10, "opt_indicator") == 1.0                   # >= 1.10 counts
    assert apply_reward(1.0999, "opt_indicator") == 0.0
    assert apply_reward(3.0, "opt_indicator") == 1.0
    assert apply_reward(None, "opt_indicator") == 0.0
    assert apply_reward(1.2, "opt_indicator", threshold=1.25) == 0.0


def test_transform_inputs_and_names_are_checked():
    assert set(TRANSFORMS) == {"raw", "log", "clipped", "pie_floor", "opt_indicator"}
    for bad in (0.0, -1.0, float("nan"), float("inf"), "2"):
        with pytest.raises(ValueError):
            apply_reward(bad, "raw")
    with pytest.raises(ValueError, match="unknown reward transform"):
        make_transform("sqrt")
    with pytest.raises(ValueError, match="takes"):
        make_transform("raw", lo=1.0)
    for name in TRANSFORMS:
        t = make_transform(name)
        assert t.name == name and t.source and math.isfinite(t.failure_reward)


def test_reward_end_to_end_from_a_row(row):
    # the card's reward on all cases (11/3), then each transform
    s = speedup(row, -1)
    assert apply_reward(s, "raw") == pytest.approx(11 / 3)
    assert apply_reward(s, "log") == pytest.approx(math.log(11 / 3))
    assert apply_reward(s, "pie_floor") == pytest.approx(11 / 3)
    assert apply_reward(s, "opt_indicator") == 1.0

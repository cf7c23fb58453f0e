"""PIE's evaluation metrics (PIE's aggregation, LearningOpt/pie gem5_eval.py), checked against hand-computed numbers.

Three programs x four generations (runtimes in seconds; None = failed: incorrect/CE/TLE -> inf):

    program  src   gen1   gen2   gen3   gen4
    A        10.0  None   8.0    4.0    5.0
    B         6.0  5.0    None   None   2.0
    C         3.0  None   None   None   None

best@k and floored speedups (src / best, at least 1.0):

    k   A best -> speedup   B best -> speedup   C        mean                      %Opt   %Correct
    1   inf    -> 1.0       5 -> 6/5 = 1.2      1.0      (1+1.2+1)/3   = 3.2/3     1/3    1/3
    2   8      -> 10/8=1.25 5 -> 1.2            1.0      (1.25+1.2+1)/3 = 3.45/3   2/3    2/3
    3   4      -> 2.5       5 -> 1.2            1.0      (2.5+1.2+1)/3 = 4.7/3     2/3    2/3
    4   4      -> 2.5       2 -> 3.0            1.0      (2.5+3+1)/3   = 6.5/3     2/3    2/3

threshold shares (>= t):
    k=1: 1.25: 0     1.5: 0     2: 0     5: 0   10: 0
    k=2: 1.25: 1/3 (A, exactly 1.25)   1.5: 0   2: 0
    k=3: 1.25: 1/3   1.5: 1/3   2: 1/3 (A 2.5)   5: 0
    k=4: 1.25: 2/3   1.5: 2/3   2: 2/3 (A 2.5, B 3.0)   5: 0   10: 0
"""

from __future__ import annotations

import math

import pytest

from arbiter.datasets.pie.card import OPT_THRESHOLD
from arbiter.pipelines.pie.metrics import (
    REPORTED_THRESHOLDS,
    PieMetricsAtK,
    ProgramGenerations,
    best_at_k,
    floored_speedup,
    format_metrics_table,
    pie_eval_metrics,
)

PROGRAMS = [
    ProgramGenerations(10.0, [None, 8.0, 4.0, 5.0], "A"),
    ProgramGenerations(6.0, [5.0, None, None, 2.0], "B"),
    ProgramGenerations(3.0, [None, None, None, None], "C"),
]
THIRD, TWO_THIRDS = 100 / 3, 200 / 3


def test_three_programs_four_generations_hand_computed():
    rows = pie_eval_metrics(PROGRAMS)
    assert [r.k for r in rows] == [1, 2, 3, 4]
    assert all(r.n_programs == 3 for r in rows)
    expected = {
        # k: (mean speedup, %Opt, %Correct, {threshold: %})
        1: (3.2 / 3, THIRD, THIRD, {1.25: 0, 1.5: 0, 2.0: 0, 5.0: 0, 10.0: 0}),
        2: (3.45 / 3, TWO_THIRDS, TWO_THIRDS, {1.25: THIRD, 1.5: 0, 2.0: 0, 5.0: 0, 10.0: 0}),
        3: (4.7 / 3, TWO_THIRDS, TWO_THIRDS, {1.25: THIRD, 1.5: THIRD, 2.0: THIRD, 5.0: 0, 10.0: 0}),
        4: (6.5 / 3, TWO_THIRDS, TWO_THIRDS, {1.25: TWO_THIRDS, 1.5: TWO_THIRDS, 2.0: TWO_THIRDS, 5.0: 0, 10.0: 0}),
    }
    for r in rows:
        mean, opt, correct, shares = expected[r.k]
        assert r.mean_speedup == pytest.approx(mean)
        assert r.pct_opt == pytest.approx(opt)
        assert r.pct_correct == pytest.approx(correct)
        assert r.pct_speedup_at_least == pytest.approx(shares)
    assert rows[0].speedups == pytest.approx((1.0, 1.2, 1.0))
    assert rows[3].speedups == pytest.approx((2.5, 3.0, 1.0))


def test_best_at_k_uses_the_first_k_in_order():
    runs = [None, 8.0, 4.0, 5.0]
    assert [best_at_k(runs, k) for k in (1, 2, 3, 4)] == [math.inf, 8.0, 4.0, 4.0]
    assert best_at_k([3.0, math.inf], 2) == 3.0
    with pytest.raises(ValueError):
        best_at_k(runs, 0)
    with pytest.raises(ValueError):
        best_at_k(runs, 5)


def test_floor_and_failures_count_as_one():
    assert floored_speedup(10.0, 8.0) == 1.25
    assert floored_speedup(1.0, 2.0) == 1.0      # correct but 2x slower: floored at 1.0
    assert floored_speedup(1.0, None) == 1.0 and floored_speedup(1.0, math.inf) == 1.0


def test_correct_but_slower_counts_as_correct_not_optimized():
    # one program, src 1.0, one generation 2x slower: speedup floor 1.0, %Correct 100, %Opt 0
    (r,) = pie_eval_metrics([(1.0, [2.0])])
    assert (r.mean_speedup, r.pct_correct, r.pct_opt) == (1.0, 100.0, 0.0)


def test_opt_threshold_is_inclusive_at_1_10():
    # src 11, gen 10 -> 1.1 (float 1.1 == 1.10); src 10.99, gen 10 -> 1.099
    (r,) = pie_eval_metrics([(11.0, [10.0]), (10.99, [10.0])])
    assert OPT_THRESHOLD == 1.10 and r.pct_opt == 50.0


def test_custom_ks_thresholds_and_instruction_counts():
    # instruction counts work the same: src 9e9, gens [3e9, 1e9] -> best@1 3x, best@2 9x
    rows = pie_eval_metrics([(9e9, [3e9, 1e9], "p")], ks=[2, 1], thresholds=(3.0, 9.0))
    assert [r.k for r in rows] == [2, 1]
    assert rows[0].mean_speedup == pytest.approx(9.0) and rows[1].mean_speedup == pytest.approx(3.0)
    assert rows[0].pct_speedup_at_least == {3.0: 100.0, 9.0: 100.0}
    assert rows[1].pct_speedup_at_least == {3.0: 100.0, 9.0: 0.0}
    assert REPORTED_THRESHOLDS == (1.25, 1.5, 2.0, 5.0, 10.0)


def test_bad_inputs_raise_naming_the_program():
    with pytest.raises(ValueError, match="no programs"):
        pie_eval_metrics([])
    with pytest.raises(ValueError, match="program B generation 1"):
        ProgramGenerations(1.0, [2.0, -1.0], "B")
    with pytest.raises(ValueError, match="generation 0"):
        ProgramGenerations(1.0, [float("nan")], "C")
    with pytest.raises(ValueError, match="src_runtime"):
        ProgramGenerations(0.0, [1.0], "D")
    with pytest.raises(ValueError, match="outside 1..4"):
        pie_eval_metrics(PROGRAMS, ks=[5])
    with pytest.raises(ValueError, match="no generations"):
        pie_eval_metrics([(1.0, [])])
    # ks default to 1..n with n the fewest generations of any program
    assert [r.k for r in pie_eval_metrics([(1.0, [1.0, 1.0, 1.0]), (1.0, [0.5, 0.5])])] == [1, 2]


def test_records_and_table_output():
    rows = pie_eval_metrics(PROGRAMS, ks=[1, 4])
    rec = rows[1].as_record()
    assert rec["k"] == 4 and rec["pct_speedup_ge_1.25"] == pytest.approx(TWO_THIRDS)
    assert rec["pct_speedup_ge_10"] == 0.0 and "speedups" not in rec
    table = format_metrics_table(rows).splitlines()
    assert table[0].split() == ["best@k", "%Opt", "speedup", "%Correct", ">=1.25x", ">=1.5x", ">=2x", ">=5x", ">=10x"]
    # k=4: %Opt 66.67, mean 6.5/3 = 2.17, %Correct 66.67
    assert table[2].split()[:4] == ["4", "66.67", "2.17", "66.67"]
    assert isinstance(rows[0], PieMetricsAtK)

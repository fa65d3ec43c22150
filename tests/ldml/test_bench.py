"""The LDML benchmark (``cvxmetric bench --family ldml``) at tiny sizes."""

import json

import numpy as np
import pytest

from cvxmetric import bench
from cvxmetric import collection as col
from cvxmetric._tolerances import tolerance
from cvxmetric.bench import ldml as lb
from cvxmetric.cli import _bench_families

TINY = (
    ("ldml-allpairs-step", {"n": 120, "D": 20, "rank": 4, "classes": 10}, ("step",)),
    ("ldml-allpairs-fit", {"n": 80, "D": 12, "rank": 3, "classes": 4}, ("lowrank",)),
    ("ldml-pairs-frobenius", {"n": 40, "D": 3, "P": 80, "regularizer": "frobenius"},
     ("exact", "fast", "lowrank")),
)

KEYS = {"problem", "method", "d", "N", "n", "objective", "gap", "gap_kind", "seconds",
        "peak_mb", "base_mb", "status", "n_iter", "error"}


def test_the_family_has_a_benchmark():
    assert "ldml" in _bench_families()
    problems = [c[0] for c in lb.BENCH_CASES]
    assert problems == ["ldml-allpairs-step", "ldml-allpairs-fit", "ldml-pairs-trace",
                        "ldml-pairs-frobenius"]
    step = lb.BENCH_CASES[0][1]
    assert (step["n"], step["D"], step["rank"], step["classes"]) == (15_000, 3456, 128,
                                                                      1000)


def test_bench_tiny_in_process():
    rows = lb.run_bench(cases=TINY, isolate=False)
    assert [r["method"] for r in rows] == ["step", "lowrank", "exact", "fast", "lowrank"]
    for r in rows:
        assert set(r) == KEYS and r["error"] is None, r
        assert r["seconds"] > 0 and r["peak_mb"] > 0
    step, fit, exact, fast, low = rows
    assert step["N"] == 120 * 119 // 2 and "target 10 s, 4 GiB" in step["status"]
    assert step["gap"] is None and fit["gap"] is None
    assert "min_b F(0, b)" in fit["status"]
    assert exact["gap_kind"] == "certified" and exact["status"] == "optimal"
    for r in (fast, low):
        assert r["gap_kind"] == "vs exact"
        assert abs(r["gap"]) <= tolerance("ldml", r["method"]), r
        assert r["status"] == "optimal"
    assert json.dumps(col.jsonable(rows))
    assert "ldml-pairs-frobenius" in bench.format_table(rows)
    with pytest.raises(ValueError, match="max_seconds"):
        lb.run_bench(max_seconds=1.0, cases=TINY, isolate=False)


def test_bench_isolated_case():
    (row,) = lb.run_bench(cases=(("ldml-pairs-trace", {"n": 30, "D": 2, "P": 50},
                                  ("fast",)),), isolate=True, max_seconds=120)
    assert row["error"] is None, row
    assert row["gap_kind"] == "certified" and row["gap"] <= 1e-6
    assert row["status"] == "optimal"


def test_fit_beats_the_zero_metric_and_f_zero_is_its_value():
    loss = lb.fit_data(60, 8, 2, 3, random_state=1)
    b = np.log(np.sum(loss.labels[:, None] == loss.labels[None, :]) - 60) \
        - np.log(60 * 59 - (np.sum(loss.labels[:, None] == loss.labels[None, :]) - 60))
    f0 = loss.value_grad(np.zeros((2, 8)), float(b), grad=False)
    assert lb._f_zero(loss.labels) == pytest.approx(f0, rel=1e-12)
    (row,) = lb.run_bench(cases=(("ldml-allpairs-fit", {"n": 60, "D": 8, "rank": 2,
                                                        "classes": 3}, ("lowrank",)),),
                          seed=1, isolate=False)
    assert row["objective"] < f0


def test_data_is_deterministic():
    a, La, ba = lb.step_data(50, 6, 2, 5, random_state=3)
    b, Lb, bb = lb.step_data(50, 6, 2, 5, random_state=3)
    assert np.array_equal(a.X, b.X) and np.array_equal(La, Lb) and ba == bb
    d1, d2 = lb.pairs_data(30, 3, 40), lb.pairs_data(30, 3, 40)
    assert d1.regularizer == "trace" and d1.lam == 0.1
    assert np.array_equal(d1.X, d2.X) and np.array_equal(d1.pairs, d2.pairs)

"""The LMNN benchmark (``cvxmetric bench --family lmnn``) at a tiny size."""

from cvxmetric.bench import lmnn as lb
from cvxmetric.cli import _bench_families


def test_the_family_has_a_benchmark():
    assert "lmnn" in _bench_families()
    assert [c[0] for c in lb.BENCH_CASES] == ["lmnn-digits", "lmnn-letter"]
    X, y = lb.letter_data(n=52, d=3, n_classes=26)
    assert X.shape == (52, 3) and set(y) == set(range(26))


def test_a_case_runs_and_is_certified():
    out = lb.run_case({"problem": "lmnn-letter", "method": "fast", "seed": 0, "n": 260})
    assert out.get("error") is None
    assert out["status"] == "optimal" and out["cert_rel_gap"] <= 1e-6
    assert out["n"] == 260 and out["N"] > 0 and out["working_set"] <= out["N"]
    assert "optimal (working set" in lb._status("lmnn-letter", out)

"""The ITML benchmark (``cvxmetric bench --family itml``) at a tiny size."""

from cvxmetric.bench import itml as ib
from cvxmetric.cli import _bench_families


def test_the_family_has_a_benchmark():
    assert "itml" in _bench_families()
    assert [c[0] for c in ib.BENCH_CASES] == ["itml-digits", "itml-d300"]
    X, y = ib.synthetic_data(n=50, d=30, rank=5)
    assert X.shape == (50, 30) and set(y) == set(range(10))


def test_a_case_runs_and_is_certified():
    out = ib.run_case({"problem": "itml-d300", "method": "fast", "seed": 0, "n": 200,
                       "d": 20})
    assert out.get("error") is None
    assert out["status"] == "optimal" and out["cert_rel_gap"] <= 1e-6
    assert out["n"] == 200 and out["d"] == 20 and out["N"] == 4000
    assert "optimal (target 30 s" in ib._status("itml-d300", out)

"""The ``rankdml`` collection family and the RankDML benchmark (tiny runs)."""

import json

import numpy as np
import pytest

from cvxmetric import collection as col
from cvxmetric._tolerances import REFERENCE_AGREEMENT
from cvxmetric.bench import rankdml as _bench
from cvxmetric.rankdml import _collection as rc


def _tiny(rk):
    t = rk.retrieval_triplets(seed=3, n_gallery=12, n_queries=6, d=3)
    return {"X": t.X, "triplets": t.indices}


def test_family_is_registered():
    spec = col.FAMILIES["rankdml"]
    assert set(spec.hyperparameters) == {"regularizer", "form", "lam", "tau", "diagonal"}
    assert spec.hyperparameters["form"] == "printed"
    assert "fast" in col.METHODS["rankdml"]


def test_write_reference_verify_round_trip(tmp_path, rk):
    arrays = _tiny(rk)
    hp = {"regularizer": "burg", "lam": 0.5, "tau": 2.0}
    col.write_instance(tmp_path, "rankdml", "tiny", arrays, hyperparameters=hp,
                       description="tiny Eq. 9", source="synthetic")
    inst = col.load_instance(tmp_path, "rankdml", "tiny")
    assert inst.sizes["n_triplets"] == len(arrays["triplets"])
    out = col.compute_reference(inst)
    assert out.accepted, out.reasons
    assert out.record["agreement"]["rel_diff"] <= REFERENCE_AGREEMENT
    col.write_reference(tmp_path, inst, out.M, out.record)
    rows = col.verify(tmp_path, "rankdml")
    assert len(rows) == 1 and rows[0].passed, rows[0].error


def test_objective_rejects_infeasible_matrices(rk):
    arrays = _tiny(rk)
    lap = rc._to_data(arrays, {**rc.RANKDML_HP, "regularizer": "laplacian",
                               "diagonal": True, "form": "trace_fixed"})
    a = np.full(3, 1.0)  # tr = 3 = tau (default d)
    assert np.isfinite(rc._objective(lap, np.diag(a)))
    assert rc._objective(lap, np.diag(a * 1.01)) == np.inf  # trace missed
    off = np.diag(a)
    off[0, 1] = off[1, 0] = 1e-3
    assert rc._objective(lap, off) == np.inf  # not diagonal
    with pytest.raises(ValueError, match="array 'A0'"):
        rc._to_data({**arrays, "A0": np.eye(3)}, dict(rc.RANKDML_HP))
    with pytest.raises(TypeError, match="diagonal"):
        rc._to_data(arrays, {**rc.RANKDML_HP, "diagonal": "yes"})


def test_bundled_instances_match_the_files_on_disk():
    # regenerating is deterministic: the bytes equal the committed files,
    # so the stored references stay current
    out = col.make_problems(col.find_root(), "rankdml", check=True)
    assert len(out) >= 5
    assert not [o["name"] for o in out if o["changed"]]


def test_bench_tiny_in_process():
    cases = (("tiny-lap", "laplacian", True, 5, 3, ("exact", "fast")),
             ("tiny-burg", "burg", False, 3, 3, ("exact", "fast")))
    rows = _bench.run_bench(cases=cases, isolate=False)
    keys = {"problem", "method", "d", "N", "n", "objective", "gap", "gap_kind",
            "seconds", "peak_mb", "base_mb", "status", "n_iter", "error"}
    assert len(rows) == 4
    for r in rows:
        assert set(r) == keys and r["error"] is None, r
        assert r["gap_kind"] == "vs exact" and abs(r["gap"]) <= 1e-5
        assert r["N"] == 60
    assert json.dumps(col.jsonable(rows))
    with pytest.raises(ValueError, match="max_seconds"):
        _bench.run_bench(max_seconds=1.0, cases=cases, isolate=False)

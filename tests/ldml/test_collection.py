"""The ``ldml`` family of the collection: instances, references certified by
two solvers, and the fast and low-rank (full-rank) methods at the optimum."""

import math

import numpy as np
import pytest

from cvxmetric import NotAttainedError
from cvxmetric import collection as col
from cvxmetric._tolerances import EXACT_GAP, REFERENCE_AGREEMENT, tolerance
from cvxmetric.ldml import _collection as lc

FAMILY = "ldml"


@pytest.fixture(scope="module")
def root():
    root = col.find_root()
    if not (col.problems_dir(root, FAMILY) / "manifest.json").is_file():
        pytest.skip("no ldml collection in this checkout")
    return root


@pytest.fixture(scope="module")
def bundled():
    return {b["name"]: b for b in lc._bundled()}


def _tiny(seed=0, n=24, D=3, P=60):
    from cvxmetric.constraints import pairs_from_labels

    rng = np.random.RandomState(seed)
    X, y = col.gaussian_classes(rng, n, D, 2, 0.8)
    p, lab = pairs_from_labels(y, P, random_state=seed)
    return {"X": col.standardize(X), "pairs": p, "y": lab}


def test_family_is_registered():
    spec = col.FAMILIES[FAMILY]
    assert spec.generate is lc._bundled
    assert spec.hyperparameters == {"lam": 0.0, "regularizer": "trace"}
    assert [a.name for a in spec.arrays] == ["X", "pairs", "y"]
    assert spec.psd is False  # blockdiag(M, b): b may be negative
    assert spec.matrix_dim({"X": np.zeros((5, 3))}) == 4
    assert set(col.METHODS[FAMILY]) == {"fast", "lowrank"}
    for method in col.METHODS[FAMILY]:
        assert tolerance(FAMILY, method) <= 1e-6
    # a bare file of these arrays is read as ldml
    assert col._family_from_arrays({"X", "pairs", "y"}, "x.npz") == FAMILY


def test_bundled_instances_cover_the_brief(bundled):
    items = list(bundled.values())
    assert 6 <= len(items) <= 8
    assert {"synthetic", "iris", "wine", "breast_cancer"} <= {b["source"] for b in items}
    hp = [b["hyperparameters"] for b in items]
    assert {h["regularizer"] for h in hp} == {"trace", "frobenius"}
    assert any(h["lam"] == 0 for h in hp) and any(h["lam"] > 0 for h in hp)
    dims = [b["arrays"]["X"].shape[1] for b in items]
    assert min(dims) == 2 and max(dims) == 30
    assert max(len(b["arrays"]["y"]) for b in items) >= 3000
    for b in items:
        y = b["arrays"]["y"]
        assert set(np.unique(y)) == {-1, 1}, b["name"]


def test_breast_cancer_pairs_are_separable_without_a_regulariser(bundled):
    b = bundled["breast_cancer_frobenius"]
    data = lc._to_data(b["arrays"], {"lam": 0.0, "regularizer": "trace"})
    with pytest.raises(NotAttainedError, match="separates"):
        data.trace_bound(1.0)


def test_storage_keeps_b_and_refuses_what_is_not_a_solution():
    arrays = _tiny()
    data = lc._to_data(arrays, {"lam": 0.1, "regularizer": "trace"})
    res = lc._exact(data)
    S = res.M
    D = data.d
    assert S.shape == (D + 1, D + 1)
    assert S[D, D] == res.info["b"]
    assert np.all(S[:D, D] == 0) and np.all(S[D, :D] == 0)
    f = lc._objective(data, S)
    assert f == pytest.approx(res.objective, rel=1e-12)
    assert f == pytest.approx(data.objective(S[:D, :D], res.info["b"]), rel=1e-12)
    # the stored b is the one judged: another b is worse
    other = S.copy()
    other[D, D] += 0.5
    assert lc._objective(data, other) > f
    # not PSD, coupled, or of the wrong shape: no objective
    bad = S.copy()
    bad[:D, :D] -= 10 * np.eye(D)
    assert lc._objective(data, bad) == math.inf
    bad = S.copy()
    bad[0, D] = bad[D, 0] = 1e-3
    assert lc._objective(data, bad) == math.inf
    assert lc._objective(data, S[:D, :D]) == math.inf


def test_bad_instance_is_rejected(tmp_path):
    arrays = _tiny()
    bad = dict(arrays, y=np.where(arrays["y"] > 0, 1, 0))
    with pytest.raises(col.InstanceFormatError, match="y: expected"):
        col.write_instance(tmp_path, FAMILY, "zero_labels", bad, hyperparameters={})
    bad = dict(arrays, pairs=arrays["pairs"].copy())
    bad["pairs"][0, 1] = bad["pairs"][0, 0]
    with pytest.raises(col.InstanceFormatError, match="identical"):
        col.write_instance(tmp_path, FAMILY, "self_pair", bad, hyperparameters={})
    with pytest.raises(col.InstanceFormatError, match="regularizer"):
        col.write_instance(tmp_path, FAMILY, "l1", arrays,
                           hyperparameters={"regularizer": "l1"})
    with pytest.raises(col.InstanceFormatError, match="lam"):
        col.write_instance(tmp_path, FAMILY, "negative", arrays,
                           hyperparameters={"lam": -1.0})
    assert not (tmp_path / "problems" / FAMILY / "manifest.json").exists()


def test_reference_of_a_tiny_instance_by_two_solvers(tmp_path):
    # Frobenius: Clarabel's own point certifies (with the trace regulariser or
    # none, its interior point is often too coarse for the certificate)
    col.write_instance(tmp_path, FAMILY, "tiny", _tiny(),
                       hyperparameters={"lam": 0.5, "regularizer": "frobenius"})
    inst = col.load_instance(tmp_path, FAMILY, "tiny")
    outcome = col.compute_reference(inst)
    assert outcome.accepted, outcome.reasons
    rec = outcome.record
    assert set(rec["solvers"]) == {"CLARABEL", "SCS"}
    assert rec["agreement"]["rel_diff"] <= REFERENCE_AGREEMENT
    assert outcome.M.shape == (4, 4)


def test_repository_collection_is_current(root):
    for row in col.make_problems(root, FAMILY, check=True):
        assert not row["changed"], f"{row['name']} differs from its generator"


def test_every_reference_is_certified(root):
    names = col.instance_names(root, FAMILY)
    assert len(names) >= 6
    for inst in col.iter_instances(root, FAMILY):
        status, ref = col.reference_status(root, inst)
        assert status == "current", (inst.name, ref)
        rec = ref.record
        assert rec["certificate"]["passed"], inst.name
        assert rec["certificate"]["rel_gap"] <= EXACT_GAP, inst.name
        assert rec["agreement"]["passed"], inst.name
        assert all(s["passed"] for s in rec["solvers"].values()), inst.name
        assert set(rec["solvers"]) == {"CLARABEL", "SCS"}
        data = inst.to_data()
        assert inst.spec.objective(data, ref.M) == pytest.approx(ref.objective,
                                                                  rel=1e-9)
        D = data.d
        assert np.linalg.eigvalsh(ref.M[:D, :D])[0] >= -1e-7 * max(1, ref.objective)


def test_fast_and_full_rank_lowrank_reach_every_reference(root):
    """At full rank (d = D) the low-rank gradient method reaches the convex
    optimum on every instance, as the projected gradient does."""
    rows = col.verify(root, FAMILY)
    assert len(rows) == 2 * len(col.instance_names(root, FAMILY))
    failed = [(r.instance, r.method, r.error) for r in rows if not r.passed]
    assert not failed
    for r in rows:
        assert abs(r.gap) <= tolerance(FAMILY, r.method), (r.instance, r.method)
        assert r.status == "optimal", (r.instance, r.method, r.status)

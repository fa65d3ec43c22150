"""The ``slr`` family of the collection: instances, references, verify."""

import numpy as np
import pytest

from cvxmetric import collection as col
from cvxmetric._tolerances import REFERENCE_AGREEMENT, tolerance
from cvxmetric.slr import SemismoothNewton, SLRData


@pytest.fixture(scope="module")
def root():
    return col.find_root()


def test_family_is_registered_as_general_matrices():
    spec = col.FAMILIES["slr"]
    assert spec.psd is False
    assert set(col.METHODS["slr"]) == {"newton", "adaptive"}
    for method in col.METHODS["slr"]:
        assert tolerance("slr", method) <= 1e-6
    assert tolerance("slr", "newton") == 1e-8


def test_bundled_instances_are_nontrivial():
    items = col.FAMILIES["slr"].generate()
    assert len(items) >= 5
    sources = {it["source"] for it in items}
    assert {"synthetic", "digits", "iris", "wine"} <= sources
    for it in items:
        X, y = it["arrays"]["X"], it["arrays"]["y"]
        assert X.shape[0] > X.shape[1], it["name"]  # n > d
        data = SLRData.from_labels(X, y, **it["hyperparameters"])
        res = SemismoothNewton().run(data)
        assert res.status == "optimal"
        assert res.objective > 1.0, it["name"]  # not separable: optimum > 0


def test_make_problems_is_deterministic(root):
    out = col.make_problems(root, "slr", check=True)
    assert out and not any(row["changed"] for row in out)


def test_stored_references_are_current_and_verify_passes(root):
    rows = col.verify(root, "slr")
    assert len(rows) == 2 * len(col.instance_names(root, "slr"))
    failed = [(r.instance, r.method, r.error) for r in rows if not r.passed]
    assert not failed
    for r in rows:
        assert r.psd_violation == 0.0  # a bilinear M is not judged as a metric


def test_reference_is_computed_by_two_solvers(tmp_path):
    col.make_problems(tmp_path, "slr")
    (out,) = col.make_references(tmp_path, "slr", only="random_small")
    assert out.accepted and out.written, out.reasons
    rec = out.record
    assert set(rec["solvers"]) == {"CLARABEL", "SCS"}
    assert rec["agreement"]["rel_diff"] <= REFERENCE_AGREEMENT
    ref = col.read_reference(tmp_path, col.load_instance(tmp_path, "slr",
                                                         "random_small"))
    inst = col.load_instance(tmp_path, "slr", "random_small")
    data = inst.to_data()
    assert np.isclose(data.objective(ref.M), ref.objective, rtol=1e-12)
    assert rec["certificate"]["passed"]


def test_bad_instance_is_rejected(tmp_path):
    with pytest.raises(col.InstanceFormatError, match="2 classes"):
        col.write_instance(tmp_path, "slr", "one_class",
                           {"X": np.eye(3), "y": np.zeros(3, dtype=int)},
                           hyperparameters={})
    with pytest.raises(col.InstanceFormatError, match="delta1, delta2"):
        col.write_instance(tmp_path, "slr", "bad_deltas",
                           {"X": np.eye(3), "y": np.array([0, 1, 1])},
                           hyperparameters={"delta1": 0.0, "delta2": 1.0})

"""The ``omdml`` family of the collection: instances, references (Clarabel and
SCS agree), and a fresh exact solve reaching every reference."""

import numpy as np
import pytest

import cvxmetric.collection as col
from cvxmetric._tolerances import REFERENCE_AGREEMENT
from cvxmetric.omdml import _collection as oc

FAMILY = "omdml"


def test_family_is_registered():
    spec = col.FAMILIES[FAMILY]
    assert spec.generate is oc._bundled and col.METHODS[FAMILY] == {}


def test_bundled_and_references(tmp_path):
    bundled = oc._bundled()
    assert len(bundled) >= 3 and {b["source"] for b in bundled} >= {"synthetic",
                                                                     "digits"}
    b = bundled[0]
    col.write_instance(tmp_path, FAMILY, b["name"], b["arrays"],
                       hyperparameters=b["hyperparameters"])
    inst = col.load_instance(tmp_path, FAMILY, b["name"])
    outcome = col.compute_reference(inst)
    assert outcome.accepted, outcome.reasons
    assert outcome.record["agreement"]["rel_diff"] <= REFERENCE_AGREEMENT
    bad = dict(b["arrays"], dims=np.array([4, 4, 5]))
    with pytest.raises(ValueError, match="dims"):
        oc._to_data(bad, b["hyperparameters"])
    bad = dict(b["arrays"], theta=np.array([0.5, 0.5, 0.5]))
    with pytest.raises(ValueError, match="theta"):
        oc._to_data(bad, b["hyperparameters"])


def test_repository_collection_is_current():
    root = col.find_root()
    if not (col.problems_dir(root, FAMILY) / "manifest.json").is_file():
        pytest.skip("no omdml collection in this checkout")
    for row in col.make_problems(root, FAMILY, check=True):
        assert not row["changed"], f"{row['name']} differs from its generator"
    for inst in col.iter_instances(root, FAMILY):
        ref = col.read_reference(root, inst)
        res = inst.spec.exact(inst.to_data())
        assert res.status == "optimal"
        assert abs(res.objective - ref.objective) <= 1e-7 * max(1.0, abs(ref.objective))
        assert inst.spec.objective(inst.to_data(), ref.M) == pytest.approx(
            ref.objective, rel=1e-9)

"""The ``itml`` family of the collection: instances, references (Clarabel
and SCS agree), ``verify``, and a fresh exact solve reaching every
reference."""

import pytest

import cvxmetric.collection as col
from cvxmetric._tolerances import REFERENCE_AGREEMENT
from cvxmetric.itml import _collection as ic

FAMILY = "itml"


def test_family_is_registered():
    spec = col.FAMILIES[FAMILY]
    assert spec.generate is ic.bundled_instances
    assert set(col.METHODS[FAMILY]) == {"fast", "bregman"}


def test_bundled_and_references(tmp_path):
    bundled = ic.bundled_instances()
    assert {b["source"] for b in bundled} == {"iris", "wine", "synthetic"}
    b = bundled[0]  # iris180: SCS agrees within a second
    col.write_instance(tmp_path, FAMILY, b["name"], b["arrays"],
                       hyperparameters=b["hyperparameters"])
    inst = col.load_instance(tmp_path, FAMILY, b["name"])
    outcome = col.compute_reference(inst)
    assert outcome.accepted, outcome.reasons
    assert outcome.record["agreement"]["rel_diff"] <= REFERENCE_AGREEMENT
    with pytest.raises(ValueError, match="gamma"):
        inst.spec.to_data(b["arrays"], {"gamma": -1.0})


def test_repository_collection_is_current():
    root = col.find_root()
    if not (col.problems_dir(root, FAMILY) / "manifest.json").is_file():
        pytest.skip("no itml collection in this checkout")
    for row in col.make_problems(root, FAMILY, check=True):
        assert not row["changed"], f"{row['name']} differs from its generator"
    for inst in col.iter_instances(root, FAMILY):
        ref = col.read_reference(root, inst)
        res = inst.spec.exact(inst.to_data())
        assert res.status == "optimal"
        assert abs(res.objective - ref.objective) <= 1e-7 * max(1.0, abs(ref.objective))
        assert inst.spec.objective(inst.to_data(), ref.M) == pytest.approx(
            ref.objective, rel=1e-9)
    rows = col.verify(root, FAMILY)
    assert rows and all(r.passed for r in rows)

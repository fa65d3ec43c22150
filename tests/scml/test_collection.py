"""The ``scml`` family of the collection: registered, its references agree
with a fresh exact solve, and ``verify`` passes."""

import pytest

import cvxmetric.collection as col
from cvxmetric.scml import _collection as sc

FAMILY = "scml"


def test_family_is_registered():
    spec = col.FAMILIES[FAMILY]
    assert spec.generate is sc.bundled_instances
    assert set(col.METHODS[FAMILY]) == {"fast"}


def test_repository_collection_is_current():
    root = col.find_root()
    if not (col.problems_dir(root, FAMILY) / "manifest.json").is_file():
        pytest.skip("no scml collection in this checkout")
    for inst in col.iter_instances(root, FAMILY):
        ref = col.read_reference(root, inst)
        data = inst.to_data()
        assert inst.spec.objective(data, ref.M) == pytest.approx(ref.objective, rel=1e-7)
    rows = col.verify(root, FAMILY)
    assert rows and all(r.passed for r in rows), [(r.instance, r.error) for r in rows]

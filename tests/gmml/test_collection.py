"""The ``gmml`` family of the collection and its benchmark."""

import pytest

import cvxmetric.collection as col
from cvxmetric.bench import gmml as gb
from cvxmetric.cli import _bench_families
from cvxmetric.gmml import _collection as gc

FAMILY = "gmml"


def test_family_is_registered():
    assert col.FAMILIES[FAMILY].generate is gc.bundled_instances
    assert set(col.METHODS[FAMILY]) == {"fast"}


def test_repository_collection_is_current():
    root = col.find_root()
    if not (col.problems_dir(root, FAMILY) / "manifest.json").is_file():
        pytest.skip("no gmml collection in this checkout")
    for row in col.make_problems(root, FAMILY, check=True):
        assert not row["changed"], f"{row['name']} differs from its generator"
    for inst in col.iter_instances(root, FAMILY):
        ref = col.read_reference(root, inst)
        res = inst.spec.exact(inst.to_data())
        assert res.status == "optimal"
        assert abs(res.objective - ref.objective) <= 1e-7 * max(1.0, abs(ref.objective))
    rows = col.verify(root, FAMILY)
    assert rows and all(r.passed for r in rows)


def test_benchmark_runs():
    assert "gmml" in _bench_families()
    out = gb.run_case({"problem": "gmml-digits", "method": "fast", "seed": 0})
    assert out.get("error") is None and out["status"] == "optimal"

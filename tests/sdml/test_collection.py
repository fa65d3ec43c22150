"""The ``sdml`` family of the collection and its benchmark."""

import pytest

import cvxmetric.collection as col
from cvxmetric.bench import sdml as sb
from cvxmetric.cli import _bench_families
from cvxmetric.sdml import _collection as sc

FAMILY = "sdml"


def test_family_is_registered():
    assert col.FAMILIES[FAMILY].generate is sc.bundled_instances
    assert set(col.METHODS[FAMILY]) == {"fast"}


def test_repository_collection_is_current():
    root = col.find_root()
    if not (col.problems_dir(root, FAMILY) / "manifest.json").is_file():
        pytest.skip("no sdml collection in this checkout")
    for row in col.make_problems(root, FAMILY, check=True):
        assert not row["changed"], f"{row['name']} differs from its generator"
    for inst in col.iter_instances(root, FAMILY):
        ref = col.read_reference(root, inst)
        res = inst.spec.exact(inst.to_data())
        assert res.status == "optimal"
        assert abs(res.objective - ref.objective) <= 1e-7 * max(1.0, abs(ref.objective))
    rows = col.verify(root, FAMILY)
    assert rows and all(r.passed for r in rows)


def test_benchmark_runs_a_small_case():
    assert "sdml" in _bench_families()
    out = sb.run_case({"problem": "sdml-d300", "method": "fast", "seed": 0, "d": 20})
    assert out.get("error") is None and out["status"] == "optimal"
    out = sb.run_case({"problem": "sdml-digits-default", "method": "fast", "seed": 0})
    assert out["error"].startswith("UnboundedError")

"""The ``sdml`` family of the collection and its benchmark."""


import cvxmetric.collection as col
from cvxmetric.bench import sdml as sb
from cvxmetric.cli import _bench_families
from cvxmetric.sdml import _collection as sc

FAMILY = "sdml"


def test_family_is_registered():
    assert col.FAMILIES[FAMILY].generate is sc.bundled_instances
    assert set(col.METHODS[FAMILY]) == {"fast"}


def test_repository_collection_is_current(check_repository_collection):
    check_repository_collection(FAMILY, objective_rel=None)


def test_benchmark_runs_a_small_case():
    assert "sdml" in _bench_families()
    out = sb.run_case({"problem": "sdml-d300", "method": "fast", "seed": 0, "d": 20})
    assert out.get("error") is None and out["status"] == "optimal"
    out = sb.run_case({"problem": "sdml-digits-default", "method": "fast", "seed": 0})
    assert out["error"].startswith("UnboundedError")

"""The ``gmml`` family of the collection and its benchmark."""


import cvxmetric.collection as col
from cvxmetric.bench import gmml as gb
from cvxmetric.cli import _bench_families
from cvxmetric.gmml import _collection as gc

FAMILY = "gmml"


def test_family_is_registered():
    assert col.FAMILIES[FAMILY].generate is gc.bundled_instances
    assert set(col.METHODS[FAMILY]) == {"fast"}


def test_repository_collection_is_current(check_repository_collection):
    check_repository_collection(FAMILY, objective_rel=None)


def test_benchmark_runs():
    assert "gmml" in _bench_families()
    out = gb.run_case({"problem": "gmml-digits", "method": "fast", "seed": 0})
    assert out.get("error") is None and out["status"] == "optimal"

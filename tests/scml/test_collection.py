"""The ``scml`` family of the collection: registered, its references agree
with a fresh exact solve, and ``verify`` passes."""


import cvxmetric.collection as col
from cvxmetric.scml import _collection as sc

FAMILY = "scml"


def test_family_is_registered():
    spec = col.FAMILIES[FAMILY]
    assert spec.generate is sc.bundled_instances
    assert set(col.METHODS[FAMILY]) == {"fast"}


def test_repository_collection_is_current(check_repository_collection):
    check_repository_collection(FAMILY, regenerate=False, exact=False, objective_rel=1e-7)
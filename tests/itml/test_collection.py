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


def test_repository_collection_is_current(check_repository_collection):
    check_repository_collection(FAMILY)
"""The ``rca`` family of the collection: instances, references (Clarabel and
SCS agree), ``verify``, and a fresh exact solve reaching every reference."""

import numpy as np
import pytest

import cvxmetric.collection as col
from cvxmetric._tolerances import REFERENCE_AGREEMENT
from cvxmetric.rca import _collection as rc

FAMILY = "rca"


def test_family_is_registered():
    spec = col.FAMILIES[FAMILY]
    assert spec.generate is rc.bundled_instances
    assert set(col.METHODS[FAMILY]) == {"fast"}


def test_bundled_and_references(tmp_path):
    bundled = rc.bundled_instances()
    assert {b["source"] for b in bundled} == {"iris", "wine", "synthetic"}
    b = bundled[-1]
    assert np.any(b["arrays"]["chunks"] == -1)
    col.write_instance(tmp_path, FAMILY, b["name"], b["arrays"],
                       hyperparameters=b["hyperparameters"])
    inst = col.load_instance(tmp_path, FAMILY, b["name"])
    outcome = col.compute_reference(inst)
    assert outcome.accepted, outcome.reasons
    assert outcome.record["agreement"]["rel_diff"] <= REFERENCE_AGREEMENT
    with pytest.raises(ValueError, match="chunks"):
        rc._to_data(dict(b["arrays"], chunks=np.arange(len(b["arrays"]["chunks"]))), {})


def test_repository_collection_is_current(check_repository_collection):
    check_repository_collection(FAMILY)
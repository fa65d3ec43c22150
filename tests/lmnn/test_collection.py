"""The ``lmnn`` family of the collection: instances, references (Clarabel and
SCS agree), ``verify``, and a fresh exact solve reaching every reference."""

import numpy as np
import pytest

import cvxmetric.collection as col
from cvxmetric._tolerances import REFERENCE_AGREEMENT
from cvxmetric.lmnn import _collection as lc

FAMILY = "lmnn"


def test_family_is_registered():
    spec = col.FAMILIES[FAMILY]
    assert spec.generate is lc.bundled_instances
    assert set(col.METHODS[FAMILY]) == {"fast", "subgradient"}


def test_bundled_and_references(tmp_path):
    bundled = lc.bundled_instances()
    assert {b["source"] for b in bundled} == {"iris", "wine", "synthetic"}
    b = bundled[-1]
    col.write_instance(tmp_path, FAMILY, b["name"], b["arrays"],
                       hyperparameters=b["hyperparameters"])
    inst = col.load_instance(tmp_path, FAMILY, b["name"])
    outcome = col.compute_reference(inst)
    assert outcome.accepted, outcome.reasons
    assert outcome.record["agreement"]["rel_diff"] <= REFERENCE_AGREEMENT
    with pytest.raises(ValueError, match="mu"):
        lc._to_data(b["arrays"], {"k": 3, "mu": 1.0})
    with pytest.raises(ValueError, match="y"):
        lc._to_data(dict(b["arrays"], y=np.zeros(len(b["arrays"]["y"]), int)),
                    b["hyperparameters"])


def test_repository_collection_is_current(check_repository_collection):
    check_repository_collection(FAMILY)
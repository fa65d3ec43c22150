"""The ``qwise_vector`` family of the collection: bundled instances cover the
variants, references agree (Clarabel and SCS), ``verify`` passes Newton on
every smoothed instance, and every instance's reference matches a fresh
exact solve."""

import numpy as np
import pytest

import cvxmetric.collection as col
from cvxmetric._tolerances import REFERENCE_AGREEMENT, tolerance
from cvxmetric.qwise_vector import ProjectedNewton, solve_exact
from cvxmetric.qwise_vector import _collection as qc

FAMILY = "qwise_vector"


@pytest.fixture(scope="module")
def bundled():
    return qc._vector_bundled()


def test_family_is_registered():
    spec = col.FAMILIES[FAMILY]
    assert spec.generate is qc._vector_bundled and not spec.psd
    assert set(col.METHODS[FAMILY]) == {"newton"}
    assert tolerance(FAMILY, "newton") == 1e-8
    assert not spec.applies("newton", {"loss": "hinge"})
    assert spec.applies("newton", {"loss": "huber"})


def test_bundled_instances_cover_every_variant(bundled):
    assert len(bundled) >= 6
    hps = [b["hyperparameters"] for b in bundled]
    assert {(h["psi"], h["loss"]) for h in hps} == {
        (p, l) for p in ("squared", "linear") for l in ("hinge", "huber")}
    assert any("pairs" in b["arrays"] for b in bundled)
    assert any("pairs" not in b["arrays"] for b in bundled)
    assert any(set(np.unique(b["arrays"]["delta"])) == {0.0, 1.0} for b in bundled)
    assert {b["source"] for b in bundled} >= {"synthetic", "digits"}


def test_reference_solvers_agree(bundled, tmp_path):
    b = next(x for x in bundled if x["name"] == "vector_squared_huber")
    col.write_instance(tmp_path, FAMILY, b["name"], b["arrays"],
                       hyperparameters=b["hyperparameters"])
    inst = col.load_instance(tmp_path, FAMILY, b["name"])
    outcome = col.compute_reference(inst)
    assert outcome.accepted, outcome.reasons
    assert outcome.record["agreement"]["rel_diff"] <= REFERENCE_AGREEMENT
    np.testing.assert_array_equal(outcome.M, np.diag(np.diag(outcome.M)))


def test_repository_collection_verifies():
    """The shipped instances are current, Newton passes on each smoothed
    one, and a fresh exact solve (and Newton) reaches every reference."""
    root = col.find_root()
    if not (col.problems_dir(root, FAMILY) / "manifest.json").is_file():
        pytest.skip("no qwise_vector collection in this checkout")
    for row in col.make_problems(root, FAMILY, check=True):
        assert not row["changed"], f"{row['name']} differs from its generator"
    rows = col.verify(root, FAMILY)
    assert len(rows) >= 3
    for row in rows:
        assert row.passed, (row.instance, row.error)
    for inst in col.iter_instances(root, FAMILY):
        ref = col.read_reference(root, inst)
        data = inst.to_data()
        res = solve_exact(data)
        assert abs(res.objective - ref.objective) <= 1e-7 * max(1.0, abs(ref.objective))
        if data.loss == "huber":
            new = ProjectedNewton().run(data)
            assert abs(new.objective - ref.objective) <= \
                tolerance(FAMILY, "newton") * max(1.0, abs(ref.objective))

"""The ``constraintdml`` family of the collection: registration, bundled
instances, references (Clarabel and SCS agree) and ``verify``."""

import numpy as np
import pytest

import cvxmetric.collection as col
from cvxmetric._tolerances import REFERENCE_AGREEMENT, tolerance
from cvxmetric.constraintdml import _collection as cc

FAMILY = "constraintdml"


@pytest.fixture(scope="module")
def bundled():
    return cc.bundled()


def test_family_is_registered():
    spec = col.FAMILIES[FAMILY]
    assert spec.generate is cc.bundled
    assert set(col.METHODS[FAMILY]) == {"fast"}
    assert tolerance(FAMILY, "fast") == 1e-6


def test_bundled_instances_cover_every_variant(bundled):
    assert len(bundled) >= 4
    kinds = {(b["hyperparameters"]["hard"], b["hyperparameters"]["diagonal"])
             for b in bundled}
    assert kinds == {(True, False), (False, False), (True, True), (False, True)}
    assert {b["source"] for b in bundled} >= {"synthetic", "iris", "wine"}
    for b in bundled:
        labels = b["arrays"]["labels"]
        assert np.any(labels == 1) and np.any(labels == -1)
        data = cc._to_data(b["arrays"], b["hyperparameters"])
        assert len(data.infeasible_pairs()) == 0


def test_generation_is_deterministic(bundled):
    again = cc.bundled()
    for a, b in zip(bundled, again):
        for key in a["arrays"]:
            np.testing.assert_array_equal(a["arrays"][key], b["arrays"][key])


def test_query_gallery_follows_the_protocol():
    X, pairs, labels = cc.query_gallery(10, 6, 3, 4, random_state=0)
    assert X.shape == (16, 3) and pairs.shape == (24, 2)
    # queries are the last rows; items come from the gallery; each query has
    # at most one relevant item (its source)
    assert np.all(pairs[:, 0] >= 10) and np.all(pairs[:, 1] < 10)
    for q in range(10, 16):
        assert np.sum(labels[pairs[:, 0] == q] == 1) <= 1
        # retrieved by increasing Euclidean distance
        items = pairs[pairs[:, 0] == q, 1]
        dist = np.sum((X[items] - X[q]) ** 2, axis=1)
        assert np.all(np.diff(dist) >= 0)


def test_extended_objective(bundled):
    """``verify`` scores a point outside the feasible set as +inf."""
    b = next(x for x in bundled if x["hyperparameters"]["diagonal"])
    data = cc._to_data(b["arrays"], b["hyperparameters"])
    res = col.FAMILIES[FAMILY].exact(data)
    f = cc._objective(data, res.M)
    assert f == pytest.approx(res.objective, rel=1e-9)
    assert cc._objective(data, 0.5 * res.M) == np.inf  # cannot-links violated
    off = res.M.copy()
    off[0, 1] = off[1, 0] = 1e-3
    assert cc._objective(data, off) == np.inf  # not diagonal


def test_manifest_flags_must_be_booleans(bundled):
    b = bundled[0]
    with pytest.raises(ValueError, match="^hard:"):
        cc._to_data(b["arrays"], {**b["hyperparameters"], "hard": 1})


def test_reference_solvers_agree(bundled, tmp_path):
    b = next(x for x in bundled if x["name"] == "iris_eq10")  # the quickest
    col.write_instance(tmp_path, FAMILY, b["name"], b["arrays"],
                       hyperparameters=b["hyperparameters"])
    inst = col.load_instance(tmp_path, FAMILY, b["name"])
    outcome = col.compute_reference(inst)
    assert outcome.accepted, outcome.reasons
    assert outcome.record["agreement"]["rel_diff"] <= REFERENCE_AGREEMENT


def test_repository_collection_verifies():
    """The shipped instances are current and ``fast`` passes on each."""
    root = col.find_root()
    if not (col.problems_dir(root, FAMILY) / "manifest.json").is_file():
        pytest.skip("no constraintdml collection in this checkout")
    for row in col.make_problems(root, FAMILY, check=True):
        assert not row["changed"], f"{row['name']} differs from its generator"
    rows = col.verify(root, FAMILY)
    assert len(rows) >= 4
    for row in rows:
        assert row.passed, (row.instance, row.error)
        assert abs(row.gap) <= tolerance(FAMILY, "fast")

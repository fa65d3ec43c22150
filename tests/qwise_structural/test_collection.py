"""The ``qwise_structural`` family of the collection and the structural rows of
``cvxmetric bench --family qwise``."""

import numpy as np
import pytest

import cvxmetric.collection as col
from cvxmetric._tolerances import tolerance
from cvxmetric.bench import qwise as qbench
from cvxmetric.qwise_structural import _collection as qc

FAMILY = "qwise_structural"


def test_family_is_registered():
    spec = col.FAMILIES[FAMILY]
    assert spec.generate is qc._structural_bundled and spec.psd
    assert set(col.METHODS[FAMILY]) == {"structural", "fast"}
    assert tolerance(FAMILY, "structural") == tolerance(FAMILY, "fast") == 1e-6


def test_bundled_instances_cover_both_readings():
    bundled = qc._structural_bundled()
    assert {b["hyperparameters"]["reading"] for b in bundled} == {"quadruplets",
                                                                "triplets"}
    assert {b["hyperparameters"]["regularizer"] for b in bundled} == {"trace",
                                                                    "frobenius"}
    trip = next(b for b in bundled if b["hyperparameters"]["reading"] == "triplets")
    q = trip["arrays"]["quadruplets"]
    np.testing.assert_array_equal(q[:, 0], q[:, 2])
    bad = dict(trip["arrays"], quadruplets=q[:, [0, 1, 3, 2]])
    with pytest.raises(ValueError, match="reading='triplets'"):
        qc._structural_to_data(bad, trip["hyperparameters"])


def test_repository_collection_verifies():
    root = col.find_root()
    if not (col.problems_dir(root, FAMILY) / "manifest.json").is_file():
        pytest.skip("no qwise_structural collection in this checkout")
    for row in col.make_problems(root, FAMILY, check=True):
        assert not row["changed"], f"{row['name']} differs from its generator"
    rows = col.verify(root, FAMILY)
    assert len(rows) >= 2
    for row in rows:
        assert row.passed, (row.instance, row.error)


def test_bench_rows():
    rows = qbench.run_bench([(5, 200)], qbench.MODEL_METHODS["structural"],
                            isolate=False)
    assert [(r["problem"], r["method"]) for r in rows] == [
        ("qwise-structural", "structural-exact"), ("qwise-structural", "structural-fast"),
        ("qwise-structural", "structural")]
    assert rows[1]["status"] == "optimal" and abs(rows[1]["gap"]) <= 1e-6
    cut = rows[2]
    assert cut["status"] == "optimal" and abs(cut["gap"]) <= 1e-6
    assert cut["n_cuts"] >= 1 and cut["epsilon"] > 0
    assert "cuts, epsilon" in qbench_table(rows)


def qbench_table(rows):
    from cvxmetric import bench

    return bench.format_table(rows)

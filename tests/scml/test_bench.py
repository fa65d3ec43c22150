"""The SCML benchmark (``cvxmetric bench --family scml``) at a tiny size,
and the metric-learn side-by-side's comparison on saved data."""

import numpy as np

from cvxmetric.bench import scml as sb
from cvxmetric.cli import _bench_families


def test_a_case_runs_and_is_certified():
    assert "scml" in _bench_families()
    assert [c[0] for c in sb.BENCH_CASES] == ["scml-digits"]
    out = sb.run_case({"problem": "scml-digits", "method": "fast", "seed": 0, "n": 200})
    assert out.get("error") is None
    assert out["status"] == "optimal" and out["cert_rel_gap"] <= 1e-6
    assert out["n"] == 200 and out["N"] > 0 and out["working_set"] <= out["N"]
    assert "optimal (working set" in sb._status("scml-digits", out)


def test_compare_rows():
    from sklearn.datasets import load_iris
    from sklearn.preprocessing import StandardScaler

    from cvxmetric.bench._ml_scml import SIDE, compare
    from cvxmetric.scml import knn_triplets, lda_basis

    assert "saved = " in SIDE and "scml_triplets" in SIDE
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    Xtr, ytr, Xte, yte = X[::2], y[::2], X[1::2], y[1::2]
    # metric-learn's saved answer, stood in for by the Euclidean metric
    saved = {"Xtr": Xtr, "ytr": ytr, "Xte": Xte, "yte": yte,
             "scml_triplets": knn_triplets(Xtr, ytr, 3, 10),
             "scml_basis": lda_basis(Xtr, ytr, random_state=0), "scml_beta": 1e-5,
             "scml_M": np.eye(4) * 0.1, "scml_time": 1.0}
    (row,) = compare("iris", saved)
    assert set(row) == {"dataset", "method", "excess", "certified", "t_ml", "t_ours",
                        "acc_ml", "acc_ours"}
    assert row["method"] == "SCML" and row["certified"] and row["excess"] > 0

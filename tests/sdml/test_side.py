"""cvxmetric.bench._ml_sdml: the metric-learn side's script is valid Python
that sets ``saved``, and ``compare`` turns a saved fit into table rows
(metric-learn's own environment is not needed: its saved arrays are
made here)."""

import ast

import numpy as np
from sklearn.datasets import load_iris

from cvxmetric.bench import _ml_sdml
from cvxmetric.constraints import pairs_from_labels
from cvxmetric.sdml import SDMLData, solve_fast


def test_side_script_parses_and_sets_saved():
    tree = ast.parse(_ml_sdml.SIDE)
    names = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
             for t in node.targets if isinstance(t, ast.Name)}
    assert "saved" in names


def test_compare_rows():
    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    Xtr, ytr, Xte, yte = X[::2], y[::2], X[1::2], y[1::2]
    pairs, labels = pairs_from_labels(ytr, 180, random_state=0)
    # a metric-learn matrix for the bounded setting: the optimum, perturbed
    M = solve_fast(SDMLData(Xtr, pairs, labels, 1e-5, 0.01)).M
    saved = {"Xtr": Xtr, "Xte": Xte, "ytr": ytr, "yte": yte, "sdml_pairs": pairs,
             "sdml_labels": labels.astype(float),
             "sdml_M_defaults": np.full((4, 4), np.nan), "sdml_time_defaults": 0.1,
             "sdml_outcome_defaults": np.array("RuntimeError: cov_init"),
             "sdml_M_b1e-5": M + 0.01 * np.eye(4), "sdml_time_b1e-5": 0.1,
             "sdml_outcome_b1e-5": np.array("ok")}
    rows = _ml_sdml.compare("iris", saved)
    assert [r["method"] for r in rows] == ["SDML (defaults)", "SDML (b1e-5)"]
    default, bounded = rows
    assert default["outcome_ours"] == "UnboundedError" and default["certified"]
    assert np.isnan(default["excess"]) and np.isnan(default["acc_ml"])
    assert bounded["certified"] and bounded["outcome_ours"] == "optimal"
    assert bounded["excess"] > 0 and 0 < bounded["acc_ours"] <= 1
    assert 0 < bounded["acc_ml"] <= 1

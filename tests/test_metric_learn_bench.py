"""The metric-learn side-by-side (cvxmetric.bench.metric_learn) without
metric-learn: its comparison on saved fits, here the Euclidean metric, which
no certified optimum may exceed."""

import numpy as np
from sklearn.datasets import load_iris
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from cvxmetric.bench.metric_learn import PLUGINS, SIDE_SCRIPT, _plugin, compare, table


def _saved():
    X, y = load_iris(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    scaler = StandardScaler().fit(Xtr)
    Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
    rng = np.random.default_rng(0)
    pairs = rng.choice(len(ytr), size=(60, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    labels = np.where(ytr[pairs[:, 0]] == ytr[pairs[:, 1]], 1.0, -1.0)
    eye = np.eye(X.shape[1])
    return dict(Xtr=Xtr, Xte=Xte, ytr=ytr, yte=yte, mmc_pairs=pairs, mmc_labels=labels,
                lmnn_M=eye, lmnn_t=0.0, mmc_M=eye, mmc_t=0.0)


def test_compare_and_table():
    rows = compare("iris", _saved(), ("lmnn", "mmc"))
    assert [r["method"] for r in rows] == ["LMNN", "MMC"]
    for r in rows:
        assert r["certified"]
        assert r["excess"] >= -1e-6          # the identity is no better than the optimum
        assert 0.0 <= r["acc_ml"] <= 1.0 and 0.0 <= r["acc_ours"] <= 1.0
    text = table(rows)
    assert text.count("\n") == 3 and "| iris | LMNN |" in text


def test_a_failed_fit_is_a_row():
    saved = _saved()
    saved["mmc_error"] = "ValueError: metric-learn refused"
    rows = compare("iris", saved, ("mmc",))
    assert rows == [{"dataset": "iris", "method": "MMC",
                     "error": "ValueError: metric-learn refused"}]
    assert "metric-learn raised ValueError" in table(rows)


def test_side_code_compiles():
    compile(SIDE_SCRIPT, "metric_learn_side", "exec")
    for name in PLUGINS:
        plugin = _plugin(name)
        compile(plugin.SIDE, f"metric_learn_side_{name}", "exec")
        assert callable(plugin.compare)

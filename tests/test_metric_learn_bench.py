"""The metric-learn side-by-side (cvxmetric.bench.metric_learn) without
metric-learn: its comparison on saved fits, here the Euclidean metric, which
no certified optimum may exceed."""

import numpy as np
from sklearn.datasets import load_iris
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from cvxmetric.bench.metric_learn import SIDE_SCRIPT, compare, table


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
    return dict(Xtr=Xtr, Xte=Xte, ytr=ytr, yte=yte, pairs=pairs, labels=labels,
                M_lmnn=eye, t_lmnn=0.0, M_mmc=eye, t_mmc=0.0)


def test_compare_and_table():
    rows = compare("iris", _saved())
    assert [r["method"] for r in rows] == ["LMNN", "MMC"]
    for r in rows:
        assert r["certified"]
        assert r["excess"] >= -1e-6          # the identity is no better than the optimum
        assert 0.0 <= r["acc_ml"] <= 1.0 and 0.0 <= r["acc_ours"] <= 1.0
    text = table(rows)
    assert text.count("\n") == 3 and "| iris | LMNN |" in text


def test_side_script_compiles():
    compile(SIDE_SCRIPT, "metric_learn_side", "exec")

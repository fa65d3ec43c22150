"""The RCA / LFDA benchmark (``cvxmetric bench --family rca``) and the
metric-learn side by side (:mod:`cvxmetric.bench._ml_rca`)."""

import numpy as np
from sklearn.datasets import load_iris
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from cvxmetric import LFDA, RCA
from cvxmetric.bench import _ml_rca
from cvxmetric.bench import rca as rb
from cvxmetric.cli import _bench_families
from cvxmetric.rca import chunks_from_labels


def test_the_family_has_a_benchmark_and_its_fast_cases_run():
    assert "rca" in _bench_families()
    assert [c[0] for c in rb.BENCH_CASES] == ["rca-digits", "lfda-digits"]
    out = rb.run_case({"problem": "rca-digits", "method": "fast", "seed": 0})
    assert out.get("error") is None and out["status"] == "optimal"
    assert out["cert_rel_gap"] <= 1e-6 and out["N"] == 100 and out["d"] == 64
    out = rb.run_case({"problem": "lfda-digits", "method": "eigh", "seed": 0})
    assert out.get("error") is None and out["rank"] <= 64


def _saved():
    """What SIDE saves, with cvxmetric's own answers in metric-learn's place
    (metric-learn's environment is not this one)."""
    X, y = load_iris(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y,
                                          random_state=0)
    scaler = StandardScaler().fit(Xtr)
    Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
    chunks, _ = chunks_from_labels(ytr, 100, 2, random_state=np.random.RandomState(0))
    return {"Xtr": Xtr, "Xte": Xte, "ytr": ytr, "yte": yte, "rca_chunks": chunks,
            "rca_components": RCA().fit(Xtr, chunks).components_, "rca_time": 0.1,
            "lfda_components": LFDA().fit(Xtr, ytr).components_, "lfda_time": 0.1}


def test_compare_rows():
    rows = _ml_rca.compare("iris", _saved())
    assert [r["method"] for r in rows] == ["RCA", "LFDA"]
    keys = {"dataset", "method", "excess", "certified", "t_ml", "t_ours", "acc_ml",
            "acc_ours"}
    assert all(set(r) == keys for r in rows)
    rca, lfda = rows
    assert abs(rca["excess"]) <= 1e-12 and rca["certified"] is True
    assert lfda["excess"] <= 1e-12 and lfda["certified"] is None
    assert rca["acc_ml"] == rca["acc_ours"] and 0.8 <= rca["acc_ours"] <= 1.0
    # a worse matrix (the identity) has a positive excess on RCA's objective
    saved = _saved()
    saved["rca_components"] = np.eye(4)
    assert _ml_rca.compare("iris", saved)[0]["excess"] > 1e-3


def test_side_code_compiles_and_sets_saved():
    code = compile(_ml_rca.SIDE, "SIDE", "exec")
    assert "saved" in code.co_names

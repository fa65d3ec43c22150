"""metric-learn 0.7's SDML beside cvxmetric's certified SDML.

:data:`SIDE` runs inside metric-learn's environment, once per dataset, with
``np``, ``time``, ``metric_learn``, ``Constraints``, ``Xtr``, ``ytr`` (the
standardised training split) and ``name`` bound; it sets ``saved``, a dict
of arrays (keys prefixed ``sdml_``): the labelled pairs it drew
(metric-learn's ``20 C^2`` positive and as many negative pairs, seed 0) and,
for each setting -- metric-learn's defaults (``balance_param = 0.5``,
``sparsity_param = 0.01``) and ``balance_param = 1e-5`` -- the learned
matrix (NaN when the fit raised), its time and its outcome (``"ok"`` or
the exception's type and message).  :func:`compare` fits cvxmetric's
``SDML`` on the same pairs at the same settings and evaluates metric-learn's
matrix on SDML's objective: at metric-learn's defaults the objective is
unbounded below on these data (a feature's ``P_ii < 0``), which cvxmetric
certifies with a ray, so there is no optimum to compare with.
"""

import time

import numpy as np

__all__ = ["SIDE", "SETTINGS", "compare"]

#: ``(label, balance_param, sparsity_param)`` of the fits on both sides.
SETTINGS = (("defaults", 0.5, 0.01), ("b1e-5", 1e-5, 0.01))

SIDE = r'''
import warnings as _w
_n_classes = len(np.unique(ytr))
_a, _b, _c, _d = Constraints(ytr).positive_negative_pairs(
    20 * _n_classes ** 2, random_state=np.random.RandomState(0))
_pairs = np.vstack([np.column_stack([_a, _b]), np.column_stack([_c, _d])])
_labels = np.r_[np.ones(len(_a)), -np.ones(len(_c))]
saved = {"sdml_pairs": _pairs, "sdml_labels": _labels}
for _label, _balance, _sparsity in (("defaults", 0.5, 0.01), ("b1e-5", 1e-5, 0.01)):
    _M, _outcome = np.full((Xtr.shape[1],) * 2, np.nan), "ok"
    _t = time.perf_counter()
    try:
        with _w.catch_warnings():
            _w.simplefilter("ignore")
            _est = metric_learn.SDML(balance_param=_balance, sparsity_param=_sparsity,
                                     prior="identity", random_state=0)
            _est.fit(Xtr[_pairs], _labels)
        _M = _est.get_mahalanobis_matrix()
    except Exception as _exc:
        _msg = str(_exc)
        _outcome = f"{type(_exc).__name__}: " + (_msg if len(_msg) <= 300
                                                 else "..." + _msg[-240:])
    saved[f"sdml_M_{_label}"] = _M
    saved[f"sdml_time_{_label}"] = time.perf_counter() - _t
    saved[f"sdml_outcome_{_label}"] = np.array(_outcome)
'''


def _knn(M, saved):
    from sklearn.neighbors import KNeighborsClassifier

    if M is None or not np.all(np.isfinite(M)):
        return float("nan")
    w, V = np.linalg.eigh(0.5 * (M + M.T))
    L = V * np.sqrt(np.maximum(w, 0.0))
    Xtr, Xte, ytr, yte = (saved[k] for k in ("Xtr", "Xte", "ytr", "yte"))
    return KNeighborsClassifier(3).fit(Xtr @ L, ytr).score(Xte @ L, yte)


def _ours(Xtr, pairs, labels, balance, sparsity):
    """``(estimator or None, outcome, seconds)`` of cvxmetric's SDML."""
    from cvxmetric import SDML
    from cvxmetric.result import SolverError

    t = time.perf_counter()
    try:
        est = SDML(balance_param=balance, sparsity_param=sparsity,
                   preprocessor=Xtr).fit(pairs, labels)
    except SolverError as exc:
        return None, f"{type(exc).__name__}", time.perf_counter() - t
    return est, est.status_, time.perf_counter() - t


def compare(name, saved):
    """One row per setting of :data:`SETTINGS`: metric-learn's relative
    excess on SDML's objective over cvxmetric's certified optimum (NaN when
    either side has no answer; ``inf`` when metric-learn's matrix is not
    positive definite), both times, both 3-NN accuracies, and each side's
    outcome."""
    from cvxmetric.sdml import SDMLData

    Xtr = saved["Xtr"]
    pairs = np.asarray(saved["sdml_pairs"], dtype=np.intp)
    labels = np.asarray(saved["sdml_labels"]).astype(int)
    rows = []
    for label, balance, sparsity in SETTINGS:
        M_ml = np.asarray(saved[f"sdml_M_{label}"], dtype=float)
        outcome_ml = str(saved[f"sdml_outcome_{label}"])
        est, outcome, t_ours = _ours(Xtr, pairs, labels, balance, sparsity)
        excess = float("nan")
        if est is not None and np.all(np.isfinite(M_ml)):
            data = SDMLData(Xtr, pairs, labels, balance, sparsity)
            f_star = est.objective_
            excess = (data.objective(M_ml) - f_star) / max(1.0, abs(f_star))
        rows.append(dict(
            dataset=name, method=f"SDML ({label})", excess=excess,
            # a certified optimum, or the certified ray of UnboundedError
            certified=bool(outcome == "UnboundedError"
                           or (est is not None and est.certificate_.passed)),
            t_ml=float(saved[f"sdml_time_{label}"]), t_ours=t_ours,
            acc_ml=_knn(M_ml, saved),
            acc_ours=_knn(None if est is None else est.get_mahalanobis_matrix(), saved),
            outcome_ml=outcome_ml, outcome_ours=outcome))
    return rows

"""metric-learn 0.7's RCA and LFDA beside cvxmetric's, for
:mod:`cvxmetric.bench.metric_learn`.

:data:`SIDE` runs in metric-learn's environment once per dataset, with
``np``, ``time``, ``metric_learn``, ``Constraints``, ``Xtr``, ``ytr`` (the
standardised training split) and ``name`` bound; it sets ``saved``: the
chunklets it drew (metric-learn's ``RCA_Supervised`` draw at its defaults,
100 chunklets of 2, or as many as the classes allow -- metric-learn
raises otherwise -- with ``random_state=0``), the matrices of
``RCA().fit(Xtr, chunks)`` and ``LFDA()`` (its defaults) and their times.
:func:`compare` fits cvxmetric's ``RCA`` on the same chunklets and
``LFDA`` with the same defaults and returns one row each.

* RCA: ``excess`` is metric-learn's value of RCA's objective (Sec. 4.2,
  ``<C, M>`` at ``|M| = 1``: its matrix scaled onto the constraint, the
  best feasible multiple of it) relative to cvxmetric's certified optimum.
* LFDA: there is no objective to certify (a trace ratio, and at
  ``n_components = d`` every invertible transformation has the same ratio),
  so ``excess`` is the relative difference of the learned matrices,
  ``||M_ml - M||_F / ||M||_F``, and ``certified`` is ``None``.
  metric-learn 0.7 departs from the paper in its local scaling and in
  ``S_b`` (``docs/closed_forms.md``): the difference is theirs.
"""

import time

import numpy as np

__all__ = ["SIDE", "compare"]

#: metric-learn's side, run once per dataset (names bound: module docstring).
SIDE = r'''
_, _counts = np.unique(ytr, return_counts=True)
rca_n_chunks = int(min(100, np.sum(_counts // 2)))
rca_chunks = Constraints(ytr).chunks(n_chunks=rca_n_chunks, chunk_size=2,
                                     random_state=np.random.RandomState(0))
_t = time.perf_counter()
_rca = metric_learn.RCA().fit(Xtr, rca_chunks)
rca_time = time.perf_counter() - _t
_t = time.perf_counter()
_lfda = metric_learn.LFDA().fit(Xtr, ytr)
lfda_time = time.perf_counter() - _t
saved = {"rca_chunks": rca_chunks, "rca_components": _rca.components_,
         "rca_time": rca_time, "lfda_components": _lfda.components_,
         "lfda_time": lfda_time}
'''


def _knn(L, Xtr, ytr, Xte, yte):
    """3-NN test accuracy in the coordinates ``X L^T`` (``nan`` when ``L``
    is not finite: metric-learn's answer on a singular problem)."""
    from sklearn.neighbors import KNeighborsClassifier

    if not np.all(np.isfinite(L)):
        return float("nan")
    return float(KNeighborsClassifier(3).fit(Xtr @ L.T, ytr).score(Xte @ L.T, yte))


def _unit_det(M):
    """``M / |M|^{1/d}`` (``None`` when ``M`` is not finite and definite)."""
    if not np.all(np.isfinite(M)):
        return None
    w = np.linalg.eigvalsh(0.5 * (M + M.T))
    return None if w[0] <= 0 else M * np.exp(-np.mean(np.log(w)))


def _rca_row(name, saved, split):
    import warnings

    from cvxmetric import RCA
    from cvxmetric.rca import RCAData

    Xtr, ytr, Xte, yte = split
    chunks = np.asarray(saved["rca_chunks"], dtype=int)
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a reduction says so
        ours = RCA().fit(Xtr, chunks)
    t_ours = time.perf_counter() - t
    L_ml = np.asarray(saved["rca_components"], dtype=float)
    excess = float("nan")
    M_ml = _unit_det(L_ml.T @ L_ml) if ours.projection_ is None else None
    if M_ml is not None:
        f_ml = RCAData(Xtr, chunks).objective(M_ml)
        excess = (f_ml - ours.objective_) / abs(ours.objective_)
    return dict(dataset=name, method="RCA", excess=excess,
                certified=bool(ours.certificate_.passed),
                t_ml=float(saved["rca_time"]), t_ours=t_ours,
                acc_ml=_knn(L_ml, Xtr, ytr, Xte, yte),
                acc_ours=_knn(ours.components_, Xtr, ytr, Xte, yte))


def _lfda_row(name, saved, split):
    from cvxmetric import LFDA

    Xtr, ytr, Xte, yte = split
    t = time.perf_counter()
    ours = LFDA().fit(Xtr, ytr)
    t_ours = time.perf_counter() - t
    L_ml = np.asarray(saved["lfda_components"], dtype=float)
    M, M_ml = ours.get_mahalanobis_matrix(), L_ml.T @ L_ml
    excess = float(np.linalg.norm(M_ml - M) / np.linalg.norm(M)) \
        if np.all(np.isfinite(M_ml)) else float("nan")
    return dict(dataset=name, method="LFDA", excess=excess, certified=None,
                t_ml=float(saved["lfda_time"]), t_ours=t_ours,
                acc_ml=_knn(L_ml, Xtr, ytr, Xte, yte),
                acc_ours=_knn(ours.components_, Xtr, ytr, Xte, yte))


def compare(name, saved):
    """Rows for RCA and LFDA (module docstring for what ``excess`` is).

    Parameters
    ----------
    name : str
    saved : dict
        :data:`SIDE`'s ``saved`` with ``Xtr``, ``Xte``, ``ytr``, ``yte``.

    Returns
    -------
    list of dict
        Keys ``dataset, method, excess, certified, t_ml, t_ours, acc_ml,
        acc_ours``.
    """
    split = tuple(np.asarray(saved[k]) for k in ("Xtr", "ytr", "Xte", "yte"))
    return [_rca_row(name, saved, split), _lfda_row(name, saved, split)]

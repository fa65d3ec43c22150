"""metric-learn 0.7's ITML beside cvxmetric's certified optimum: the side
run in metric-learn's environment (:data:`SIDE`) and the comparison
(:func:`compare`), for :mod:`cvxmetric.bench.metric_learn`.

metric-learn's side draws metric-learn's default pairs for
``ITML_Supervised`` (``Constraints(ytr).positive_negative_pairs(20 C^2)``
with ``RandomState(0)``; pairs of identical points dropped), fits
``metric_learn.ITML`` at its defaults on them (``gamma = 1``, the identity
prior, ``max_iter = 1000``, ``tol = 1e-3``, its default bounds) and saves
the pairs, labels, bounds, matrix, passes and time.  This side fits
cvxmetric's ``ITML`` (``solver="fast"``, certified) on the same pairs with
the same bounds, evaluates metric-learn's matrix on ITML's objective (with
its best slacks) and reports the relative excess over the certified
optimum, both times and both 3-NN test accuracies.
"""

import time

import numpy as np

__all__ = ["SIDE", "compare"]

#: Run inside metric-learn's environment once per dataset, with ``np``,
#: ``time``, ``metric_learn``, ``Constraints``, ``Xtr``, ``ytr`` and
#: ``name`` bound; sets ``saved`` (keys prefixed ``itml_``).
SIDE = r'''
n_classes = len(np.unique(ytr))
a, b, c, d = Constraints(ytr).positive_negative_pairs(
    20 * n_classes ** 2, random_state=np.random.RandomState(0))
itml_pairs = np.vstack([np.column_stack([a, b]), np.column_stack([c, d])])
itml_labels = np.r_[np.ones(len(a)), -np.ones(len(c))]
itml_keep = (Xtr[itml_pairs[:, 0]] != Xtr[itml_pairs[:, 1]]).any(axis=1)
itml_pairs, itml_labels = itml_pairs[itml_keep], itml_labels[itml_keep]
itml_t = time.perf_counter()
itml_model = metric_learn.ITML(random_state=0).fit(Xtr[itml_pairs], itml_labels)
itml_t = time.perf_counter() - itml_t
saved = {"itml_pairs": itml_pairs, "itml_labels": itml_labels,
         "itml_bounds": np.asarray(itml_model.bounds_, dtype=float),
         "itml_M": itml_model.get_mahalanobis_matrix(),
         "itml_n_iter": float(itml_model.n_iter_), "itml_time": float(itml_t)}
'''


def _knn(M, Xtr, ytr, Xte, yte):
    """3-NN test accuracy in the metric ``M``."""
    from sklearn.neighbors import KNeighborsClassifier

    w, V = np.linalg.eigh(0.5 * (M + M.T))
    L = V * np.sqrt(np.maximum(w, 0.0))
    return float(KNeighborsClassifier(3).fit(Xtr @ L, ytr).score(Xte @ L, yte))


def compare(name, saved):
    """The ITML row: metric-learn's excess on ITML's objective over the
    certified optimum of the same pairs, bounds, ``gamma`` and prior.

    Parameters
    ----------
    name : str
        The dataset.
    saved : dict
        What :data:`SIDE` saved, with ``Xtr``, ``Xte``, ``ytr``, ``yte``.

    Returns
    -------
    list of dict
        One row: ``dataset``, ``method`` (``"ITML"``), ``excess``,
        ``certified``, ``t_ml``, ``t_ours``, ``acc_ml``, ``acc_ours``.
    """
    from cvxmetric import ITML
    from cvxmetric.itml import ITMLData

    Xtr, Xte, ytr, yte = (saved[k] for k in ("Xtr", "Xte", "ytr", "yte"))
    pairs = np.asarray(saved["itml_pairs"], dtype=np.intp)
    labels = np.asarray(saved["itml_labels"]).astype(int)
    bounds = np.asarray(saved["itml_bounds"], dtype=float)
    t = time.perf_counter()
    ours = ITML(preprocessor=Xtr).fit(pairs, labels, bounds=bounds)
    t_ours = time.perf_counter() - t
    data = ITMLData(Xtr, pairs, labels, gamma=1.0, bounds=bounds)
    f_ml, f_ours = data.objective(saved["itml_M"]), ours.objective_
    return [dict(dataset=name, method="ITML", excess=(f_ml - f_ours) / abs(f_ours),
                 certified=bool(ours.certificate_.passed),
                 t_ml=float(saved["itml_time"]), t_ours=t_ours,
                 acc_ml=_knn(saved["itml_M"], Xtr, ytr, Xte, yte),
                 acc_ours=_knn(ours.get_mahalanobis_matrix(), Xtr, ytr, Xte, yte))]

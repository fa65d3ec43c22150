"""What every plugin of :mod:`cvxmetric.bench.metric_learn` measures."""

import numpy as np

__all__ = ["knn_accuracy", "relative_excess"]


def knn_accuracy(M, Xtr, ytr, Xte, yte, k=3):
    """k-NN test accuracy under the Mahalanobis metric ``M`` (PSD part)."""
    from sklearn.neighbors import KNeighborsClassifier

    w, V = np.linalg.eigh(0.5 * (M + M.T))
    L = V * np.sqrt(np.maximum(w, 0.0))
    return float(KNeighborsClassifier(k).fit(Xtr @ L, ytr).score(Xte @ L, yte))


def relative_excess(f_other, f_certified):
    """``(f_other - f*) / |f*|``: how far another answer is above the
    certified optimum ``f*`` of the same objective (``nan`` when the other
    side gave no answer)."""
    if f_other is None or not np.isfinite(f_other):
        return float("nan")
    return float((f_other - f_certified) / max(abs(f_certified), np.finfo(float).tiny))

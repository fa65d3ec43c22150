"""metric-learn's LMNN beside cvxmetric's certified LMNN (one plugin of
:mod:`cvxmetric.bench.metric_learn`)."""

import time

from ._ml_common import knn_accuracy, relative_excess

__all__ = ["SIDE", "compare"]

#: Run in metric-learn's environment (see :mod:`cvxmetric.bench.metric_learn`):
#: its LMNN at k = 3 and its other defaults.
SIDE = r'''
t = time.perf_counter()
lmnn = metric_learn.LMNN(n_neighbors=3, random_state=0).fit(Xtr, ytr)
saved = {"lmnn_M": lmnn.get_mahalanobis_matrix(), "lmnn_t": time.perf_counter() - t}
'''


def compare(name, saved):
    """metric-learn's ``M`` on LMNN's JMLR 2009 objective (k = 3, mu = 0.5)
    against the certified optimum of the same data."""
    from ..lmnn._problem import LMNNData
    from ..lmnn.estimator import LMNN

    Xtr, Xte, ytr, yte = (saved[k] for k in ("Xtr", "Xte", "ytr", "yte"))
    t = time.perf_counter()
    ours = LMNN(k=3).fit(Xtr, ytr)
    t_ours = time.perf_counter() - t
    M_ml = saved["lmnn_M"]
    f_ml = LMNNData(Xtr, ytr, k=3, mu=0.5).objective(M_ml)
    return [dict(dataset=name, method="LMNN",
                 excess=relative_excess(f_ml, ours.objective_),
                 certified=bool(ours.certificate_.passed), t_ml=float(saved["lmnn_t"]),
                 t_ours=t_ours, acc_ml=knn_accuracy(M_ml, Xtr, ytr, Xte, yte),
                 acc_ours=knn_accuracy(ours.get_mahalanobis_matrix(), Xtr, ytr, Xte, yte))]

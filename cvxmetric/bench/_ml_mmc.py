"""metric-learn's MMC beside cvxmetric's certified MMC (one plugin of
:mod:`cvxmetric.bench.metric_learn`)."""

import time

from ._ml_common import knn_accuracy, relative_excess

__all__ = ["SIDE", "compare"]

#: Run in metric-learn's environment: pairs drawn once by metric-learn's
#: ``Constraints`` (20 n_classes^2 of each kind, its supervised default),
#: identical points dropped, then its MMC at its defaults.
SIDE = r'''
n_classes = len(np.unique(ytr))
a, b, c, d = Constraints(ytr).positive_negative_pairs(
    20 * n_classes ** 2, random_state=np.random.RandomState(0))
pairs = np.vstack([np.column_stack([a, b]), np.column_stack([c, d])])
labels = np.r_[np.ones(len(a)), -np.ones(len(c))]
keep = (Xtr[pairs[:, 0]] != Xtr[pairs[:, 1]]).any(axis=1)  # no identical points
pairs, labels = pairs[keep], labels[keep]
t = time.perf_counter()
mmc = metric_learn.MMC(random_state=0).fit(Xtr[pairs], labels)
saved = {"mmc_pairs": pairs, "mmc_labels": labels,
         "mmc_M": mmc.get_mahalanobis_matrix(), "mmc_t": time.perf_counter() - t}
'''


def compare(name, saved):
    """metric-learn's ``M`` on MMC's scale-free value (the objective's ratio,
    which does not depend on the scale of ``M``) against the certified
    optimum on the same pairs."""
    from ..mmc import MMC, MMCData

    Xtr, Xte, ytr, yte = (saved[k] for k in ("Xtr", "Xte", "ytr", "yte"))
    pairs, labels, M_ml = saved["mmc_pairs"], saved["mmc_labels"], saved["mmc_M"]
    t = time.perf_counter()
    ours = MMC(preprocessor=Xtr).fit(pairs, labels)
    t_ours = time.perf_counter() - t
    r_ml = MMCData.create(Xtr, pairs, labels).scale_free(M_ml)
    return [dict(dataset=name, method="MMC",
                 excess=relative_excess(r_ml, ours.scale_free_objective_),
                 certified=bool(ours.certificate_.passed), t_ml=float(saved["mmc_t"]),
                 t_ours=t_ours, acc_ml=knn_accuracy(M_ml, Xtr, ytr, Xte, yte),
                 acc_ours=knn_accuracy(ours.get_mahalanobis_matrix(), Xtr, ytr, Xte, yte))]

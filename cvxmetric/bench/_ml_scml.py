"""metric-learn 0.7's SCML_Supervised beside cvxmetric's certified optimum.

:data:`SIDE` runs inside metric-learn's environment once per dataset (the
names ``np``, ``time``, ``metric_learn``, ``Constraints``, ``Xtr``,
``ytr``, ``name`` bound): it fits ``metric_learn.SCML_Supervised(
random_state=0)`` at its defaults (k_genuine = 3, k_impostor = 10, the
local-LDA basis, the stochastic method's 10 000 steps) and saves in
``saved`` the triplets and the basis that fit used (rebuilt by
metric-learn's own functions with the same seed: its k-NN triplets and
its seeded ``_generate_bases_LDA``), its metric and its time.
:func:`compare` evaluates that metric on SCML's objective over the same
triplets, basis and ``beta`` (the basis rows have unit norm, so ``||w||_1
= tr M`` and the objective is a function of ``M``: :meth:`SCMLData.
objective_of_metric <cvxmetric.scml.SCMLData.objective_of_metric>`),
beside the certified optimum of that problem, and fits cvxmetric's
``SCML_Supervised`` for the times and 3-NN accuracies.
"""

import time

import numpy as np

__all__ = ["SIDE", "compare"]

#: Run in metric-learn's environment per dataset; sets ``saved``.
SIDE = r'''
import warnings as _w
with _w.catch_warnings():
    _w.simplefilter("ignore")
    _t = time.perf_counter()
    _scml = metric_learn.SCML_Supervised(random_state=0).fit(Xtr, ytr)
    _t_scml = time.perf_counter() - _t
    # what that fit used, rebuilt by metric-learn's own code and seed
    _triplets = Constraints(ytr).generate_knntriplets(Xtr, 3, 10)
    _basis, _ = metric_learn.SCML_Supervised(random_state=0)._generate_bases_LDA(Xtr, ytr)
saved = {"scml_triplets": np.asarray(_triplets, dtype=np.int64),
         "scml_basis": np.asarray(_basis, dtype=float),
         "scml_M": _scml.get_mahalanobis_matrix(), "scml_beta": 1e-5,
         "scml_time": _t_scml}
print(name, "SCML", round(_t_scml, 2), flush=True)
'''


def _knn(M, Xtr, ytr, Xte, yte):
    from sklearn.neighbors import KNeighborsClassifier

    w, V = np.linalg.eigh(0.5 * (M + M.T))
    L = V * np.sqrt(np.maximum(w, 0.0))
    return KNeighborsClassifier(3).fit(Xtr @ L, ytr).score(Xte @ L, yte)


def compare(name, saved):
    """One row: metric-learn's SCML_Supervised against the certified optimum
    of the same problem (triplets, basis, ``beta``), both times (each
    library's ``SCML_Supervised.fit(Xtr, ytr)``, bases and triplets
    included) and both 3-NN test accuracies.

    Returns
    -------
    list of dict
        Keys ``dataset``, ``method`` (``"SCML"``), ``excess`` (``(f_ml -
        f_ours) / |f_ours|``), ``certified``, ``t_ml``, ``t_ours``,
        ``acc_ml``, ``acc_ours``.
    """
    import warnings

    from ..constraints import informative
    from ..scml import SCML_Supervised, SCMLData, SCMLWorkingSet

    Xtr, Xte, ytr, yte = (np.asarray(saved[k]) for k in ("Xtr", "Xte", "ytr", "yte"))
    triplets = np.asarray(saved["scml_triplets"])
    # a triplet of two identical pairs (duplicate samples) has hinge 1
    # whatever the metric: the same constant in both objectives, dropped
    # from the LP and added back
    keep = informative(Xtr, triplets)
    data = SCMLData(Xtr, triplets[keep], np.asarray(saved["scml_basis"]),
                    float(saved["scml_beta"]))
    res = SCMLWorkingSet().run(data, warn=False)
    frac = float(keep.mean())

    def on_all(f_kept, l1):
        # the mean hinge over every triplet: the dropped ones count 1 each
        return frac * (f_kept - data.beta * l1) + (1.0 - frac) + data.beta * l1

    f_ours = on_all(res.objective, float(res.info["w"].sum()))
    M_ml = np.asarray(saved["scml_M"])
    f_ml = on_all(data.objective_of_metric(M_ml), float(np.trace(M_ml)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        ours = SCML_Supervised(random_state=0).fit(Xtr, ytr)
        t_ours = time.perf_counter() - t
    return [dict(dataset=name, method="SCML", excess=(f_ml - f_ours) / abs(f_ours),
                 certified=bool(res.certificate.passed and ours.certificate_.passed),
                 t_ml=float(saved["scml_time"]), t_ours=t_ours,
                 acc_ml=_knn(M_ml, Xtr, ytr, Xte, yte),
                 acc_ours=_knn(ours.get_mahalanobis_matrix(), Xtr, ytr, Xte, yte))]

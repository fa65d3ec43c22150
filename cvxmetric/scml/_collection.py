"""The SCML family of the problem collection (registered on import).

An instance is a sample matrix ``X``, triplets ``(t, t+, t-)`` of indices
into it, a basis of unit-norm rows and the hyperparameter ``beta``.  The
verified objective is the AAAI 2014 objective recomputed from the returned
metric (:meth:`~cvxmetric.scml.SCMLData.objective_of_metric`: with unit-norm
basis rows ``||w||_1 = tr(M)``).  Its methods are the certified working
set (``fast``) and the paper's stochastic method (``stochastic``, its gap
reported, not judged).
"""

import numpy as np

from ..collection import ArraySpec, FamilySpec, exact_solves, register_family
from ..lmnn._collection import _subsample

__all__ = ["SCML_ARRAYS", "SCML_HYPERPARAMETERS", "bundled_instances"]

SCML_ARRAYS = (
    ArraySpec("X", "float", ("n", "d"), doc="samples, one per row"),
    ArraySpec("triplets", "int", ("T", 3), doc="(t, t+, t-): x_t+ nearer to x_t"),
    ArraySpec("basis", "float", ("K", "d"), doc="basis vectors b_i (unit-norm rows)"),
)

SCML_HYPERPARAMETERS = {"beta": 1e-5}


def _to_data(arrays, hp):
    from ._problem import SCMLData

    return SCMLData(arrays["X"], arrays["triplets"], arrays["basis"], beta=hp["beta"])


def _objective(data, M):
    return data.objective_of_metric(M)


_exact, _reference_solve = exact_solves("scml")


def _sizes(arrays):
    n, d = arrays["X"].shape
    return {"n": int(n), "d": int(d), "T": int(arrays["triplets"].shape[0]),
            "K": int(arrays["basis"].shape[0])}


def bundled_instances():
    """The bundled SCML instances (metric-learn's triplets and bases)."""
    from sklearn.datasets import load_iris, load_wine

    from ._problem import SCMLData

    def instance(name, X, y, source, seed, text, beta=1e-5, basis="lda", **kw):
        data = SCMLData.from_labels(X, y, basis=basis, beta=beta, random_state=seed,
                                    **kw)
        return dict(name=name, source=source, random_state=seed,
                    description=f"SCML (beta = {beta:g}, {basis} basis): {text}.",
                    arrays={"X": X, "triplets": data.triplets.astype(np.int64),
                            "basis": data.basis}, hyperparameters={"beta": beta})

    X, y = load_iris(return_X_y=True)
    sub = _subsample(y, 20, 0)
    Xs = (X[sub] - X[sub].mean(axis=0)) / X[sub].std(axis=0)
    out = [instance("iris60", Xs, y[sub], "iris", 0,
                    "60 iris samples (20 per class), standardised; k_genuine = 3, "
                    "k_impostor = 10")]
    X, y = load_wine(return_X_y=True)
    sub = _subsample(y, 15, 1)
    Xs = (X[sub] - X[sub].mean(axis=0)) / X[sub].std(axis=0)
    out.append(instance("wine45", Xs, y[sub], "wine", 1,
                        "45 wine samples (15 per class), standardised; k_genuine = 2, "
                        "k_impostor = 5, beta = 1e-3", beta=1e-3, k_genuine=2,
                        k_impostor=5))
    out.append(instance("wine45_diffs", Xs, y[sub], "wine", 1,
                        "the same 45 wine samples with the 'triplet_diffs' basis of "
                        "200 vectors", basis="triplet_diffs", n_basis=200))
    return out


register_family(
    FamilySpec(
        name="scml",
        arrays=SCML_ARRAYS,
        hyperparameters=SCML_HYPERPARAMETERS,
        to_data=_to_data,
        objective=_objective,
        exact=_exact,
        reference_solve=_reference_solve,
        sizes=_sizes,
        generate=bundled_instances,
    ),
)

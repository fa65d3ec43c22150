"""The LMNN family of the problem collection (registered on import).

An instance is a sample matrix ``X``, its class labels ``y`` and the
hyperparameters ``k`` (target neighbours per sample) and ``mu`` (the push
term's weight); the target neighbours are found from them
(:func:`~cvxmetric.lmnn.target_neighbors`).  The verified objective is
JMLR 2009's Eq. 13 recomputed over every impostor triplet
(:meth:`~cvxmetric.lmnn.LMNNData.objective`).  The family's one method is
its exact path, checked against the stored references.
"""

import numpy as np

from ..collection import ArraySpec, FamilySpec, exact_solves, register_family

__all__ = ["LMNN_ARRAYS", "LMNN_HYPERPARAMETERS", "bundled_instances"]

LMNN_ARRAYS = (
    ArraySpec("X", "float", ("n", "d"), doc="samples, one per row"),
    ArraySpec("y", "int", ("n",), doc="class labels (at least two classes)"),
)

LMNN_HYPERPARAMETERS = {"k": 3, "mu": 0.5}


def _to_data(arrays, hp):
    from ._problem import LMNNData

    return LMNNData(arrays["X"], arrays["y"], k=hp["k"], mu=hp["mu"])


def _objective(data, M):
    return data.objective(M)


_exact, _reference_solve = exact_solves("lmnn")


def _sizes(arrays):
    n, d = arrays["X"].shape
    return {"n": int(n), "d": int(d), "n_classes": int(np.unique(arrays["y"]).size)}


def _subsample(y, per_class, seed):
    """``per_class`` samples of each class, drawn with ``seed``, sorted."""
    rng = np.random.RandomState(seed)
    return np.sort(np.concatenate([rng.choice(np.flatnonzero(y == c), per_class,
                                              replace=False) for c in np.unique(y)]))


def bundled_instances():
    """The bundled LMNN instances (a few thousand impostor triplets each)."""
    from sklearn.datasets import load_iris, load_wine

    def instance(name, X, y, source, seed, text, k=3, mu=0.5):
        return dict(name=name, source=source, random_state=seed,
                    description=f"LMNN (k = {k}, mu = {mu}): {text}.",
                    arrays={"X": X, "y": y.astype(np.int64)},
                    hyperparameters={"k": k, "mu": mu})

    X, y = load_iris(return_X_y=True)
    sub = _subsample(y, 20, 0)
    out = [instance("iris60", X[sub], y[sub], "iris", 0,
                    "60 iris samples (20 per class), raw features")]
    X, y = load_wine(return_X_y=True)
    sub = _subsample(y, 15, 1)
    Xs = (X[sub] - X[sub].mean(axis=0)) / X[sub].std(axis=0)
    out.append(instance("wine45", Xs, y[sub], "wine", 1,
                        "45 wine samples (15 per class), standardised", k=2, mu=0.3))
    out.append(instance("wine45_raw", X[sub], y[sub], "wine", 1,
                        "the same 45 wine samples, raw features (0.1 to 1000: the "
                        "exact path solves in per-feature units)"))
    rng = np.random.RandomState(2)
    y = np.repeat(np.arange(4), [15, 15, 12, 3])
    X = 1.5 * rng.normal(size=(4, 5))[y] + rng.normal(size=(y.size, 5)) \
        * np.linspace(0.5, 2.0, 5)
    out.append(instance("synthetic", X, y, "synthetic", 2,
                        "4 Gaussian classes in 5 dims (45 points; a class of 3 "
                        "points has 2 target neighbours each at k = 3)", mu=0.7))
    return out


register_family(
    FamilySpec(
        name="lmnn",
        arrays=LMNN_ARRAYS,
        hyperparameters=LMNN_HYPERPARAMETERS,
        to_data=_to_data,
        objective=_objective,
        exact=_exact,
        reference_solve=_reference_solve,
        sizes=_sizes,
        generate=bundled_instances,
    ),
)

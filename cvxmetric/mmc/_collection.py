"""The MMC family of the problem collection (registered on import).

An instance is a sample matrix ``X``, labelled pairs (+1 similar, -1
dissimilar) and the hyperparameter ``diagonal``.  The verified objective is
the scale-free value ``r(M) = sum_S D2 / (sum_D sqrt D2)^2``
(:meth:`~cvxmetric.mmc.MMCData.scale_free`): it equals the paper's
objective at any feasible ``M`` with ``sum_D sqrt D2 = 1`` and compares
matrices of any scale.  The registry's methods run here
(:attr:`cvxmetric.formulations.Method.collection`) are
:func:`solve_projected_gradient` (projected gradient ascent with the exact
projection, full and diagonal) and :func:`solve_newton` (Xing's diagonal
Newton method; :attr:`FamilySpec.applies` skips it on full instances).

Note on the verified gap: ``cvxmetric verify`` divides by
``max(1, |r*|)``, and ``r*`` is about ``1e-3`` here, so its check is an
absolute one; ``tests/mmc/test_collection.py`` checks the *relative* gap
``|r - r*| / r*`` of both methods on every instance against the same
tolerance.
"""

import numpy as np

from ..collection import ArraySpec, FamilySpec, exact_solves, register_family

__all__ = ["MMC_ARRAYS", "MMC_HYPERPARAMETERS", "bundled_instances"]

MMC_ARRAYS = (
    ArraySpec("X", "float", ("n", "d"), doc="samples, one per row"),
    ArraySpec("pairs", "int", ("P", 2), doc="pairs (i, j) of rows of X"),
    ArraySpec("pair_labels", "int", ("P",),
              doc="+1 similar (set S), -1 dissimilar (set D)"),
)

MMC_HYPERPARAMETERS = {"diagonal": False}


def _to_data(arrays, hp):
    from ._problem import MMCData

    diagonal = hp["diagonal"]
    if not isinstance(diagonal, bool):
        raise ValueError(f"diagonal: expected true or false, got {diagonal!r}.")
    return MMCData.create(arrays["X"], arrays["pairs"], arrays["pair_labels"],
                          diagonal=bool(diagonal))


def _objective(data, M):
    return data.scale_free(M)


_exact, _reference_solve = exact_solves("mmc")


def _sizes(arrays):
    n, d = arrays["X"].shape
    lab = arrays["pair_labels"]
    return {"n": int(n), "d": int(d), "n_similar": int(np.sum(lab == 1)),
            "n_dissimilar": int(np.sum(lab == -1))}


def solve_projected_gradient(data):
    """:class:`~cvxmetric.mmc.MMCProjectedGradient` at its defaults."""
    from .fast import MMCProjectedGradient

    return MMCProjectedGradient().run(data)


def solve_newton(data):
    """:class:`~cvxmetric.mmc.MMCNewton` at its defaults."""
    from .fast import MMCNewton

    return MMCNewton().run(data)


def _applies(method, hyperparameters):
    return method != "newton" or bool(hyperparameters.get("diagonal"))


def _labelled_pairs(X, y, n_pairs, seed):
    """``pairs_from_labels`` without pairs of identical points (iris has some)."""
    from ..constraints import pairs_from_labels

    p, lab = pairs_from_labels(y, n_pairs, random_state=seed)
    i, j = p.T
    keep = (i != j) & ~np.all(X[i] == X[j], axis=1)
    return p[keep], lab[keep]


def bundled_instances():
    """The bundled MMC instances (a few hundred pairs each, full and diagonal)."""
    from sklearn.datasets import load_digits, load_iris, load_wine
    from sklearn.decomposition import PCA

    out = []

    def add(name, X, y, n_pairs, seed, source, text):
        p, lab = _labelled_pairs(X, y, n_pairs, seed)
        for diagonal in (False, True):
            kind = "diagonal" if diagonal else "full"
            out.append(dict(
                name=f"{name}_{kind}", source=source, random_state=seed,
                description=f"MMC ({kind} M): {text}; {int(np.sum(lab == 1))} "
                            f"similar and {int(np.sum(lab == -1))} dissimilar "
                            f"pairs from the class labels.",
                arrays={"X": X, "pairs": p, "pair_labels": lab},
                hyperparameters={"diagonal": diagonal},
            ))

    rng = np.random.RandomState(0)
    n, d = 90, 6
    y = np.arange(n) % 3
    means = rng.normal(scale=1.5, size=(3, d))
    X = means[y] + rng.normal(size=(n, d)) * np.linspace(0.5, 2.0, d)
    add("synthetic", X, y, 200, 0, "synthetic",
        "3 Gaussian classes in 6 dims (90 points, per-feature noise 0.5 to 2)")

    X, y = load_iris(return_X_y=True)
    add("iris", X, y, 200, 1, "iris",
        "iris, raw features (150 x 4)")

    X, y = load_wine(return_X_y=True)
    add("wine", X, y, 200, 2, "wine",
        "wine, raw features (178 x 13, scales from 0.1 to 1000: "
        "metric-learn's MMC with its default settings stops far above the "
        "optimum here, see docs/mmc/measurements.md)")

    X, y = load_digits(return_X_y=True)
    sub = np.sort(np.random.RandomState(3).choice(len(y), 300, replace=False))
    X = PCA(n_components=10, random_state=0).fit_transform(X[sub])
    add("digits_pca", X, y[sub], 240, 3, "digits",
        "300 digits, PCA to 10 dims")

    rng = np.random.RandomState(4)
    y = np.arange(60) % 3
    Z = rng.normal(scale=1.5, size=(3, 3))[y] + rng.normal(size=(60, 3))
    X = Z @ rng.normal(size=(3, 7))  # rank 3 in 7 dims: A_S is singular
    add("rank3", X, y, 120, 4, "synthetic",
        "60 points of rank 3 in 7 dims (3 Gaussian classes): A_S is "
        "singular, but its null space is orthogonal to every difference "
        "vector, so the problem is well posed and M is not unique off the "
        "data's span")
    return out


register_family(
    FamilySpec(
        name="mmc",
        arrays=MMC_ARRAYS,
        hyperparameters=MMC_HYPERPARAMETERS,
        to_data=_to_data,
        objective=_objective,
        exact=_exact,
        reference_solve=_reference_solve,
        sizes=_sizes,
        generate=bundled_instances,
        applies=_applies,
    ),
)

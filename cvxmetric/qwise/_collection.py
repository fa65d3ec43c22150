"""The Qwise family of the problem collection (registered on import).

An instance is a sample matrix ``X``, quadruplets ``(i, j, k, l)`` with
their margins ``delta`` (Eq. 8), optionally labelled pairs (Eq. 11) and the
matrix ``A_S`` of the "similar" regulariser, with the hyperparameters
``regularizer``, ``C_q``, ``C_p``, ``u``, ``l``.  The collection solves of
the registry's methods (:attr:`cvxmetric.formulations.Method.collection`)
that run a solver class at its defaults are here: :func:`solve_dual` (the
restarted PDHG, :class:`~cvxmetric.qwise.QwiseDualSolver`),
:func:`solve_subgradient` (Algorithm 1,
:class:`~cvxmetric.qwise.ProjectedSubgradient`).  The arrays and instance
generators here are shared with the families of the vector and structural
models (:mod:`cvxmetric.qwise_vector._collection`,
:mod:`cvxmetric.qwise_structural._collection`).
"""

import numpy as np

from ..collection import (
    ArraySpec,
    FamilySpec,
    exact_solves,
    gaussian_classes,
    register_family,
    standardize,
)

__all__ = []  # registers the family on import; nothing public


_QWISE_ARRAYS = (
    ArraySpec("X", "float", ("n", "d"), doc="samples, one per row"),
    ArraySpec("quadruplets", "int", ("N", 4),
              doc="(i, j, k, l): want D(k, l) >= D(i, j) + delta"),
    ArraySpec("delta", "float", ("N",), doc="margins"),
    ArraySpec("pairs", "int", ("P", 2), required=False,
              doc="labelled pairs (Eq. 11)"),
    ArraySpec("pair_labels", "int", ("P",), required=False,
              doc="+1 similar, -1 dissimilar"),
    ArraySpec("A_S", "float", ("d", "d"), required=False,
              doc="PSD matrix of the 'similar' regulariser (default: computed)"),
)

_QWISE_HP = {"regularizer": "trace", "C_q": 1.0, "C_p": 1.0, "u": None, "l": None}


def _sets(arrays):
    """``(Quadruplets, LabeledPairs or None)`` of an instance's arrays."""
    from ..constraints import LabeledPairs, Quadruplets

    X = arrays["X"]
    if ("pairs" in arrays) != ("pair_labels" in arrays):
        raise ValueError("arrays 'pairs' and 'pair_labels' must be given together.")
    quads = Quadruplets.create(X, arrays["quadruplets"], arrays["delta"],
                               name="quadruplets")
    pairs = None
    if "pairs" in arrays:
        pairs = LabeledPairs.create(X, arrays["pairs"], arrays["pair_labels"],
                                    name="pairs")
    return quads, pairs


def _qwise_to_data(arrays, hp):
    from . import QwiseData

    quads, pairs = _sets(arrays)
    if "A_S" in arrays and hp.get("regularizer") != "similar":
        raise ValueError("array 'A_S' is only used with regularizer='similar'.")
    return QwiseData.from_sets(
        quads, pairs, regularizer=hp["regularizer"], C_q=hp["C_q"], C_p=hp["C_p"],
        u=hp["u"] if pairs is not None else None,
        l=hp["l"] if pairs is not None else None, A_S=arrays.get("A_S"),
    )


def _qwise_objective(data, M):
    return data.objective(M)


# the reference solves the declared model itself (no margin-set reduction)
_qwise_exact, _qwise_reference_solve = exact_solves(
    "qwise", reference_options={"reduce": False})


def _qwise_sizes(arrays):
    n, d = arrays["X"].shape
    return {"n": int(n), "d": int(d), "n_quadruplets": int(len(arrays["delta"])),
            "n_pairs": int(len(arrays["pairs"])) if "pairs" in arrays else 0}


def solve_dual(data):
    """:class:`~cvxmetric.qwise.QwiseDualSolver` at its defaults."""
    from . import QwiseDualSolver

    return QwiseDualSolver().run(data)


def solve_subgradient(data):
    """:class:`~cvxmetric.qwise.ProjectedSubgradient` at its defaults."""
    from . import ProjectedSubgradient

    return ProjectedSubgradient().run(data)


def _gaussian_quadruplets(seed, n, d, n_classes, n_quadruplets):
    """``(X, y, quadruplets)`` of a bundled instance: ``n`` points of
    ``n_classes`` Gaussian classes (separation 1.5) in ``d`` dims,
    standardised, and class quadruplets, all drawn from ``seed``."""
    from ..constraints import quadruplets_from_labels

    X, y = gaussian_classes(np.random.RandomState(seed), n, d, n_classes, 1.5)
    return standardize(X), y, quadruplets_from_labels(y, n_quadruplets,
                                                      random_state=seed)


def _qwise_bundled():
    """The bundled Qwise instances (each a few hundred constraints)."""
    from sklearn.datasets import load_digits, load_iris, load_wine
    from sklearn.decomposition import PCA

    from ..constraints import (
        Triplets,
        pairs_from_labels,
        quadruplets_from_labels,
        triplets_from_labels,
    )

    out = []

    X, y, q = _gaussian_quadruplets(0, 60, 5, 3, 200)
    out.append(dict(
        name="synthetic_trace", source="synthetic", random_state=0,
        description="Eq. 8, trace regulariser: 3 Gaussian classes in 5 dims "
                    "(60 points, standardised), 200 class quadruplets, delta=1.",
        arrays={"X": X, "quadruplets": q, "delta": np.ones(len(q))},
        hyperparameters={"regularizer": "trace", "C_q": 1.0},
    ))

    X, y, q = _gaussian_quadruplets(1, 60, 5, 4, 120)
    p, lab = pairs_from_labels(y, 80, random_state=1)
    out.append(dict(
        name="synthetic_pairs_frobenius", source="synthetic", random_state=1,
        description="Eq. 11, Frobenius regulariser: 4 Gaussian classes in 5 dims "
                    "(60 points), 120 quadruplets plus 40 similar and 40 "
                    "dissimilar pairs, u=2 <= l=6, C_p=0.5.",
        arrays={"X": X, "quadruplets": q, "delta": np.ones(len(q)), "pairs": p,
                "pair_labels": lab},
        hyperparameters={"regularizer": "frobenius", "C_q": 1.0, "C_p": 0.5,
                         "u": 2.0, "l": 6.0},
    ))

    X, y = load_iris(return_X_y=True)
    X = standardize(X)
    q = quadruplets_from_labels(y, 300, random_state=2)
    out.append(dict(
        name="iris_trace", source="iris", random_state=2,
        description="Eq. 8, trace regulariser: iris (150 x 4, standardised), "
                    "300 class quadruplets, delta=1.",
        arrays={"X": X, "quadruplets": q, "delta": np.ones(len(q))},
        hyperparameters={"regularizer": "trace", "C_q": 1.0},
    ))

    X, y = load_wine(return_X_y=True)
    X = PCA(n_components=8, random_state=0).fit_transform(standardize(X))
    q = quadruplets_from_labels(y, 300, random_state=3)
    out.append(dict(
        name="wine_similar", source="wine", random_state=3,
        description="Eq. 8, 'similar' regulariser tr(M A_S) with A_S the sum of "
                    "C_ij over the closer pairs: wine (178 x 13, standardised, "
                    "PCA to 8 dims), 300 class quadruplets, delta=1.",
        arrays={"X": X, "quadruplets": q, "delta": np.ones(len(q))},
        hyperparameters={"regularizer": "similar", "C_q": 1.0},
    ))

    X, y = load_digits(return_X_y=True)
    sub = np.sort(np.random.RandomState(4).choice(len(y), 300, replace=False))
    X = PCA(n_components=10, random_state=0).fit_transform(X[sub])
    X = X / X.std()  # one global scale keeps the PCA spectrum's shape
    y = y[sub]
    t = triplets_from_labels(y, 300, random_state=4)
    quads = Triplets.create(X, t).to_quadruplets(1.0)  # exact: (i, j, i, k)
    out.append(dict(
        name="digits_triplets", source="digits", random_state=4,
        description="Eq. 8 from triplets, trace regulariser, C_q=0.5: 300 digits "
                    "(PCA to 10 dims, one global scale), 300 class triplets "
                    "(i, j, k) reduced exactly to quadruplets (i, j, i, k), "
                    "delta=1.",
        arrays={"X": X, "quadruplets": quads.indices, "delta": quads.delta},
        hyperparameters={"regularizer": "trace", "C_q": 0.5},
    ))

    rng = np.random.RandomState(5)
    Z, y = gaussian_classes(rng, 40, 3, 3, 1.5)
    X = Z @ rng.normal(size=(3, 6)) / 2  # rank 3 in 6 dims
    q = quadruplets_from_labels(y, 150, random_state=5)
    delta = np.where(np.arange(len(q)) % 3 == 0, 0.0, 1.0)
    out.append(dict(
        name="degenerate_rank3", source="synthetic", random_state=5,
        description="Eq. 8, 'similar' regulariser with a singular A_S: 40 points "
                    "of rank 3 in 6 dims (3 Gaussian classes), 150 quadruplets, "
                    "a third of them with margin delta=0; the optimal M is not "
                    "unique off the data's span.",
        arrays={"X": X, "quadruplets": q, "delta": delta},
        hyperparameters={"regularizer": "similar", "C_q": 1.0},
    ))
    return out


register_family(
    FamilySpec(
        name="qwise",
        arrays=_QWISE_ARRAYS,
        hyperparameters=_QWISE_HP,
        to_data=_qwise_to_data,
        objective=_qwise_objective,
        exact=_qwise_exact,
        reference_solve=_qwise_reference_solve,
        sizes=_qwise_sizes,
        generate=_qwise_bundled,
    ),
)

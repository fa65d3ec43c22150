"""The LDML family of the problem collection (registered on import).

An instance is a sample matrix ``X``, labelled pairs ``pairs`` with their
labels ``y`` (+1 same class, -1 different), and the hyperparameters ``lam``
and ``regularizer`` (``"trace"`` or ``"frobenius"``): Eq. 2 of Guillaumin,
Verbeek, Schmid (2010), the negative log-likelihood minimised over ``M``
PSD and the threshold ``b``, plus ``lam R(M)`` (:class:`~cvxmetric.ldml.LDMLData`).

The solution is ``(M, b)``.  The reference format holds one square matrix,
so it is stored as ``blockdiag(M, b)``, of shape ``(D + 1, D + 1)``: ``b``
is kept and compared.  ``verify`` reads the objective ``F(M, b)`` back from
it at the stored ``b`` (not re-optimised); a block whose ``M`` is not PSD
(beyond :data:`~cvxmetric.collection.PSD_TOL`) or whose last row and
column are not ``(0, ..., 0, b)`` has objective ``inf``.  ``b`` may be
negative (mostly dissimilar pairs and a strong regulariser), so the stored
matrix is not itself a metric (``FamilySpec.psd = False``).

The registry's methods run on it (:attr:`cvxmetric.formulations.Method.collection`,
their results stored as ``blockdiag(M, b)``):
:func:`~cvxmetric.ldml.solve_fast` at its default settings, and
:func:`solve_lowrank` (:func:`~cvxmetric.ldml.fit_lowrank` at full rank
``d = D`` on the explicit pairs, one start from ``random_state=0``,
:data:`LOWRANK_MAXITER` iterations): at full rank the low-rank gradient
method must reach the convex optimum.
"""

import math

import numpy as np

from ..collection import (PSD_TOL, ArraySpec, FamilySpec, exact_solves,
                          gaussian_classes, register_family, standardize)
from .._settings import LOWRANK_MAXITER

__all__ = []  # registers the family on import; nothing public

_ARRAYS = (
    ArraySpec("X", "float", ("n", "D"), doc="samples, one per row"),
    ArraySpec("pairs", "int", ("P", 2), doc="pairs (i, j) of rows of X"),
    ArraySpec("y", "int", ("P",), doc="+1 same class, -1 different class"),
)

_HP = {"lam": 0.0, "regularizer": "trace"}


def _to_data(arrays, hp):
    from .exact import LDMLData

    return LDMLData(arrays["X"], arrays["pairs"], arrays["y"], lam=hp["lam"],
                    regularizer=hp["regularizer"])


def _stored(result):
    """The result with ``M = blockdiag(M, b)`` (the collection's storage)."""
    import dataclasses

    M = np.asarray(result.M, dtype=float)
    D = M.shape[0]
    out = np.zeros((D + 1, D + 1))
    out[:D, :D] = 0.5 * (M + M.T)
    out[D, D] = float(result.info["b"])
    return dataclasses.replace(result, M=out)


def _objective(data, stored):
    """``F(M, b)`` at ``stored = blockdiag(M, b)``; ``inf`` when ``M`` is not
    PSD or the block is not of that form."""
    S = np.asarray(stored, dtype=float)
    D = data.d
    if S.shape != (D + 1, D + 1) or not np.all(np.isfinite(S)):
        return math.inf
    M, b = 0.5 * (S[:D, :D] + S[:D, :D].T), float(S[D, D])
    coupling = max(float(np.max(np.abs(S[:D, D]))), float(np.max(np.abs(S[D, :D]))))
    f = data.objective(M, b)
    scale = max(1.0, abs(f))
    if coupling > 0.0 or float(np.linalg.eigvalsh(M)[0]) < -PSD_TOL * scale:
        return math.inf
    return f


_exact, _reference_solve = exact_solves("ldml", after=_stored)


def solve_lowrank(data):
    """The low-rank gradient method at full rank (module docstring)."""
    from .fast import PairSet, fit_lowrank

    # on the device of a device instance (its pairs shared there)
    loss = PairSet(data.X, data.pairs, data.s, lam=data.lam,
                   regularizer=data.regularizer) if data.transfers is None \
        else PairSet.from_data(data)
    return fit_lowrank(loss, data.d, n_init=1, random_state=0,
                       maxiter=LOWRANK_MAXITER)


def _sizes(arrays):
    n, D = arrays["X"].shape
    y = np.asarray(arrays["y"])
    return {"n": int(n), "d": int(D), "n_pairs": int(len(y)),
            "n_similar": int(np.sum(y == 1))}


def _distinct(X, y):
    """``X`` and ``y`` without repeated samples (a pair of two copies is
    refused by :class:`~cvxmetric.ldml.LDMLData`; iris has one)."""
    _, keep = np.unique(X, axis=0, return_index=True)
    keep = np.sort(keep)
    return X[keep], y[keep]


def _bundled():
    """The bundled instances (D from 2 to 30, 300 to 3 000 pairs)."""
    from sklearn.datasets import load_breast_cancer, load_iris, load_wine

    from ..constraints import pairs_from_labels

    out = []

    def add(name, source, seed, description, X, y, n_pairs, lam, regularizer):
        p, lab = pairs_from_labels(y, n_pairs, random_state=seed)
        out.append(dict(
            name=name, source=source, random_state=seed, description=description,
            arrays={"X": X, "pairs": p, "y": lab},
            hyperparameters={"lam": float(lam), "regularizer": regularizer}))

    rng = np.random.RandomState(40)
    X, y = gaussian_classes(rng, 60, 5, 3, 1.0)
    add("synthetic_trace", "synthetic", 40,
        "Eq. 2 + trace regulariser, lam=0.1: 3 Gaussian classes in 5 dims "
        "(60 points, standardised), 300 class pairs (half similar).",
        standardize(X), y, 300, 0.1, "trace")

    rng = np.random.RandomState(41)
    X, y = gaussian_classes(rng, 80, 3, 2, 0.7)
    add("synthetic_noreg", "synthetic", 41,
        "Eq. 2 as printed (lam=0): 2 overlapping Gaussian classes in 3 dims "
        "(80 points, standardised), 400 class pairs; not separable, so the "
        "likelihood has a maximiser.",
        standardize(X), y, 400, 0.0, "trace")

    rng = np.random.RandomState(42)
    X, y = gaussian_classes(rng, 200, 2, 4, 1.0)
    add("synthetic_many_pairs", "synthetic", 42,
        "Eq. 2 as printed (lam=0): 4 Gaussian classes in 2 dims (200 points, "
        "standardised), 3 000 class pairs; not separable.",
        standardize(X), y, 3000, 0.0, "trace")

    X, y = load_iris(return_X_y=True)
    X, y = _distinct(standardize(X), y)
    add("iris_noreg", "iris", 46,
        "Eq. 2 as printed (lam=0): iris (149 distinct samples x 4, "
        "standardised), 300 class pairs; versicolor and virginica overlap: "
        "not separable.", X, y, 300, 0.0, "trace")
    add("iris_frobenius", "iris", 46,
        "Eq. 2 + Frobenius regulariser 0.5 ||M||_F^2, lam=0.5: the pairs of "
        "iris_noreg.", X, y, 300, 0.5, "frobenius")

    X, y = load_wine(return_X_y=True)
    add("wine_frobenius", "wine", 44,
        "Eq. 2 + Frobenius regulariser, lam=0.1: wine (178 x 13, "
        "standardised), 500 class pairs.", standardize(X), y, 500, 0.1,
        "frobenius")

    X, y = load_breast_cancer(return_X_y=True)
    X, y = _distinct(standardize(X), y)
    add("breast_cancer_frobenius", "breast_cancer", 45,
        "Eq. 2 + Frobenius regulariser, lam=1: breast_cancer (569 x 30, "
        "standardised), 300 class pairs; a metric separates them (without "
        "a regulariser the likelihood has no maximiser: NotAttainedError).",
        X, y, 300, 1.0, "frobenius")
    return out


register_family(
    FamilySpec(name="ldml", arrays=_ARRAYS, hyperparameters=_HP, to_data=_to_data,
               objective=_objective, exact=_exact, reference_solve=_reference_solve,
               sizes=_sizes, generate=_bundled, psd=False,
               matrix_dim=lambda arrays: arrays["X"].shape[1] + 1, stored=_stored),
)

"""The ``slr`` family of the problem collection (Eq. 4, Qian et al. 2015).

An instance is a sample matrix ``X`` (n, d) and integer class labels ``y``
(n,), plus the thresholds ``delta1 > delta2``; the model is Eq. 4 over all
ordered pairs.  The learned ``M`` is a general bilinear matrix, so the
family is registered with ``psd=False``.  Every bundled instance has
``n > d`` and a positive optimum (the classes are not separable by a
bilinear form), so the exact answer is not the trivial zero.

References are solved in the ``"symmetric"`` form of
:func:`~cvxmetric.slr.solve_exact` by each solver (Clarabel, SCS) and
certified on Eq. 4 itself.

The collection solves of the registry's methods
(:attr:`cvxmetric.formulations.Method.collection`):

:func:`solve_newton`
    :class:`~cvxmetric.slr.SemismoothNewton`, certified relative gap
    ``1e-10``.
:func:`solve_adaptive`
    Algorithm 1 (:class:`~cvxmetric.slr.AdaptiveRegression`) run to
    convergence: up to ``ADAPTIVE_MAXITER`` iterations, stopping when the
    certified relative gap is below ``1e-8`` (checked every 50 iterations).
    The paper's ``T = 10`` is far from converged on most instances (see
    ``docs/slr/estimators.md``).
"""

import numpy as np

from ..collection import (ArraySpec, FamilySpec, exact_solves, gaussian_classes,
                          register_family, standardize)
from .._settings import ADAPTIVE_MAXITER

__all__ = ["ADAPTIVE_MAXITER", "bundled_instances"]

_ARRAYS = (
    ArraySpec("X", "float", ("n", "d"), doc="samples, one per row"),
    ArraySpec("y", "int", ("n",), doc="class labels (at least two classes)"),
)

_HP = {"delta1": 1.0, "delta2": 0.0}


def _to_data(arrays, hp):
    from ._problem import SLRData

    return SLRData.from_labels(arrays["X"], arrays["y"], delta1=hp["delta1"],
                               delta2=hp["delta2"])


def _objective(data, M):
    return data.objective(M)


_exact, _reference_solve = exact_solves("slr", reference_options={"form": "symmetric"})


def _sizes(arrays):
    n, d = arrays["X"].shape
    return {"n": int(n), "d": int(d),
            "rank": int(np.linalg.matrix_rank(arrays["X"])),
            "n_classes": int(np.unique(arrays["y"]).size),
            "n_pairs": int(n) * int(n)}


def solve_newton(data):
    """:class:`~cvxmetric.slr.SemismoothNewton` at its defaults."""
    from .fast import SemismoothNewton

    return SemismoothNewton().run(data)


def solve_adaptive(data):
    """Algorithm 1 run to convergence (module docstring)."""
    from .fast import AdaptiveRegression

    return AdaptiveRegression(maxiter=ADAPTIVE_MAXITER, tol=1e-8,
                              check_every=50).run(data)


def bundled_instances():
    """The bundled SLR instances (n <= 178, d <= 20, all with n > d)."""
    from sklearn.datasets import load_digits, load_iris, load_wine
    from sklearn.decomposition import PCA

    out = []
    rng = np.random.RandomState(0)
    X = rng.normal(size=(40, 6))
    y = rng.randint(0, 3, size=40)
    out.append(dict(
        name="random_small", source="synthetic", random_state=0,
        description="Eq. 4, delta1=1, delta2=0: 40 standard normal points in "
                    "6 dims with random labels in 3 classes (no structure).",
        arrays={"X": X, "y": y}, hyperparameters=dict(_HP)))

    X, y = load_digits(return_X_y=True)
    sub = np.sort(np.random.RandomState(1).choice(len(y), 150, replace=False))
    X = PCA(n_components=12, random_state=0).fit_transform(X[sub])
    out.append(dict(
        name="digits_pca12", source="digits", random_state=1,
        description="Eq. 4: 150 digits (10 classes), PCA to 12 dims, PCA "
                    "scores unscaled (Algorithm 1 starts far: M_0 = I).",
        arrays={"X": X, "y": y[sub]}, hyperparameters=dict(_HP)))

    X, y = load_iris(return_X_y=True)
    out.append(dict(
        name="iris", source="iris",
        description="Eq. 4: iris (150 x 4, standardised, 3 classes).",
        arrays={"X": standardize(X), "y": y}, hyperparameters=dict(_HP)))

    X, y = load_wine(return_X_y=True)
    out.append(dict(
        name="wine", source="wine",
        description="Eq. 4: wine (178 x 13, standardised, 3 classes); "
                    "Algorithm 1 needs about 2000 iterations here.",
        arrays={"X": standardize(X), "y": y}, hyperparameters=dict(_HP)))

    rng = np.random.RandomState(4)
    X, y = gaussian_classes(rng, 90, 20, 6, 0.5)
    out.append(dict(
        name="synthetic_highdim", source="synthetic", random_state=4,
        description="Eq. 4: 6 overlapping Gaussian classes in 20 dims (90 "
                    "points, class means N(0, 0.25 I), scaled by 1/sqrt(20)).",
        arrays={"X": X / np.sqrt(20), "y": y}, hyperparameters=dict(_HP)))

    rng = np.random.RandomState(5)
    Z, y = gaussian_classes(rng, 60, 4, 4, 1.0)
    X = Z @ rng.normal(size=(4, 10)) / 2
    out.append(dict(
        name="rank_deficient", source="synthetic", random_state=5,
        description="Eq. 4: 60 points of rank 4 in 10 dims (4 Gaussian "
                    "classes); M is not unique off range(X^T), the optimum "
                    "is.",
        arrays={"X": X, "y": y}, hyperparameters=dict(_HP)))

    out.append(dict(
        name="thresholds_2_half", source="iris",
        description="Eq. 4 with delta1=2, delta2=0.5: iris (150 x 4, "
                    "standardised).",
        arrays={"X": standardize(load_iris(return_X_y=True)[0]),
                "y": load_iris(return_X_y=True)[1]},
        hyperparameters={"delta1": 2.0, "delta2": 0.5}))
    return out


register_family(
    FamilySpec(
        name="slr",
        arrays=_ARRAYS,
        hyperparameters=_HP,
        to_data=_to_data,
        objective=_objective,
        exact=_exact,
        reference_solve=_reference_solve,
        sizes=_sizes,
        generate=bundled_instances,
        psd=False,
    ),
)

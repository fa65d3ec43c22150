"""The Qwise structural model's family of the problem collection (registered
on import): ``qwise_structural``, Eq. 16-17 (Sec. 4.4).

An instance is a sample matrix ``X`` and quadruplets (or triplets written
as rows ``(a, b, a, c)``), with the hyperparameters ``reading``,
``regularizer``, ``C``.  The collection solve of the cutting-plane method
(the registry's :attr:`cvxmetric.formulations.Method.collection`) is
:func:`solve_cutting_plane`; the fast method's is
:func:`cvxmetric.qwise_structural.solve_structural_fast` itself.
"""

import numpy as np

from ..collection import (
    ArraySpec,
    FamilySpec,
    exact_solves,
    register_family,
    standardize,
)
from ..qwise._collection import _gaussian_quadruplets

__all__ = []  # registers the family on import; nothing public

_STRUCTURAL_ARRAYS = (
    ArraySpec("X", "float", ("n", "d"), doc="samples, one per row"),
    ArraySpec("quadruplets", "int", ("N", 4),
              doc="(i, j, k, l): the query pair (i, j) ranks before (k, l); "
                  "with reading='triplets', rows (a, b, a, c): anchor a ranks "
                  "b before c"),
)

_STRUCTURAL_HP = {"reading": "quadruplets", "regularizer": "trace", "C": 1.0}


def _structural_to_data(arrays, hp):
    from ..constraints import Quadruplets, Triplets
    from ._problem import StructuralData

    X, q = arrays["X"], arrays["quadruplets"]
    kw = {"regularizer": hp["regularizer"], "C": hp["C"]}
    if hp["reading"] == "quadruplets":
        return StructuralData.from_quadruplets(
            Quadruplets.create(X, q, 1.0, name="quadruplets"), **kw)
    if hp["reading"] == "triplets":
        if np.shape(q)[1:] == (4,) and np.any(q[:, 2] != q[:, 0]):
            raise ValueError("quadruplets: with reading='triplets' every row is "
                             "(a, b, a, c) (columns 0 and 2 equal).")
        return StructuralData.from_triplets(
            Triplets.create(X, q[:, [0, 1, 3]], name="quadruplets"), **kw)
    raise ValueError(f"reading: unknown option {hp['reading']!r}; expected "
                     f"'quadruplets' or 'triplets'.")


_structural_exact, _structural_reference_solve = exact_solves("qwise_structural")


def _structural_sizes(arrays):
    n, d = arrays["X"].shape
    return {"n": int(n), "d": int(d), "n_quadruplets": int(len(arrays["quadruplets"]))}


def solve_cutting_plane(data):
    """:class:`~cvxmetric.qwise_structural.StructuralCuttingPlane` at its defaults."""
    from .fast import StructuralCuttingPlane

    return StructuralCuttingPlane().run(data)


def _structural_bundled():
    """The bundled structural instances (a few hundred tuples each)."""
    from sklearn.datasets import load_iris

    from ..constraints import triplets_from_labels

    out = []
    X, y, q = _gaussian_quadruplets(20, 50, 4, 3, 200)
    out.append(dict(
        name="structural_quadruplets_trace", source="synthetic", random_state=20,
        description="Eq. 16-17, quadruplet queries (each first pair (i, j) ranks "
                    "before the pairs (k, l) of its quadruplets), AUC loss, "
                    "trace regulariser, C=1: 3 Gaussian classes in 4 dims "
                    "(50 points), 200 class quadruplets.",
        arrays={"X": X, "quadruplets": q},
        hyperparameters=dict(_STRUCTURAL_HP)))
    X, y = load_iris(return_X_y=True)
    X = standardize(X)
    t = triplets_from_labels(y, 200, random_state=21)
    out.append(dict(
        name="structural_iris_triplets_frobenius", source="iris", random_state=21,
        description="Eq. 16-17, tripletwise reading (each anchor is a query, "
                    "as in MLR), AUC loss, Frobenius regulariser, C=5: iris "
                    "(150 x 4, standardised), 200 class triplets stored as "
                    "(a, b, a, c).",
        arrays={"X": X, "quadruplets": t[:, [0, 1, 0, 2]]},
        hyperparameters=dict(_STRUCTURAL_HP, reading="triplets",
                             regularizer="frobenius", C=5.0)))
    return out


register_family(
    FamilySpec(
        name="qwise_structural",
        arrays=_STRUCTURAL_ARRAYS,
        hyperparameters=_STRUCTURAL_HP,
        to_data=_structural_to_data,
        objective=lambda data, M: data.objective(M),
        exact=_structural_exact,
        reference_solve=_structural_reference_solve,
        sizes=_structural_sizes,
        generate=_structural_bundled,
    ),
)

"""The Qwise vector model's family of the problem collection (registered on
import): ``qwise_vector``, Eq. 14 and the smoothed Eq. 27-30.

An instance has Qwise's arrays (:mod:`cvxmetric.qwise._collection`) without
``A_S``, with the hyperparameters ``psi``, ``loss``, ``h``, ``C_q``,
``C_p``.  The collection solve of Algorithm 2 (the registry's
:attr:`cvxmetric.formulations.Method.collection`) is
:func:`solve_vector_newton`.
"""

import numpy as np

from ..collection import FamilySpec, exact_solves, register_family, standardize
from ..qwise._collection import _QWISE_ARRAYS, _gaussian_quadruplets, _qwise_sizes, _sets

__all__ = []  # registers the family on import; nothing public


# The reference format holds one square matrix; a vector-model solution
# ``omega = [w; b]`` is stored as its diagonal, ``diag(omega)`` of shape
# (d + 1, d + 1), so that ``b`` (the learned threshold) and the sign of ``w``
# (``psi="linear"``) are kept.  ``verify`` reads the objective back from it.

#: Qwise's arrays without ``A_S`` (the vector model has no matrix regulariser).
_VECTOR_ARRAYS = tuple(a for a in _QWISE_ARRAYS if a.name != "A_S")

_VECTOR_HP = {"psi": "squared", "loss": "hinge", "h": 0.05, "C_q": 1.0, "C_p": 1.0}


def _vector_to_data(arrays, hp):
    from ._problem import QwiseVectorData

    quads, pairs = _sets(arrays)
    return QwiseVectorData.from_sets(quads, pairs, psi=hp["psi"], loss=hp["loss"],
                                     h=hp["h"], C_q=hp["C_q"], C_p=hp["C_p"])


def _omega_matrix(result):
    """The result with ``M = diag([w; b])`` (the collection's storage)."""
    import dataclasses

    omega = np.append(result.info["w"], result.info["b"])
    return dataclasses.replace(result, M=np.diag(omega))


def _vector_objective(data, M):
    """Eq. 14 / Eq. 27 at ``omega = diag(M)``; ``inf`` outside the cone."""
    omega = np.diag(M).astype(float)
    scale = max(1.0, float(np.max(np.abs(omega))))
    if data.nonneg and float(np.min(omega)) < -1e-9 * scale:
        return np.inf
    return data.objective(data.project(omega))


_vector_exact, _vector_reference_solve = exact_solves("qwise_vector",
                                                     after=_omega_matrix)


def solve_vector_newton(data):
    """:class:`~cvxmetric.qwise_vector.ProjectedNewton` at its defaults (the
    family stores its ``diag([w; b])``)."""
    from .fast import ProjectedNewton

    return ProjectedNewton().run(data)


def _vector_applies(method, hp):
    # Algorithm 2 solves the smoothed problem only
    return method != "newton" or hp.get("loss") == "huber"


def _vector_bundled():
    """The bundled vector-model instances (a few hundred terms each)."""
    from sklearn.datasets import load_digits, load_wine

    from ..constraints import pairs_from_labels, quadruplets_from_labels

    out = []

    def add(name, source, seed, description, X, q, delta, hp, pairs=None):
        arrays = {"X": X, "quadruplets": q, "delta": np.asarray(delta, float)}
        if pairs is not None:
            arrays["pairs"], arrays["pair_labels"] = pairs
        out.append(dict(name=name, source=source, random_state=seed,
                        description=description, arrays=arrays,
                        hyperparameters=dict(_VECTOR_HP, **hp)))

    def mixed(n):  # margins 1 and 0 alternately: the temporal sets A and B
        return (np.arange(n) % 2 == 0).astype(float)

    X, y, q = _gaussian_quadruplets(10, 60, 6, 3, 200)
    add("vector_squared_hinge_pairs", "synthetic", 10,
        "Eq. 14, psi='squared' (diagonal metric, w, b >= 0), hinge: 3 Gaussian "
        "classes in 6 dims (60 points), 200 quadruplets with margins 1 and 0 "
        "alternately, 60 labelled pairs, C_q=1, C_p=0.5.",
        X, q, mixed(len(q)), {"C_p": 0.5}, pairs_from_labels(y, 60, random_state=10))
    add("vector_squared_huber", "synthetic", 10,
        "Eq. 27-30, psi='squared', smoothed losses h=0.05: the points and "
        "quadruplets of vector_squared_hinge_pairs (margins 1 and 0), no pairs.",
        X, q, mixed(len(q)), {"loss": "huber"})

    rng = np.random.RandomState(11)
    X = standardize(rng.normal(size=(50, 5)))
    score = X @ np.array([1.0, -0.5, 0.25, 0.0, 0.0])  # a hidden attribute
    i, j, k, l = rng.randint(50, size=(4, 400))
    # D_w(k, l) = w^T (x_k - x_l) should exceed D_w(i, j): order each pair
    # by the attribute difference it shows
    keep = (score[k] - score[l]) > (score[i] - score[j]) + 0.5
    keep &= (i != j) & (k != l)
    q = np.stack([i, j, k, l], axis=1)[keep][:150]
    lab = np.where(np.abs(score[q[:40, 0]] - score[q[:40, 1]]) < 0.7, 1, -1)
    add("vector_linear_hinge", "synthetic", 11,
        "Eq. 14, psi='linear' (one row of L, w and b free), hinge: 50 points in "
        "5 dims, 150 quadruplets ordered by a hidden linear attribute, margin "
        "1, 40 labelled pairs (similar: attribute difference < 0.7), C_q=1, "
        "C_p=1.",
        X, q, np.ones(len(q)), {"psi": "linear"},
        (q[:40, :2].copy(), lab))
    add("vector_linear_huber_mixed", "synthetic", 11,
        "Eq. 27-30, psi='linear', h=0.1: the quadruplets of vector_linear_hinge "
        "with margins 1 and 0 alternately, no pairs, C_q=2.",
        X, q, mixed(len(q)), {"psi": "linear", "loss": "huber", "h": 0.1, "C_q": 2.0})

    X, y = load_digits(return_X_y=True)
    sub = np.sort(np.random.RandomState(12).choice(len(y), 300, replace=False))
    X, y = X[sub] / 16.0, y[sub]  # pixels in [0, 1]: 64 raw features
    q = quadruplets_from_labels(y, 400, random_state=12)
    add("vector_digits_huber_pairs", "digits", 12,
        "Eq. 27-30, psi='squared', h=0.05: 300 digits (64 pixels scaled to "
        "[0, 1], no other preprocessing), 400 class quadruplets with margins 1 "
        "and 0 alternately, 100 labelled pairs, C_q=0.1, C_p=0.1.",
        X, q, mixed(len(q)), {"loss": "huber", "C_q": 0.1, "C_p": 0.1},
        pairs_from_labels(y, 100, random_state=12))

    X, y = load_wine(return_X_y=True)
    X = standardize(X)
    q = quadruplets_from_labels(y, 300, random_state=13)
    add("vector_wine_hinge_pairs", "wine", 13,
        "Eq. 14, psi='squared', hinge: wine (178 x 13, standardised), 300 class "
        "quadruplets, margin 1, 100 labelled pairs, C_q=0.1, C_p=0.1.",
        X, q, np.ones(len(q)), {"C_q": 0.1, "C_p": 0.1},
        pairs_from_labels(y, 100, random_state=13))
    return out


register_family(
    FamilySpec(
        name="qwise_vector",
        arrays=_VECTOR_ARRAYS,
        hyperparameters=_VECTOR_HP,
        to_data=_vector_to_data,
        objective=_vector_objective,
        exact=_vector_exact,
        reference_solve=_vector_reference_solve,
        sizes=_qwise_sizes,  # the same arrays
        generate=_vector_bundled,
        applies=_vector_applies,
        psd=False,
        matrix_dim=lambda arrays: arrays["X"].shape[1] + 1,
        stored=_omega_matrix,
    ),
)

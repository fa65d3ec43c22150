"""The ``rankdml`` family of the problem collection (registered on import).

An instance is a sample matrix ``X`` (queries and gallery items, one per
row), triplets ``(query, relevant, irrelevant)`` into it, and optionally the
prior metric ``A0`` of the Burg / LogDet regularisers; hyperparameters are
``regularizer``, ``form``, ``lam``, ``tau`` and ``diagonal`` (see
:class:`~cvxmetric.rankdml.RankData`; ``form`` defaults to ``"printed"``,
the paper's equations as printed, and the collection also holds instances
of the variants ``"spectral"`` (Burg) and ``"trace_fixed"`` (Laplacian)).  The bundled instances come from
query / gallery splits with the critical pair selection of Sec. 5
(:func:`~cvxmetric.rankdml.critical_triplets`).
"""

import numpy as np

from ..collection import (ArraySpec, FamilySpec, exact_solves, register_family,
                          standardize)
from .._settings import _TRACE_RTOL

__all__ = ["RANKDML_ARRAYS", "RANKDML_HP", "synthetic_retrieval", "bundled"]

RANKDML_ARRAYS = (
    ArraySpec("X", "float", ("n", "d"), doc="queries and gallery items, one per row"),
    ArraySpec("triplets", "int", ("N", 3),
              doc="(query, relevant, irrelevant): want d(q, i) >= d(q, r) + 1"),
    ArraySpec("A0", "float", ("d", "d"), required=False,
              doc="positive definite prior metric of 'burg' / 'logdet' "
                  "(default: identity)"),
)

RANKDML_HP = {"regularizer": "frobenius", "form": "printed", "lam": 1.0, "tau": None,
              "diagonal": False}


def _to_data(arrays, hp):
    from ..constraints import Triplets
    from ._problem import RankData

    if "A0" in arrays and hp.get("regularizer") not in ("burg", "logdet"):
        raise ValueError("array 'A0' is only used with regularizer 'burg' or 'logdet'.")
    triplets = Triplets.create(arrays["X"], arrays["triplets"], name="triplets")
    return RankData.from_triplets(
        triplets, regularizer=hp["regularizer"], lam=hp["lam"], tau=hp["tau"],
        A0=arrays.get("A0"), diagonal=hp["diagonal"], form=hp["form"],
    )


def _objective(data, M):
    """The paper's objective, ``+inf`` at a point outside the feasible set
    (off-diagonal entries of a diagonal problem, a missed trace)."""
    M = np.asarray(M, dtype=float)
    if data.diagonal:
        scale = max(1.0, float(np.max(np.abs(np.diag(M)))))
        if data.off_diagonal(M) > 1e-12 * scale:
            return np.inf
    if data.trace_fixed:
        tr = float(np.trace(M))
        if abs(tr - data.tau) > _TRACE_RTOL * max(1.0, data.tau):
            return np.inf
    return data.objective(M)


_exact, _reference_solve = exact_solves("rankdml")


def _sizes(arrays):
    n, d = arrays["X"].shape
    N = int(len(arrays["triplets"]))
    # ``cvxmetric list`` shows the constraint count from "n_quadruplets"
    return {"n": int(n), "d": int(d), "n_triplets": N, "n_quadruplets": N}


def synthetic_retrieval(n_gallery, n_queries, d, *, random_state=0, nuisance=0.5,
                        far_fraction=0.2):
    """Query / gallery data with a heterogeneous scale per query.

    Gallery items are Gaussian with feature scales between 0.5 and 2.  Each
    query is a noisy copy of one gallery item (its only relevant item); the
    noise is larger on the first ``nuisance * d`` features (the features a
    learned metric should down-weight), and its scale varies per query:
    log-normal, with ``far_fraction`` of the queries five times farther
    (the "far away queries" of Sec. 1 that defeat constraint-based
    learning).

    Returns
    -------
    X : ndarray of shape (n_gallery + n_queries, d)
        Gallery rows first, then the queries.
    queries, relevant, gallery : ndarray of int
        Row indices of the queries, of each query's relevant item, and of
        the gallery.
    """
    rng = np.random.RandomState(random_state)
    scales = np.exp(rng.uniform(np.log(0.5), np.log(2.0), d))
    G = rng.normal(size=(n_gallery, d)) * scales
    src = rng.randint(0, n_gallery, n_queries)
    k = int(round(nuisance * d))
    noise_sd = np.where(np.arange(d) < k, 1.0, 0.15) * scales
    q_scale = np.exp(rng.normal(scale=0.4, size=n_queries))
    q_scale[rng.rand(n_queries) < far_fraction] *= 5.0
    Q = G[src] + rng.normal(size=(n_queries, d)) * noise_sd * q_scale[:, None]
    X = np.vstack([G, Q])
    gallery = np.arange(n_gallery)
    queries = n_gallery + np.arange(n_queries)
    return X, queries, src, gallery


def _labelled_split(X, y, n_queries, n_relevant, rng):
    """Queries drawn from the samples; the rest is the gallery; each query's
    relevant items are ``n_relevant`` random same-class gallery items."""
    n = len(y)
    queries = np.sort(rng.choice(n, n_queries, replace=False))
    gallery = np.setdiff1d(np.arange(n), queries)
    rel = np.empty((n_queries, n_relevant), dtype=np.intp)
    for c in np.unique(y):
        pool = gallery[y[gallery] == c]
        at = np.flatnonzero(y[queries] == c)
        for a in at:  # a few dozen queries: instance generation only
            rel[a] = rng.choice(pool, n_relevant, replace=False)
    return queries, rel, gallery


def _instance(name, source, random_state, description, arrays, **hyperparameters):
    """One bundled instance, as :func:`bundled` lists it."""
    return dict(name=name, source=source, random_state=random_state,
                description=description, arrays=arrays, hyperparameters=hyperparameters)


def _by_form(source, seed, arrays, common, regularizer, diagonal, variants):
    """Instances on the same data (``lam = 1``), one per ``(name, form,
    head)`` of ``variants``; each description is ``head + common``."""
    return [_instance(name, source, seed, head + common, arrays, regularizer=regularizer,
                      form=form, lam=1.0, diagonal=diagonal)
            for name, form, head in variants]


def _synthetic_instance(name, sizes, k, seed, description, **hyperparameters):
    """Eq. 7 on :func:`synthetic_retrieval` data of ``sizes`` (gallery,
    queries, dims), critical triplets of ``k`` top + ``k`` random items."""
    from ._pairs import critical_triplets

    X, q, r, g = synthetic_retrieval(*sizes, random_state=seed)
    t = critical_triplets(q, r, g, X, n_top=k, n_random=k, random_state=seed)
    return _instance(name, "synthetic", seed, description, {"X": X, "triplets": t},
                     regularizer="frobenius", **hyperparameters)


def _iris_instances():
    """Eq. 9 (Burg, both forms) and Eq. 11 on iris."""
    from sklearn.datasets import load_iris

    from ._pairs import critical_triplets

    X, y = load_iris(return_X_y=True)
    X = standardize(X)
    rng = np.random.RandomState(1)
    q, r, g = _labelled_split(X, y, 30, 2, rng)
    # prior: the Mahalanobis metric of the gallery (a non-isotropic A0)
    A0 = np.linalg.inv(np.cov(X[g], rowvar=False))
    A0 = 0.5 * (A0 + A0.T)
    t = critical_triplets(q, r, g, X, n_top=2, n_random=2, A0=A0, random_state=1)
    iris = ("iris (standardised), 30 queries, 2 same-class relevant items each, "
            "critical triplets (2 top + 2 random) under the baseline A0 = inverse "
            "gallery covariance, which is also the Burg prior; lam=1.")
    out = _by_form("iris", 1, {"X": X, "triplets": t, "A0": A0}, iris, "burg", False, (
        ("iris_burg", "printed", ("Eq. 9 as printed (Burg, first term "
                                  "||A A0hat^-1||_F^2, full, tr(A) = tr(A0)): ")),
        ("iris_burg_spectral", "spectral", (
            "Eq. 9, Burg's spectral form (first term tr((A A0hat^-1)^2), full, "
            "tr(A) = tr(A0)), the same data as iris_burg: "))))
    t = critical_triplets(q, r, g, X, n_top=3, n_random=3, random_state=5)
    out.append(_instance(
        "iris_laplacian", "iris", 5,
        "Eq. 11 as printed (diagonal, Laplacian, no trace constraint): "
        "iris (standardised), the queries and relevant items of "
        "iris_burg, critical triplets (3 top + 3 random) under the "
        "Euclidean baseline; lam=1.",
        {"X": X, "triplets": t},
        regularizer="laplacian", form="printed", lam=1.0, diagonal=True))
    return out


def _wine_instance():
    """The LogDet variant of Eq. 9 on wine."""
    from sklearn.datasets import load_wine
    from sklearn.decomposition import PCA

    from ._pairs import critical_triplets

    X, y = load_wine(return_X_y=True)
    X = PCA(n_components=6, random_state=0).fit_transform(standardize(X))
    X = X / X.std()
    rng = np.random.RandomState(2)
    q, r, g = _labelled_split(X, y, 30, 2, rng)
    t = critical_triplets(q, r, g, X, n_top=3, n_random=2, random_state=2)
    return _instance(
        "wine_logdet", "wine", 2,
        "LogDet-regularised variant of Eq. 9 (full, A0 = I, "
        "tr(A) = 6): wine (standardised, PCA to 6 dims, one global "
        "scale), 30 queries, 2 same-class relevant items each, "
        "critical triplets (3 top + 2 random), lam=2.",
        {"X": X, "triplets": t}, regularizer="logdet", lam=2.0, diagonal=False)


def _digits_instances():
    """Eq. 11, printed and trace-fixed, on digits."""
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA

    from ._pairs import critical_triplets

    X, y = load_digits(return_X_y=True)
    sub = np.sort(np.random.RandomState(3).choice(len(y), 400, replace=False))
    X = PCA(n_components=12, random_state=0).fit_transform(X[sub])
    X = X / X.std()
    y = y[sub]
    rng = np.random.RandomState(3)
    q, r, g = _labelled_split(X, y, 50, 1, rng)
    t = critical_triplets(q, r[:, 0], g, X, n_top=5, n_random=5, random_state=3)
    digits = ("400 digits (PCA to 12 dims, one global scale), 50 queries, one "
              "same-class relevant item each, critical triplets (5 top + 5 "
              "random), lam=1.")
    return _by_form("digits", 3, {"X": X, "triplets": t}, digits, "laplacian", True, (
        ("digits_laplacian", "printed", ("Eq. 11 as printed (diagonal, "
                                         "Laplacian, no trace constraint): ")),
        ("digits_laplacian_trace_fixed", "trace_fixed", (
            "Eq. 11 with sum(a) = d added (form='trace_fixed'; diagonal, "
            "Laplacian), the same data as digits_laplacian: "))))


def bundled():
    """The bundled instances (a few hundred triplets each)."""
    synthetic = _synthetic_instance(
        "synthetic_frobenius", (40, 30, 6), 3, 0,
        "Eq. 7 (Frobenius, full): 30 queries with heterogeneous "
        "scales against a 40-item gallery in 6 dims, one relevant item "
        "each, critical triplets (3 top-ranked + 3 random irrelevant "
        "under the Euclidean baseline), lam=1.", lam=1.0, diagonal=False)
    synthetic_diagonal = _synthetic_instance(
        "synthetic_frobenius_diagonal", (60, 40, 10), 4, 4,
        "Eq. 7 with a diagonal metric (a >= 0, lam/2 ||a||^2): 40 "
        "queries with heterogeneous scales against a 60-item gallery "
        "in 10 dims, critical triplets (4 top + 4 random), lam=0.5.",
        lam=0.5, diagonal=True)
    return [synthetic, *_iris_instances(), _wine_instance(), *_digits_instances(),
            synthetic_diagonal]


register_family(
    FamilySpec(name="rankdml", arrays=RANKDML_ARRAYS, hyperparameters=RANKDML_HP,
               to_data=_to_data, objective=_objective, exact=_exact,
               reference_solve=_reference_solve, sizes=_sizes, generate=bundled))

"""The ``constraintdml`` family of the problem collection (registered on import).

An instance is a sample matrix ``X`` (queries and retrieved items, one per
row), ``(query, item)`` pairs into it and their labels (+1 must-link, -1
cannot-link); hyperparameters ``hard`` (Eq. 1 when true, Eq. 4 / 6
otherwise), ``diagonal`` (Eq. 10) and ``lam`` (see
:class:`~cvxmetric.constraintdml.ConstraintData`).  The bundled instances follow
the paper's protocol (Sec. 3): each query retrieves its top ``K`` items
under the Euclidean baseline ``A0 = I`` and each retrieved item is judged
relevant (must-link) or not (cannot-link).
"""

import numpy as np

from ..collection import (ArraySpec, FamilySpec, exact_solves, register_family,
                          standardize)

__all__ = [
    "CONSTRAINTDML_ARRAYS",
    "CONSTRAINTDML_HP",
    "retrieval_pairs",
    "query_gallery",
    "bundled",
]

CONSTRAINTDML_ARRAYS = (
    ArraySpec("X", "float", ("n", "d"), doc="queries and items, one per row"),
    ArraySpec("pairs", "int", ("P", 2), doc="(query, item) rows into X"),
    ArraySpec("labels", "int", ("P",), doc="+1 must-link, -1 cannot-link"),
)

CONSTRAINTDML_HP = {"hard": True, "diagonal": False, "lam": 1.0}


def _to_data(arrays, hp):
    from ._problem import ConstraintData

    for key in ("hard", "diagonal"):
        if not isinstance(hp[key], bool):
            raise ValueError(f"{key}: expected true or false, got {hp[key]!r}.")
    return ConstraintData.from_pairs(arrays["X"], arrays["pairs"], arrays["labels"],
                                     hard=hp["hard"], diagonal=hp["diagonal"],
                                     lam=hp["lam"])


def _objective(data, M):
    """The paper's objective, ``+inf`` outside the feasible set (a violated
    cannot-link, off-diagonal entries of a diagonal problem)."""
    return data.feasible_objective(M)


_exact, _reference_solve = exact_solves("constraintdml")


def _sizes(arrays):
    n, d = arrays["X"].shape
    labels = arrays["labels"]
    return {"n": int(n), "d": int(d), "n_pairs": int(len(labels)),
            "n_must": int(np.sum(labels == 1)), "n_cannot": int(np.sum(labels == -1))}


def solve_dual(data):
    """:class:`~cvxmetric.constraintdml.ConstraintDualSolver` at its defaults
    (a collection solve of the registry,
    :attr:`cvxmetric.formulations.Method.collection`)."""
    from .fast import ConstraintDualSolver

    return ConstraintDualSolver().run(data)


def retrieval_pairs(X, queries, gallery, relevant, k):
    """Top-``k`` retrieval under the Euclidean baseline, judged by relevance.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    queries, gallery : ndarray of int
        Rows of ``X``.
    relevant : callable
        ``relevant(q, items) -> bool array``: the judgement of each
        retrieved item for query row ``q``.
    k : int
        Items retrieved per query.  Items identical to the query are
        skipped (a must-link of identical points is bad input and a
        cannot-link of identical points is infeasible).

    Returns
    -------
    pairs : ndarray of int, shape (len(queries) * k, 2)
    labels : ndarray of int, shape (len(queries) * k,)
    """
    G = X[gallery]
    rows, labels = [], []
    for q in queries:  # a few dozen queries: instance generation only
        dist = np.sum((G - X[q]) ** 2, axis=1)
        dist[gallery == q] = np.inf
        order = [i for i in np.argsort(dist, kind="stable") if dist[i] > 0][:k]
        items = gallery[order]
        rows.append(np.stack([np.full(len(items), q), items], axis=1))
        labels.append(np.where(relevant(q, items), 1, -1))
    return np.vstack(rows), np.concatenate(labels)


def query_gallery(n_gallery, n_queries, d, k, *, random_state=0, far_fraction=0.2):
    """Synthetic query / gallery pairs with a heterogeneous scale per query.

    Gallery items are Gaussian with feature scales between 0.5 and 2.  Each
    query is a noisy copy of one gallery item (its only relevant item), the
    noise being larger on the first half of the features; its scale varies
    per query (log-normal), with ``far_fraction`` of the queries five times
    farther -- the "far away queries" that, by Theorem 1 and the
    representer argument of Sec. 3.1, dominate the constraint-based
    objective.  Each query retrieves its ``k`` nearest gallery items.

    Returns
    -------
    X : ndarray of shape (n_gallery + n_queries, d)
        Gallery rows first, then the queries.
    pairs : ndarray of int, shape (n_queries * k, 2)
    labels : ndarray of int, shape (n_queries * k,)
    """
    rng = np.random.RandomState(random_state)
    scales = np.exp(rng.uniform(np.log(0.5), np.log(2.0), d))
    G = rng.normal(size=(n_gallery, d)) * scales
    src = rng.randint(0, n_gallery, n_queries)
    noise_sd = np.where(np.arange(d) < d // 2, 1.0, 0.15) * scales
    q_scale = np.exp(rng.normal(scale=0.4, size=n_queries))
    q_scale[rng.rand(n_queries) < far_fraction] *= 5.0
    Q = G[src] + rng.normal(size=(n_queries, d)) * noise_sd * q_scale[:, None]
    X = np.vstack([G, Q])
    queries = n_gallery + np.arange(n_queries)
    source = dict(zip(queries.tolist(), src.tolist()))
    pairs, labels = retrieval_pairs(
        X, queries, np.arange(n_gallery), lambda q, items: items == source[q], k)
    return X, pairs, labels


def _labelled_retrieval(X, y, n_queries, k, rng):
    """Queries drawn from the samples, the rest is the gallery; an item is
    relevant when it has the query's class."""
    n = len(y)
    queries = np.sort(rng.choice(n, n_queries, replace=False))
    gallery = np.setdiff1d(np.arange(n), queries)
    return retrieval_pairs(X, queries, gallery, lambda q, items: y[items] == y[q], k)


def _instance(name, source, random_state, description, arrays, **hyperparameters):
    """One bundled instance, as :func:`bundled` lists it."""
    return dict(name=name, source=source, random_state=random_state,
                description=description, arrays=arrays, hyperparameters=hyperparameters)


def _labelled_instances(load, n_components, k, random_state, named):
    """Instances on one labelled data set: ``named`` lists ``(name, hard,
    diagonal, lam, description)``, all on the same pairs (30 queries, top-``k``
    Euclidean retrieval, same class = relevant); ``n_components``: PCA
    first (and one global scale), or ``None``."""
    from sklearn.decomposition import PCA

    X, y = load(return_X_y=True)
    X = standardize(X)
    if n_components is not None:
        X = PCA(n_components=n_components, random_state=0).fit_transform(X)
        X = X / X.std()
    p, lab = _labelled_retrieval(X, y, 30, k, np.random.RandomState(random_state))
    source = load.__name__[len("load_"):]
    return [_instance(name, source, random_state, description,
                      {"X": X, "pairs": p, "labels": lab},
                      hard=hard, diagonal=diagonal, lam=lam)
            for name, hard, diagonal, lam, description in named]


def bundled():
    """The bundled instances (a few hundred pairs each)."""
    from sklearn.datasets import load_iris, load_wine

    X, p, lab = query_gallery(40, 30, 6, 8, random_state=0)
    out = [_instance(name, "synthetic", 0,
                     f"{what}, full matrix: 30 queries with heterogeneous "
                     f"scales against a 40-item gallery in 6 dims, top-8 "
                     f"Euclidean retrieval, one relevant item per query, "
                     f"lam={lam:g}.",
                     {"X": X, "pairs": p, "labels": lab},
                     hard=hard, diagonal=False, lam=lam)
           for hard, name, lam, what in ((True, "synthetic_eq1", 1.0, "Eq. 1 (hard)"),
                                         (False, "synthetic_eq4", 1.0,
                                          "Eq. 4 / 6 (hinge)"))]
    out += _labelled_instances(load_iris, None, 6, 1, (
        ("iris_eq10", True, True, 1.0,
         ("Eq. 10 (hard, diagonal): iris (standardised), 30 queries, "
          "top-6 Euclidean retrieval among the other 120 samples, "
          "same class = relevant, lam=1.")),
        ("iris_eq4", False, False, 0.2,
         ("Eq. 4 / 6 (hinge, full matrix) on the iris pairs of "
          "iris_eq10, lam=0.2.")),
    ))
    out += _labelled_instances(load_wine, 8, 8, 2, (
        ("wine_eq1", True, False, 1.0,
         ("Eq. 1 (hard, full matrix): wine (standardised, PCA to 8 "
          "dims, one global scale), 30 queries, top-8 Euclidean "
          "retrieval among the other 148 samples, same class = "
          "relevant, lam=1.")),
        ("wine_eq4_diagonal", False, True, 0.5,
         ("Eq. 10 with Eq. 6's hinge (diagonal): the wine pairs of "
          "wine_eq1, lam=0.5.")),
    ))
    return out


register_family(
    FamilySpec(name="constraintdml", arrays=CONSTRAINTDML_ARRAYS,
               hyperparameters=CONSTRAINTDML_HP, to_data=_to_data, objective=_objective,
               exact=_exact, reference_solve=_reference_solve, sizes=_sizes, generate=bundled))

"""LFDA (Sugiyama, JMLR 2007): the local scatter matrices against a dense
construction from the paper's definitions, the generalised eigenproblem,
the estimator (scikit-learn's checks), metric-learn's saved answers, and
bad input.

``metric_learn_lfda.npz`` holds metric-learn 0.7.0's ``components_``
(run under scikit-learn 1.7, where its ``fit`` still works), made by::

    import numpy as np
    from metric_learn import LFDA
    from sklearn.datasets import load_iris, load_wine

    Xi, yi = load_iris(return_X_y=True)
    Xw, yw = load_wine(return_X_y=True)
    Xw = (Xw - Xw.mean(axis=0)) / Xw.std(axis=0)
    lf = {}
    for name, X, y in (("iris", Xi, yi), ("wine", Xw, yw)):
        for emb in ("weighted", "orthonormalized", "plain"):
            for dim in (2, None):
                est = LFDA(k=2, n_components=dim, embedding_type=emb).fit(X, y)
                lf[f"{name}_{emb}_{dim or 'all'}"] = est.components_
    np.savez_compressed("tests/lfda/metric_learn_lfda.npz", **lf)

metric-learn 0.7 departs from the paper in two places, which
:func:`test_metric_learn_is_the_paper_with_its_two_departures` reproduces
to round-off: ``sigma_i`` is read from column ``k`` of the
column-partitioned distance matrix (``np.partition(dist, k, axis=0)[:,
k]``) instead of row ``k`` (each sample's ``k``-th neighbour), and its
``S_b`` is the paper's plus ``2 S_w`` (``tSb -= sum_outer(X) / n - tSw``,
where Sugiyama's code subtracts ``tSw``), which shifts every eigenvalue by
2 and leaves the eigenvectors.
"""

import pathlib

import numpy as np
import pytest
import scipy.linalg
from sklearn.datasets import load_iris, load_wine
from sklearn.metrics import pairwise_distances
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import parametrize_with_checks

import cvxmetric.lfda._problem as problem
from cvxmetric.lfda import LFDA, lfda_components, local_scatter

FIXTURE = pathlib.Path(__file__).with_name("metric_learn_lfda.npz")


def wine():
    X, y = load_wine(return_X_y=True)
    return (X - X.mean(axis=0)) / X.std(axis=0), y


def dense_scatter(X, y, k):
    """S_b, S_w from the paper's Eq. 4 and 9-12, one n x n weight matrix
    each, sigma_i from a sort of each sample's same-class distances."""
    n = len(y)
    D = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    sigma = np.empty(n)
    for i in range(n):
        same = np.sort(D[i, y == y[i]])
        sigma[i] = np.sqrt(same[min(k, same.size - 1)])
    scale = np.outer(sigma, sigma)
    A = np.where(scale > 0, np.exp(-D / np.where(scale > 0, scale, 1.0)), 0.0)
    nc = np.bincount(y)[y][:, None]
    same = y[:, None] == y[None, :]
    W_w = np.where(same, A / nc, 0.0)
    W_b = np.where(same, A * (1.0 / n - 1.0 / nc), 1.0 / n)

    def scatter(W):  # 1/2 sum_ij W_ij (x_i - x_j)(x_i - x_j)^T
        return sum(W[i, j] * np.outer(X[i] - X[j], X[i] - X[j])
                   for i in range(n) for j in range(n)) / 2

    return scatter(W_b), scatter(W_w)


def test_the_scatter_matrices_are_the_papers():
    rng = np.random.RandomState(0)
    y = np.repeat([0, 1, 2], [9, 7, 4])
    X = rng.normal(size=(20, 3)) + 2 * rng.normal(size=(3, 3))[y]
    X[5] = X[4]  # a duplicate: sigma 0 for both at k = 1
    for k in (1, 3, 7):
        S_b, S_w = local_scatter(X, y, k)
        D_b, D_w = dense_scatter(X, y, k)
        np.testing.assert_allclose(S_w, D_w, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(S_b, D_b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("embedding", ["weighted", "orthonormalized", "plain"])
def test_the_generalised_eigenproblem(embedding):
    X, y = wine()
    est = LFDA(k=3, n_components=4, embedding_type=embedding).fit(X, y)
    S_b, S_w = local_scatter(X, y, 3)
    L, vals = est.components_, est.eigenvalues_
    assert L.shape == (4, 13) and np.all(np.diff(vals) <= 0)
    all_vals = scipy.linalg.eigh(S_b, S_w, eigvals_only=True)
    np.testing.assert_allclose(vals, all_vals[::-1][:4], rtol=1e-10)
    if embedding == "plain":
        np.testing.assert_allclose(L @ S_w @ L.T, np.eye(4), atol=1e-9)
        np.testing.assert_allclose(L @ S_b @ L.T, np.diag(vals), atol=1e-8 * vals[0])
    elif embedding == "orthonormalized":
        np.testing.assert_allclose(L @ L.T, np.eye(4), atol=1e-12)
    else:
        np.testing.assert_allclose(L @ S_w @ L.T, np.diag(vals), atol=1e-8 * vals[0])

    # the trace ratio (Eq. 13) is maximal: no other 4-dim T does better
    def ratio(T):
        return np.trace(np.linalg.solve(T.T @ S_w @ T, T.T @ S_b @ T))

    best = ratio(L.T)
    assert best == pytest.approx(vals.sum(), rel=1e-9)
    rng = np.random.RandomState(0)
    for _ in range(20):
        assert ratio(L.T + 0.1 * rng.normal(size=L.T.shape)) <= best * (1 + 1e-12)


def _metric_learn_affinity(Xc, k):
    """metric-learn 0.7's sigma: column k of the column-partitioned matrix."""
    dist = pairwise_distances(Xc, metric="l2", squared=True)
    k = min(k, Xc.shape[0] - 1)
    sigma = np.sqrt(np.partition(dist, k, axis=0)[:, k])
    scale = np.outer(sigma, sigma)
    with np.errstate(divide="ignore", invalid="ignore"):
        A = np.exp(-dist / scale)
    A[scale == 0] = 0
    return A


def _cases():
    Xi, yi = load_iris(return_X_y=True)
    Xw, yw = wine()
    for name, X, y in (("iris", Xi, yi), ("wine", Xw, yw)):
        for emb in ("weighted", "orthonormalized", "plain"):
            for dim in (2, None):
                yield f"{name}_{emb}_{dim or 'all'}", X, y, emb, dim


def test_metric_learn_is_the_paper_with_its_two_departures(monkeypatch):
    saved = np.load(FIXTURE)
    paper = problem.local_scatter

    def metric_learn_scatter(X, codes, k):
        S_b, S_w = paper(X, codes, k)
        return S_b + 2 * S_w, S_w

    # the paper's answers differ from metric-learn's ...
    differ = 0
    for key, X, y, emb, dim in _cases():
        L = LFDA(k=2, n_components=dim, embedding_type=emb).fit(X, y).components_
        M, Mm = L.T @ L, saved[key].T @ saved[key]
        differ += not np.allclose(M, Mm, rtol=1e-6, atol=1e-8 * np.abs(Mm).max())
    assert differ >= 6
    # ... by exactly the two departures
    monkeypatch.setattr(problem, "_class_affinity", _metric_learn_affinity)
    monkeypatch.setattr(problem, "local_scatter", metric_learn_scatter)
    for key, X, y, emb, dim in _cases():
        L = LFDA(k=2, n_components=dim, embedding_type=emb).fit(X, y).components_
        M, Mm = L.T @ L, saved[key].T @ saved[key]
        np.testing.assert_allclose(M, Mm, rtol=1e-8, atol=1e-10 * np.abs(Mm).max(),
                                   err_msg=key)


def test_k_as_metric_learn_chooses_it():
    X, y = wine()
    default = LFDA().fit(X, y)
    np.testing.assert_allclose(default.components_, LFDA(k=7).fit(X, y).components_)
    Xi, yi = load_iris(return_X_y=True)  # d = 4: default k = 3; k >= d -> d - 1
    np.testing.assert_allclose(LFDA().fit(Xi, yi).components_,
                               LFDA(k=3).fit(Xi, yi).components_)
    with pytest.warns(UserWarning, match="too large"):
        big = LFDA(k=10).fit(Xi, yi)
    np.testing.assert_allclose(big.components_, LFDA(k=3).fit(Xi, yi).components_)


def test_a_constant_feature_is_dropped():
    X, y = wine()
    X = np.column_stack([X, np.ones(len(y))])
    with pytest.warns(UserWarning, match="span 13 of 14"):
        est = LFDA(k=3).fit(X, y)
    assert est.components_.shape == (13, 14) and np.all(np.isfinite(est.components_))
    np.testing.assert_allclose(est.components_[:, -1], 0.0, atol=1e-10)
    ref = LFDA(k=3).fit(X[:, :-1], y)
    np.testing.assert_allclose(est.get_mahalanobis_matrix()[:-1, :-1],
                               ref.get_mahalanobis_matrix(), rtol=1e-7,
                               atol=1e-9 * np.abs(ref.get_mahalanobis_matrix()).max())


@parametrize_with_checks([LFDA(), LFDA(k=2, n_components=1, embedding_type="plain")])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_bad_input():
    X, y = wine()
    with pytest.raises(ValueError, match="NaN"):
        LFDA().fit(np.where(np.eye(*X.shape) > 0, np.nan, X), y)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        LFDA().fit(X, y[:-1])
    with pytest.raises(InvalidParameterError, match="k"):
        LFDA(k=0).fit(X, y)
    with pytest.raises(InvalidParameterError, match="embedding_type"):
        LFDA(embedding_type="whitened").fit(X, y)
    with pytest.raises(ValueError, match="n_components: at most"):
        LFDA(n_components=14).fit(X, y)
    with pytest.raises(ValueError, match="2 classes"):
        LFDA().fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match="singular"):  # d > n
        LFDA().fit(np.random.RandomState(0).normal(size=(6, 10)), [0, 0, 0, 1, 1, 1])


def test_lfda_components_directly():
    X, y = wine()
    L, vals = lfda_components(X, y, 2, 2, "plain")
    assert L.shape == (2, 13) and vals.shape == (2,)

"""Tiny RankDML instances shared by the tests of this folder.

Sizes are kept small (n <= 40, d <= 5, <= 120 triplets) so that every module
stays within a few seconds.  Tolerances come from
:mod:`cvxmetric._tolerances` only.  Helpers are reached through the ``rk``
fixture (test modules never import ``conftest``: pytest runs in importlib
mode).
"""

import types

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.preprocessing import StandardScaler

from cvxmetric.constraints import Triplets
from cvxmetric.rankdml import RankData, critical_triplets, solve_exact
from cvxmetric.rankdml._collection import synthetic_retrieval
from cvxmetric.rankdml.fast import warm_start


def pd_matrix(d, seed=0, ridge=0.5):
    """A well-conditioned, non-isotropic symmetric positive definite matrix."""
    rng = np.random.RandomState(seed)
    B = rng.randn(d, d)
    return B @ B.T / d + ridge * np.eye(d)


def retrieval_triplets(seed=0, n_gallery=20, n_queries=12, d=4, n_top=3, n_random=2):
    """Synthetic query / gallery data and its critical triplets."""
    X, q, r, g = synthetic_retrieval(n_gallery, n_queries, d, random_state=seed)
    t = critical_triplets(q, r, g, X, n_top=n_top, n_random=n_random,
                          random_state=seed)
    return Triplets.create(X, t)


#: (id, from_triplets keyword arguments) of every problem kind
KINDS = [
    ("frobenius", dict(regularizer="frobenius")),
    ("frobenius-diag", dict(regularizer="frobenius", diagonal=True)),
    ("laplacian", dict(regularizer="laplacian", diagonal=True)),  # Eq. 11 as printed
    ("laplacian-fixed", dict(regularizer="laplacian", diagonal=True, form="trace_fixed")),
    ("burg", dict(regularizer="burg")),
    ("burg-A0", dict(regularizer="burg", A0="pd", tau=2.5)),  # printed, non-isotropic
    ("burg-A0-spectral", dict(regularizer="burg", A0="pd", tau=2.5, form="spectral")),
    ("logdet-A0", dict(regularizer="logdet", A0="pd")),
]


def make_data(triplets, lam=0.8, **kw):
    if isinstance(kw.get("A0"), str):
        kw["A0"] = pd_matrix(triplets.X.shape[1], seed=7)
    return RankData.from_triplets(triplets, lam=lam, **kw)


@pytest.fixture(scope="session")
def rk():
    """Helpers: ``pd_matrix``, ``retrieval_triplets``, ``make_data``, ``KINDS``."""
    return types.SimpleNamespace(pd_matrix=pd_matrix,
                                 retrieval_triplets=retrieval_triplets,
                                 make_data=make_data, KINDS=KINDS)


@pytest.fixture(scope="session")
def docs_iris():
    """The critical triplets of the docs example: standardised iris, 30
    queries (every fifth sample), one relevant item each, 3 + 3."""
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    rng = np.random.RandomState(0)
    queries = np.arange(0, 150, 5)
    gallery = np.setdiff1d(np.arange(150), queries)
    relevant = [rng.choice(gallery[y[gallery] == y[q]]) for q in queries]
    t = critical_triplets(queries, relevant, gallery, X, n_top=3, n_random=3,
                          random_state=0)
    return Triplets.create(X, t)


@pytest.fixture(scope="session")
def rank_triplets():
    """60 critical triplets: 12 queries, 20 gallery items, d = 4."""
    return retrieval_triplets()


@pytest.fixture(scope="session", params=KINDS, ids=[k for k, _ in KINDS])
def kind_data(request, rank_triplets):
    """Every problem kind on ``rank_triplets`` (lam = 0.8)."""
    return make_data(rank_triplets, **request.param[1])


@pytest.fixture(scope="session")
def kind_exact(kind_data):
    return solve_exact(kind_data, warm_start=warm_start)

"""PairOperator and the PSD projection against naive computations.

``PairOperator`` has two storage modes -- stored difference vectors ``Phi``
(``materialize=True``) and the sample-space mode (``materialize=False``),
where ``gram`` is ``X^T L X`` for the weighted graph Laplacian ``L`` and
squared distances are ``q_i + q_j - 2 x_i^T V x_j``.  The sample-space mode
has a dense-kernel branch (``n <= _KERNEL_MAX``) and a sparse / chunked
branch (forced here by setting ``_KERNEL_MAX = 0``), and ``gram`` gathers
the weighted pairs directly when a cost model says that is cheaper (forced
off here by a huge ``_GATHER_COST``).  Every branch is compared with
the naive sum of outer products.  (These are exact-arithmetic identities
checked to round-off, not objective comparisons.)
"""

import numpy as np
import pytest

from cvxmetric._linalg import PairOperator, eigh_psd, project_psd

RTOL = 1e-11  # round-off of a few hundred flops on O(1) numbers


def naive_gram(X, pairs, w):
    out = np.zeros((X.shape[1], X.shape[1]))
    for (i, j), wp in zip(pairs, w):
        phi = X[i] - X[j]
        out += wp * np.outer(phi, phi)
    return out


def naive_sqdist(X, pairs, M):
    return np.array([(X[i] - X[j]) @ M @ (X[i] - X[j]) for i, j in pairs])


def close(a, b):
    scale = max(1.0, float(np.max(np.abs(b)))) if np.size(b) else 1.0
    np.testing.assert_allclose(a, b, rtol=0, atol=RTOL * scale)


@pytest.fixture(scope="module")
def instance():
    rng = np.random.RandomState(0)
    n, d = 12, 4
    X = rng.randn(n, d)
    pairs = rng.randint(0, n, size=(40, 2))
    pairs[:3, 1] = pairs[:3, 0]  # zero difference vectors are allowed
    pairs[5] = pairs[4]  # a repeated pair
    pairs[6] = pairs[4][::-1]  # and its reverse
    return X, pairs


@pytest.fixture(params=["Phi", "gather", "kernel", "sparse"])
def op(request, instance, monkeypatch):
    """One operator per code path.  "gather" keeps no difference vectors and
    forms Gram matrices from gathered rows; "kernel" and "sparse" make
    gathering look expensive so that ``gram`` takes the dense n x n
    Laplacian or the sparse one; "sparse" also disables the dense kernel and
    uses a tiny chunk so that the chunked loops run several times."""
    import cvxmetric._linalg as linalg

    X, pairs = instance
    if request.param in ("kernel", "sparse"):
        monkeypatch.setattr(linalg, "_GATHER_COST", 1e9)
    if request.param == "sparse":
        monkeypatch.setattr(linalg, "_KERNEL_MAX", 0)
        monkeypatch.setattr(linalg, "_CHUNK", 7)
    return PairOperator(X, pairs, materialize=request.param == "Phi")


def test_paths(instance):
    X, pairs = instance
    assert PairOperator(X, pairs, materialize=True).Phi is not None
    assert PairOperator(X, pairs, materialize=False).Phi is None
    assert PairOperator(X, pairs).n_pairs == len(pairs)


@pytest.mark.parametrize("density", ["dense", "sparse", "single", "zero", "signed"])
def test_gram(op, instance, density):
    X, pairs = instance
    rng = np.random.RandomState(1)
    w = rng.rand(len(pairs))
    if density == "sparse":
        w[rng.rand(len(w)) < 0.8] = 0.0
    elif density == "single":  # one weighted pair: the gather branch
        w[:] = 0.0
        w[9] = 2.5
    elif density == "zero":
        w[:] = 0.0
    elif density == "signed":
        w = rng.randn(len(pairs))
    G = op.gram(w)
    assert G.shape == (X.shape[1], X.shape[1])
    close(G, naive_gram(X, pairs, w))


def test_laplacian(instance):
    X, pairs = instance
    op = PairOperator(X, pairs, materialize=False)
    w = np.random.RandomState(2).randn(len(pairs))
    L = op.laplacian(w).toarray()
    close(L, L.T)
    close(L.sum(axis=1), np.zeros(len(X)))
    close(X.T @ L @ X, naive_gram(X, pairs, w))
    # also available on the materialised path
    L2 = PairOperator(X, pairs, materialize=True).laplacian(w).toarray()
    close(L2, L)


def test_laplacian_repeated_mirrored_and_self_pairs():
    # the pattern is built over distinct unordered pairs: a pair given twice,
    # once reversed, and a pair (i, i) must still give sum_p w_p e e^T,
    # and a second call reuses the pattern with new weights
    rng = np.random.RandomState(3)
    X = rng.randn(9, 3)
    pairs = np.array([[0, 1], [1, 0], [0, 1], [2, 2], [3, 7], [8, 4], [4, 8]])
    op = PairOperator(X, pairs, materialize=False)
    for seed in (4, 5):
        w = np.random.RandomState(seed).randn(len(pairs))
        E = np.zeros((len(pairs), len(X)))
        E[np.arange(len(pairs)), pairs[:, 0]] += 1.0
        E[np.arange(len(pairs)), pairs[:, 1]] -= 1.0
        close(op.laplacian(w).toarray(), E.T @ (w[:, None] * E))


def test_default_storage(instance, monkeypatch):
    """Difference vectors are stored when pairs do not outnumber samples, or
    when they take at most ``_SMALL_PHI`` floats."""
    import cvxmetric._linalg as linalg

    X, pairs = instance
    assert PairOperator(X, pairs).Phi is not None  # 40 x 4 floats: tiny
    monkeypatch.setattr(linalg, "_SMALL_PHI", len(pairs) * X.shape[1] - 1)
    assert PairOperator(X, pairs[:len(X)]).Phi is not None
    assert PairOperator(X, pairs).Phi is None
    # distances do not depend on a translation of the samples
    M = _matrices(X.shape[1])["psd"]
    for mat in (True, False):
        close(PairOperator(X + 100.0, pairs, materialize=mat).sqdist(M),
              naive_sqdist(X, pairs, M))


def _matrices(d):
    rng = np.random.RandomState(3)
    B = rng.randn(d, d)
    psd = B @ B.T
    low = B[:, :2] @ B[:, :2].T  # rank 2
    indefinite = 0.5 * (B + B.T)
    assert np.linalg.eigvalsh(indefinite)[0] < 0
    return {"psd": psd, "low-rank": low, "indefinite": indefinite,
            "zero": np.zeros((d, d)), "nsd": -psd}


@pytest.mark.parametrize("kind", ["psd", "low-rank", "indefinite", "zero", "nsd"])
def test_sqdist_M(op, instance, kind):
    X, pairs = instance
    M = _matrices(X.shape[1])[kind]
    want = naive_sqdist(X, pairs, M)
    close(op.sqdist(M), want)
    subset = np.array([7, 0, 3, 3, 39])
    close(op.sqdist(M, subset=subset), want[subset])
    close(op.sqdist(M, subset=np.array([], dtype=int)), np.zeros(0))
    close(op.quadform(M), want)
    close(op.quadform(M, subset=subset), want[subset])


def test_self_pairs_have_zero_distance(op, instance):
    """Pairs (i, i) -- what the Eq. 7 reductions create -- have distance 0
    (to round-off of the sample-space form)."""
    X, pairs = instance
    self_pairs = np.flatnonzero(pairs[:, 0] == pairs[:, 1])
    M = _matrices(X.shape[1])["psd"]
    scale = np.abs(M).max() * np.max(np.sum(X ** 2, axis=1))
    for out in (op.sqdist(M), op.quadform(M), op.sqdist(G=np.linalg.cholesky(M))):
        assert np.all(np.abs(out[self_pairs]) <= 1e-13 * scale)


@pytest.mark.parametrize("r", [0, 1, 3, 6])
def test_sqdist_G(op, instance, r):
    X, pairs = instance
    G = np.random.RandomState(4).randn(X.shape[1], r)
    want = naive_sqdist(X, pairs, G @ G.T)
    close(op.sqdist(G=G), want)
    subset = np.arange(0, len(pairs), 3)
    close(op.sqdist(G=G, subset=subset), want[subset])


# ---------------------------------------------------------------------------
# PSD projection
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["psd", "low-rank", "indefinite", "zero", "nsd"])
def test_project_psd_optimality(kind):
    """Moreau / KKT conditions of the Frobenius projection onto the PSD cone.

    ``P = Pi_PSD(A)`` iff ``P`` is PSD, ``P - A`` is PSD (``A - P`` is NSD:
    ``A = P - Pi_PSD(-A)``) and ``<P, P - A> = 0``.
    """
    d = 5
    A = _matrices(d)[kind]
    P, G = project_psd(A, return_factor=True)
    scale = max(1.0, np.abs(A).max())
    close(P, P.T)
    close(P, G @ G.T)
    assert np.linalg.eigvalsh(P)[0] >= -RTOL * scale
    assert np.linalg.eigvalsh(P - A)[0] >= -RTOL * scale  # A - P is NSD
    assert abs(np.sum(P * (P - A))) <= RTOL * scale ** 2
    assert G.shape[1] == int(np.sum(np.linalg.eigvalsh(A) > 0))
    close(project_psd(A), P)
    # idempotent
    close(project_psd(P), P)


def test_project_psd_symmetrises():
    rng = np.random.RandomState(5)
    A = rng.randn(4, 4)
    close(project_psd(A), project_psd(0.5 * (A + A.T)))


def test_project_psd_is_nearest():
    """No random PSD matrix is closer to A than the projection."""
    rng = np.random.RandomState(6)
    A = _matrices(4)["indefinite"]
    P = project_psd(A)
    best = np.linalg.norm(A - P)
    for _ in range(200):
        B = rng.randn(4, 4)
        Q = P + 0.1 * B @ B.T if rng.rand() < 0.5 else project_psd(P + 0.1 * rng.randn(4, 4))
        assert np.linalg.norm(A - Q) >= best - 1e-12


def test_eigh_psd():
    A = np.random.RandomState(7).randn(3, 3)
    w, V = eigh_psd(A)
    close(V @ np.diag(w) @ V.T, 0.5 * (A + A.T))


def test_pair_operator_single_precision_agrees_and_returns_float64():
    from cvxmetric._linalg import PairOperator

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 7))
    pairs = rng.integers(0, 60, size=(300, 2))
    w = rng.normal(size=300)
    G = rng.normal(size=(7, 3))
    V = rng.normal(size=(7, 7))
    V = V + V.T
    for materialize in (True, False):
        ref = PairOperator(X, pairs, materialize=materialize)
        single = PairOperator(X, pairs, materialize=materialize, dtype=np.float32)
        for a, b in ((ref.gram(w), single.gram(w)),
                     (ref.sqdist(G=G), single.sqdist(G=G)),
                     (ref.quadform(V), single.quadform(V))):
            assert b.dtype == np.float64
            np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-4 * np.abs(a).max())


def test_sqdist_of_an_indefinite_matrix_is_exact():
    # a PSD matrix with round-off negative eigenvalues, and a truly
    # indefinite one: the signed factors give phi^T M phi like the full form
    from cvxmetric._linalg import PairOperator

    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 9))
    pairs = rng.integers(0, 80, size=(500, 2))
    B = rng.normal(size=(9, 4))
    for M in (B @ B.T - 1e-15 * np.eye(9), np.diag([1.0, -0.5] + [0.3] * 7)):
        for materialize in (True, False):
            op = PairOperator(X, pairs, materialize=materialize)
            ref = op.quadform(M)
            np.testing.assert_allclose(op.sqdist(M), ref, rtol=1e-10,
                                       atol=1e-10 * np.abs(ref).max())


def test_whitening_basis_spans_the_centred_rows_with_unit_variance():
    from cvxmetric._linalg import whitening_basis

    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3)) @ rng.normal(size=(3, 5)) * [1e3, 1, 1e-1, 1, 1]
    X[:, 1] = 7.0  # a constant feature
    B = whitening_basis(X)
    assert B.shape == (5, 3)  # the numerical rank of the centred rows
    Z = (X - X.mean(axis=0)) @ B
    np.testing.assert_allclose(Z.T @ Z, 50 * np.eye(3), atol=1e-8)
    # the span: projecting the centred rows onto it changes nothing
    Xc = X - X.mean(axis=0)
    P = B @ np.linalg.pinv(B)
    np.testing.assert_allclose(Xc @ P.T, Xc, atol=1e-8 * np.abs(Xc).max())


def test_pow2_rms_exponents():
    from cvxmetric._linalg import pow2_rms_exponents

    rng = np.random.default_rng(0)
    base = rng.normal(size=(400, 4))
    rms0 = np.sqrt(np.mean(base * base, axis=0))
    scales = np.array([1e-3, 1.0, 1e3, 1e200])
    e, live = pow2_rms_exponents(np.column_stack([base * scales, np.zeros(400)]))
    assert live.tolist() == [True] * 4 + [False] and e[4] == 0
    # 2^e is the power of two nearest the root mean square, at any scale
    ratio = np.ldexp(rms0 * scales, -e[:4])
    assert np.all((ratio >= 2 ** -0.5) & (ratio <= 2 ** 0.5))
    e0, live0 = pow2_rms_exponents(np.empty((0, 3)))
    assert e0.tolist() == [0, 0, 0] and not live0.any()

"""The dual solver's endgame on a face of rank r with k hinges on their
margin: the reduced step (r (r + 1) / 2 + k unknowns) reaches the same
solution as the whole Gauss-Newton step (d r + k), to round-off."""

import numpy as np
import pytest

from cvxmetric._linalg import eigh_psd
from cvxmetric.bench.qwise import _points
from cvxmetric.constraints import Quadruplets
from cvxmetric.qwise import QwiseDualSolver
from cvxmetric.qwise._problem import QwiseData
from cvxmetric.qwise.fast import (
    _face_gram,
    _face_point,
    _face_step,
    _newton_face,
    _newton_face_reduced,
)


def _near_optimum(regularizer, seed):
    """A point at a certified gap of about 1e-4 (no endgame), its face read
    with a band of 1e-3 and its factor of rank r."""
    X, _, quads = _points(8, 600, seed)
    data = QwiseData.from_sets(Quadruplets.create(X, quads, 1.0),
                               regularizer=regularizer, C_q=1.0)
    res = QwiseDualSolver(tol=1e-4, polish_from=None, working_set=None).run(data, warn=False)
    assert 1e-6 < res.certificate.rel_gap <= 1e-4
    arg = data.delta_q - data.a_of(data.op.sqdist(res.M))
    w, V = eigh_psd(res.M)
    keep = w > 1e-7 * w[-1]
    return (data, V[:, keep] * np.sqrt(w[keep]), res.info["alpha"],
            np.abs(arg) <= 1e-3, arg > 1e-3)


@pytest.mark.parametrize("regularizer", ["trace", "frobenius"])
@pytest.mark.parametrize("seed", [0, 2])
def test_reduced_face_step_solves_the_face(regularizer, seed):
    data, G0, alpha, W, act = _near_optimum(regularizer, seed)
    M_full, *_, gap_full = _face_point(data, *_newton_face(data, G0, alpha, W, act))
    M, *_, gap = _face_point(data, *_newton_face_reduced(data, G0, alpha, W, act))
    assert gap <= 1e-10 and gap_full <= 1e-10
    np.testing.assert_allclose(M, M_full, atol=1e-8 * np.abs(M_full).max())


@pytest.mark.parametrize("regularizer", ["trace", "frobenius"])
def test_reduced_face_step_without_margin_hinges_or_at_full_rank(regularizer):
    # no hinge on its margin (an empty KKT block), and a face of full rank
    # (no complement): a step or none, never an error
    data, G0, alpha, W, act = _near_optimum(regularizer, 0)
    G, al = _newton_face_reduced(data, G0, alpha, np.zeros_like(W), act)
    assert G.shape == G0.shape and np.all(np.isfinite(G)) and al.shape == alpha.shape
    full = np.linalg.cholesky(G0 @ G0.T + np.eye(G0.shape[0]))
    G, al = _newton_face_reduced(data, full, alpha, W, act)
    assert G.shape == full.shape and np.all(np.isfinite(G))


@pytest.mark.parametrize("mu", [0.0, 0.5])
def test_face_gram_is_the_weighted_gram_of_the_blocks(mu):
    rng = np.random.default_rng(0)
    k, dr, r = 30, 7, 5
    g, h = rng.standard_normal((2, k, dr))
    f, n = rng.standard_normal((2, k, r))
    lam, y = rng.random(dr) + 0.1, rng.random(r) + 0.1
    Phi = g[:, :, None] * f[:, None, :] - h[:, :, None] * n[:, None, :]  # (k, d-r, r)
    K = np.einsum("qij,pij,ij->qp", Phi, Phi, y / (lam[:, None] + mu * y))
    np.testing.assert_allclose(_face_gram(g, h, f, n, lam, y, mu), K, rtol=1e-12,
                               atol=1e-12 * np.abs(K).max())


def test_face_step_by_size():
    # small faces take the whole step; the hard (100, 10^5) faces (r = 48,
    # 2 529 hinges on their margin) the reduced one; beyond its bounds none
    assert _face_step(8, 4, 21) is _newton_face
    assert _face_step(100, 48, 2529) is _newton_face_reduced
    assert _face_step(100, 48, 12_000) is None


def test_reduced_step_waits_for_slow_iterations():
    # the reduced step is tried only where four checks' rate would need
    # more than QWISE_FACE_SLOW_CHECKS further checks to reach tol
    from cvxmetric.qwise.fast import _slow

    assert not _slow((1e-3, 5e-4, 2e-4), 1e-7)  # no rate yet
    assert _slow((1e-4, 2e-4, 1e-4, 1e-4), 1e-7)  # no progress
    assert not _slow((1e-3, 1e-4, 1e-5, 1e-6), 1e-7)  # tenfold per check
    assert _slow((1e-3, 8e-4, 6.4e-4, 5.1e-4), 1e-7)  # 1.25-fold per check
    assert not _slow((1e-3, 1e-3, 1e-3, 1e-8), 1e-7)  # at tol already

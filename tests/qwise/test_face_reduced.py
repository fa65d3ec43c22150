"""The endgame's reduced Newton step (``_reduced_step``) against the dense
Gauss-Newton step of ``_newton_face``, on the same face and point.

The dense step is the minimum-norm least-squares solution of the face's
KKT system, whose Jacobian is singular exactly along the rotations of the
factor; the minimum-norm solution is therefore the horizontal one, which
is what the reduced system solves for.  So the two steps agree (to
round-off), not only the matrices they lead to.  Then both Newton
iterations reach the same optimum from a perturbed point, certified.
"""

import numpy as np
import pytest

from cvxmetric.bench.qwise import bench_data
from cvxmetric.qwise import QwiseDualSolver
from cvxmetric.qwise.fast import _face_point, _newton_face, _newton_face_reduced

from cvxmetric._linalg import eigh_psd


@pytest.fixture(scope="module")
def solved():
    data = bench_data(8, 300)
    assert data.mu == 0  # the trace regulariser: linear
    res = QwiseDualSolver(tol=1e-11, working_set=None).run(data)
    w, V = eigh_psd(res.M)
    keep = w > 1e-7 * w[-1]
    G = V[:, keep] * np.sqrt(w[keep])
    alpha, c = res.info["alpha"], data.c_q
    W = (alpha > 1e-7 * c) & (alpha < c * (1 - 1e-7))
    act = alpha >= c * (1 - 1e-7)
    assert W.sum() > G.shape[1]  # a face with margin hinges to solve for
    return data, G, alpha, W, act


def _perturbed(solved, scale, seed=0):
    data, G, alpha, W, act = solved
    rng = np.random.default_rng(seed)
    Gp = G + scale * rng.standard_normal(G.shape) * np.abs(G).max()
    ap = alpha + np.where(W, scale * rng.standard_normal(alpha.shape) * data.c_q, 0.0)
    return data, Gp, ap, W, act


def _residual(data, G, alpha, W, act):
    """``||F||`` of the face's conditions: ``(R - S(alpha)) G`` with
    ``alpha`` c on ``act``, its own value on ``W``, 0 elsewhere, and the
    margins ``a_q(G G^T) - delta_q`` on ``W``."""
    a = np.where(act, data.c_q, np.where(W, alpha, 0.0))
    F1 = (data.R - data.S_of(a)) @ G
    F2 = data.a_of(data.op.sqdist(G=G))[W] - data.delta_q[W]
    return np.hypot(np.linalg.norm(F1), np.linalg.norm(F2))


@pytest.mark.parametrize("seed", [0, 1])
def test_reduced_step_converges_quadratically(solved, seed):
    # one reduced step from a distance h: ||F|| falls by a factor that
    # itself shrinks with h (Newton's step to first order; the rotation it
    # fixes with the face's eigenvectors differs from the exact horizontal
    # one at second order only)
    rate = []
    for h in (1e-3, 1e-4):
        point = _perturbed(solved, h, seed)
        before = _residual(*point)
        G1, a1 = _newton_face_reduced(*point, steps=1)
        rate.append(_residual(point[0], G1, a1, *point[3:]) / before)
    assert rate[0] <= 0.05 and rate[1] <= 0.2 * rate[0], rate


@pytest.mark.parametrize("seed", [0, 1])
def test_reduced_newton_reaches_the_certified_optimum(solved, seed):
    data, G, alpha, W, act = _perturbed(solved, 1e-2, seed)
    start_gap = _face_point(data, G, alpha)[-1]
    Gr, ar = _newton_face_reduced(data, G, alpha, W, act)
    Mr, *_, gap = _face_point(data, Gr, ar)
    Md = _face_point(data, *_newton_face(data, G, alpha, W, act))[0]
    assert start_gap > 1e-6 and gap <= 1e-8, (start_gap, gap)
    assert np.abs(Mr - Md).max() <= 1e-6 * np.abs(Md).max()


def test_reduced_newton_takes_no_step_where_the_slack_is_not_positive(solved):
    # every hinge declared active and none on its margin: R - S(c) has
    # negative eigenvalues off M's range, the elimination does not exist
    data, G, alpha, W, act = solved
    none, every = np.zeros_like(W), np.ones_like(act)
    Gr, ar = _newton_face_reduced(data, G, alpha, none, every)
    np.testing.assert_array_equal(Gr, G)
    np.testing.assert_array_equal(ar, data.c_q)

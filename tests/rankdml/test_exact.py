"""The exact CVXPY path: certificates, the Qwise reduction of Eq. 7, parameters."""

import cvxpy as cp
import numpy as np
import pytest

from cvxmetric._tolerances import EXACT_GAP, MATRIX_RTOL
from cvxmetric.qwise import QwiseData
from cvxmetric.qwise import solve_exact as qwise_exact
from cvxmetric.rankdml import RankData, RankDMLModel, solve_exact
from cvxmetric.rankdml.fast import warm_start

#: Eq. 7 and its Qwise form are the same problem solved by two different
#: CVXPY models; their optima must agree this well (the brief's figure).
EQUIVALENCE_RTOL = 1e-8


def _rel(a, b):
    return abs(a - b) / max(1.0, abs(b))


def test_certificate_passes(kind_data, kind_exact):
    res, data = kind_exact, kind_data
    cert = res.certificate
    assert res.status == "optimal" and cert.passed
    assert cert.rel_gap <= EXACT_GAP
    assert cert.dual_bound <= cert.objective + EXACT_GAP * max(1.0, cert.objective)
    # the objective is recomputed from M in the paper's units
    assert res.objective == pytest.approx(data.objective(res.M), rel=1e-12)
    d = data.n_features
    assert res.M.shape == (d, d)
    if data.diagonal:
        assert np.count_nonzero(res.M - np.diag(np.diag(res.M))) == 0
    alpha = res.info["alpha"]
    assert alpha.shape == (data.n_constraints,)
    assert alpha.min() >= -1e-7 and alpha.max() <= 1 + 1e-7


def test_model_is_dpp_and_reachable(kind_data, kind_exact):
    model = kind_exact.info["model"]
    assert isinstance(model, RankDMLModel)
    assert isinstance(model.problem, cp.Problem)
    assert model.problem.is_dpp()
    assert isinstance(model.params["lam"], cp.Parameter)
    assert ("tau" in model.params) == kind_data.trace_fixed
    # the hinge constraint is one vectorised constraint, not one per
    # triplet; the default solve keeps only the margin set of the reduction
    assert model.reduced
    assert model.constraints["triplets"].shape == (len(model.margin_index),)
    declared = RankDMLModel(kind_data)
    assert declared.constraints["triplets"].shape == (kind_data.n_constraints,)
    assert declared.problem.is_dpp()
    full = solve_exact(kind_data, reduce=False)
    assert full.certificate.passed and not full.info["reduced"]
    assert _rel(full.objective, kind_exact.objective) <= EXACT_GAP


@pytest.mark.parametrize("lam", [0.3, 1.0, 4.0])
def test_eq7_is_qwise_eq8(rank_triplets, lam):
    # Eq. 7 = lam * Qwise Eq. 8 with quadruplets (q, r, q, i), delta = 1,
    # Omega = 0.5 ||M||_F^2 and C_q = 1 / lam
    rank = solve_exact(RankData.from_triplets(rank_triplets, lam=lam), warm_start=warm_start)
    quads = rank_triplets.to_quadruplets(1.0)
    np.testing.assert_array_equal(quads.indices[:, [0, 1, 3]], rank_triplets.indices)
    np.testing.assert_array_equal(quads.indices[:, 2], rank_triplets.indices[:, 0])
    q = QwiseData.from_sets(quads, regularizer="frobenius", C_q=1.0 / lam)
    qw = qwise_exact(q, reduce=False)
    assert _rel(rank.objective, lam * qw.objective) <= EQUIVALENCE_RTOL
    # the objectives agree at any matrix, not only at the optimum
    A = rank.M
    data = RankData.from_triplets(rank_triplets, lam=lam)
    assert data.objective(A) == pytest.approx(lam * q.objective(A), rel=1e-12)
    # strongly convex: the minimiser is unique
    np.testing.assert_allclose(rank.M, qw.M, atol=MATRIX_RTOL * max(1.0, np.linalg.norm(qw.M)))


def test_trace_fix_holds_at_the_solution(rank_triplets, rk):
    # with tr(A*) = tau the paper's A0hat = A0 tr(A*) / tr(A0) is the
    # constant prior the problem was solved with
    d = rank_triplets.X.shape[1]
    A0 = rk.pd_matrix(d, seed=7)
    for reg in ("burg", "logdet"):
        data = RankData.from_triplets(rank_triplets, regularizer=reg, A0=A0)
        res = solve_exact(data, warm_start=warm_start)
        assert np.trace(res.M) == pytest.approx(np.trace(A0), rel=1e-8)
        np.testing.assert_allclose(A0 * np.trace(res.M) / np.trace(A0), data.A0hat,
                                   rtol=1e-8)
        assert np.linalg.eigvalsh(res.M)[0] > 0  # the barrier keeps A definite
    lap = solve_exact(RankData.from_triplets(rank_triplets, regularizer="laplacian",
                                             diagonal=True, tau=3.0,
                                             form="trace_fixed"), warm_start=warm_start)
    assert np.trace(lap.M) == pytest.approx(3.0, rel=1e-8)
    assert np.diag(lap.M).min() >= -1e-9


def test_set_params_resolves_without_rebuilding(rank_triplets):
    data = RankData.from_triplets(rank_triplets, regularizer="burg", tau=3.0)
    model = RankDMLModel(data)
    model.set_params(lam=2.0, tau=5.0)
    swept = model.solve()
    fresh = solve_exact(RankData.from_triplets(rank_triplets, regularizer="burg",
                                               lam=2.0, tau=5.0), warm_start=warm_start)
    assert swept.certificate.passed
    assert _rel(swept.objective, fresh.objective) <= EXACT_GAP
    assert model.data.lam == 2.0 and model.data.tau == 5.0
    with pytest.raises(ValueError, match="tau: must be > 0"):
        model.set_params(tau=-1.0)
    assert model.params["tau"].value == 5.0  # a rejected value changes nothing
    with pytest.raises(ValueError, match="C_q: not a parameter"):
        model.set_params(C_q=1.0)


def test_regulariser_term_equals_the_paper_penalty(rank_triplets, rk):
    # the declared (expanded, parameterised) regulariser equals lam/2 Reg(A)
    # at a feasible A, for every kind
    d = rank_triplets.X.shape[1]
    rng = np.random.RandomState(0)
    B = rng.randn(d, d)
    for kind, kw in rk.KINDS:
        data = rk.make_data(rank_triplets, **kw)
        model = RankDMLModel(data)
        if data.diagonal:
            a = rng.rand(d) + 0.1
            if data.trace_fixed:
                a *= data.tau / a.sum()
            model.A.value = a
            point = a
        else:
            A = B @ B.T + 0.2 * np.eye(d)
            if data.trace_fixed:
                A *= data.tau / np.trace(A)
            model.A.value = A
            point = A
        model.eps.value = np.maximum(data.margins(point), 0.0)
        assert model.problem.objective.value == pytest.approx(
            data.objective(point), rel=1e-10), kind


def test_diagonal_frobenius_is_the_full_problem_restricted(rank_triplets):
    # the diagonal Eq. 7 equals the full one with A constrained diagonal
    diag = solve_exact(RankData.from_triplets(rank_triplets, diagonal=True), warm_start=warm_start)
    full = RankData.from_triplets(rank_triplets)
    d = full.n_features
    A = cp.Variable((d, d), symmetric=True)
    X = full.op.X
    Phi = X[full.op.i] - X[full.op.j]
    dist = cp.sum(cp.multiply(Phi @ A, Phi), axis=1)
    obj = cp.sum(cp.pos(1 + dist[full.near] - dist[full.far])) + 0.5 * full.lam * \
        cp.sum_squares(A)
    off = ~np.eye(d, dtype=bool)
    prob = cp.Problem(cp.Minimize(obj), [A >> 0, A[off] == 0])
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-9, tol_gap_rel=1e-9, tol_feas=1e-9)
    assert _rel(diag.objective, prob.value) <= EXACT_GAP

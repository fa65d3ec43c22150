"""Constraint-based DML (Lee, Jin, Jain 2008, Eq. 1, 4, 6, 10), exact path.

* every exact solve is certified, and its objective, constraints and dual
  bound are re-derived here independently of ``ConstraintData``;
* Theorem 1: Eq. 4 (slacks) and Eq. 6 (hinge) have the same optimum, with
  ``eps = max(0, d - 1)``;
* the multipliers reproduce the primal (``A = Pi_+(Y(u)) / lam``, the
  representer form of Eq. 3 / 5) and give valid bounds anywhere in the box;
* ``lam`` is a DPP parameter; ``lam = 0`` is attained;
* infeasibility (a cannot-link of identical points) is reported as
  ``InfeasibleError`` by the pre-check and, with the pre-check off, by
  Clarabel's and SCS's certificates; bad input is a ``ValueError`` naming
  the argument.
"""

import re

import numpy as np
import pytest

from cvxmetric._tolerances import EXACT_GAP, MATRIX_RTOL
from cvxmetric.constraintdml._problem import (
    ConstraintData,
    ConstraintDMLModel,
    solve_constraint_exact,
)
from cvxmetric.constraintdml._collection import query_gallery
from cvxmetric.result import InfeasibleError, SolverError

#: (hard, diagonal) of Eq. 1, Eq. 4 / 6, Eq. 10 and Eq. 10 with the hinge
VARIANTS = [(True, False), (False, False), (True, True), (False, True)]
IDS = ["eq1", "eq4", "eq10", "eq10-hinge"]


def _rel(a, b):
    return abs(float(a) - float(b)) / max(1.0, abs(float(b)))


@pytest.fixture(scope="module")
def retrieval():
    """12-item gallery, 8 queries in 4 dims, top-4 retrieval: 32 pairs."""
    return query_gallery(12, 8, 4, 4, random_state=3)


def _paper_objective(X, pairs, labels, M, hard, lam):
    """Eq. 1 / Eq. 6 written out with numpy (independent of the package)."""
    diff = X[pairs[:, 0]] - X[pairs[:, 1]]
    dist = np.einsum("pi,ij,pj->p", diff, M, diff)
    dm = dist[labels == 1]
    loss = dm.sum() if hard else np.maximum(dm - 1.0, 0.0).sum()
    return loss + 0.5 * lam * np.sum(M * M), dist


@pytest.fixture(scope="module", params=list(zip(VARIANTS, IDS)), ids=IDS)
def solved(request, retrieval):
    (hard, diagonal), _ = request.param
    X, pairs, labels = retrieval
    data = ConstraintData.from_pairs(X, pairs, labels, hard=hard, diagonal=diagonal,
                                     lam=0.5)
    return data, solve_constraint_exact(data)


def test_certificate_passes(solved):
    data, res = solved
    cert = res.certificate
    assert res.status == "optimal" and res.method == "exact"
    assert cert.passed
    assert cert.rel_gap <= EXACT_GAP
    assert cert.dual_bound <= cert.objective + EXACT_GAP * max(1.0, cert.objective)
    assert cert.solver == "CLARABEL"


def test_objective_and_constraints_independently(solved, retrieval):
    data, res = solved
    X, pairs, labels = retrieval
    M = res.M
    obj, dist = _paper_objective(X, pairs, labels, M, data.hard, data.lam)
    assert _rel(res.objective, obj) <= 1e-10
    # cannot-links d >= 1, A PSD (diagonal: a >= 0, no off-diagonal entry)
    assert dist[labels == -1].min() >= 1 - 1e-7
    assert np.linalg.eigvalsh(M)[0] >= -1e-9
    if data.diagonal:
        assert np.array_equal(M, np.diag(np.diag(M)))
        np.testing.assert_array_equal(res.info["a"], np.diag(M))


def test_dual_bound_is_the_lagrangian_of_the_duals(solved, retrieval):
    """g(theta, beta) = sum theta - sum beta - ||Pi_+(Y)||^2 / (2 lam),
    recomputed from the solver's duals with explicit outer products."""
    data, res = solved
    X, pairs, labels = retrieval
    theta = res.info["theta"]
    assert np.all(theta >= -1e-9)
    diff = X[pairs[:, 0]] - X[pairs[:, 1]]
    w = np.zeros(len(pairs))
    w[labels == -1] = theta
    if data.hard:
        w[labels == 1] = -1.0
        lin = theta.sum()
    else:
        beta = res.info["beta"]
        assert np.all(beta >= -1e-9) and np.all(beta <= 1 + 1e-9)
        w[labels == 1] = -beta
        lin = theta.sum() - beta.sum()
    if data.diagonal:
        Y = (diff ** 2).T @ w
        pos = np.maximum(Y, 0)
        A = np.diag(pos) / data.lam
        sq = pos @ pos
    else:
        Y = sum(wp * np.outer(p, p) for wp, p in zip(w, diff))
        ev, V = np.linalg.eigh(Y)
        A = (V * np.maximum(ev, 0)) @ V.T / data.lam
        sq = np.sum(np.maximum(ev, 0) ** 2)
    g = lin - sq / (2 * data.lam)
    assert _rel(g, res.objective) <= EXACT_GAP
    # representer form (Eq. 3 / 5): the optimum is Pi_+(Y(u)) / lam
    scale = max(1.0, np.linalg.norm(res.M))
    assert np.linalg.norm(A - res.M) <= MATRIX_RTOL * scale


def test_any_multipliers_give_a_lower_bound(solved):
    data, res = solved
    rng = np.random.RandomState(0)
    for _ in range(20):
        u = data.clip(rng.exponential(size=data.n_pairs))
        assert data.dual_bound(u) <= res.objective + 1e-9 * max(1.0, res.objective)


@pytest.mark.parametrize("diagonal", [False, True], ids=["full", "diagonal"])
def test_theorem1_slack_equals_hinge(retrieval, diagonal):
    """Eq. 4 (slacks) == Eq. 6 (hinge): same optimum, eps = max(0, d - 1)."""
    X, pairs, labels = retrieval
    data = ConstraintData.from_pairs(X, pairs, labels, hard=False, diagonal=diagonal,
                                     lam=0.3)
    slack_model = ConstraintDMLModel(data, "slack")
    slack = slack_model.solve()
    hinge = solve_constraint_exact(data, form="hinge")
    assert slack.certificate.passed and hinge.certificate.passed
    assert _rel(slack.objective, hinge.objective) <= EXACT_GAP
    # the strongly convex optimum is unique: same matrix
    assert np.linalg.norm(slack.M - hinge.M) <= MATRIX_RTOL * max(
        1.0, np.linalg.norm(hinge.M))
    # eps* = max(0, d* - 1) on the must-links (the proof of Theorem 1)
    eps = slack_model.eps.value
    d_must = data.distances(slack.M)[data.must]
    np.testing.assert_allclose(eps, np.maximum(d_must - 1.0, 0.0), atol=1e-6)
    # and Eq. 4's value is its slack sum plus the regulariser
    val = eps.sum() + 0.5 * data.lam * np.sum(slack.M ** 2)
    assert _rel(val, slack.objective) <= 1e-6


def test_hinge_form_differs_from_eq1(retrieval):
    """The must-link term matters: Eq. 1 and Eq. 4 have different optima."""
    X, pairs, labels = retrieval
    eq1 = solve_constraint_exact(ConstraintData.from_pairs(X, pairs, labels, hard=True))
    eq4 = solve_constraint_exact(ConstraintData.from_pairs(X, pairs, labels, hard=False))
    assert eq4.objective < eq1.objective - 1e-3


def test_diagonal_is_a_restriction_and_exact_on_axis_aligned_data():
    """Eq. 10 >= Eq. 1; equal when every difference vector is axis-aligned
    (then the full optimum is diagonal)."""
    rng = np.random.RandomState(4)
    X, pairs, labels = query_gallery(10, 6, 3, 4, random_state=4)
    full = solve_constraint_exact(ConstraintData.from_pairs(X, pairs, labels))
    diag = solve_constraint_exact(ConstraintData.from_pairs(X, pairs, labels,
                                                            diagonal=True))
    assert diag.objective >= full.objective - EXACT_GAP * full.objective
    # axis-aligned pairs: x_j = x_i + t e_k
    d, P = 3, 12
    base = rng.randn(P, d)
    step = np.zeros((P, d))
    step[np.arange(P), rng.randint(0, d, P)] = rng.uniform(0.5, 2.0, P)
    Xa = np.vstack([base, base + step])
    pa = np.stack([np.arange(P), P + np.arange(P)], axis=1)
    la = np.where(np.arange(P) % 3 == 0, 1, -1)
    f = solve_constraint_exact(ConstraintData.from_pairs(Xa, pa, la, lam=0.4))
    g = solve_constraint_exact(ConstraintData.from_pairs(Xa, pa, la, lam=0.4,
                                                         diagonal=True))
    assert _rel(f.objective, g.objective) <= EXACT_GAP
    off = f.M - np.diag(np.diag(f.M))
    assert np.abs(off).max() <= MATRIX_RTOL * max(1.0, np.abs(f.M).max())


def test_lam_is_a_dpp_parameter(retrieval):
    X, pairs, labels = retrieval
    data = ConstraintData.from_pairs(X, pairs, labels, hard=False, lam=1.0)
    model = ConstraintDMLModel(data)
    assert model.problem.is_dpp()
    assert model.lam.value == 1.0
    first = model.solve()
    model.set_lam(0.25)
    again = model.solve()
    fresh = solve_constraint_exact(data.with_lam(0.25))
    assert _rel(again.objective, fresh.objective) <= EXACT_GAP
    assert abs(again.objective - first.objective) > 1e-3
    with pytest.raises(ValueError, match="^lam:"):
        model.set_lam(-1.0)
    assert model.lam.value == 0.25


# ---------------------------------------------------------------------------
# lam = 0
# ---------------------------------------------------------------------------

# must-links along e1 only; cannot-links (0, 2) along e1 and others off it
_X0 = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0], [0, 1, 1], [1, 2, 0],
                [0.5, 0.3, 2.0], [3, 1, 1]], float)
_P0 = np.array([[0, 1], [1, 2], [0, 3], [0, 4], [1, 5], [2, 6], [0, 5], [0, 2]])
_L0 = np.array([1, 1, -1, -1, -1, -1, -1, -1])


@pytest.mark.parametrize("diagonal", [False, True], ids=["full", "diagonal"])
def test_lam_zero_eq1_is_attained(diagonal):
    """Eq. 1 with lam = 0: sum_S d_A = 2 A_11 with A_11 >= 1/4 forced by the
    cannot-link (0, 2) = -2 e1; the other cannot-links are met for free in
    directions no must-link sees.  Optimum 2 * 1/4 = 0.5, attained."""
    data = ConstraintData.from_pairs(_X0, _P0, _L0, hard=True, diagonal=diagonal,
                                     lam=0.0)
    res = solve_constraint_exact(data)
    assert res.certificate.passed
    assert abs(res.objective - 0.5) <= EXACT_GAP
    assert res.certificate.dual_bound == pytest.approx(0.5, abs=1e-7)
    # the optimum is not unique: the optimal face is unbounded (any extra
    # weight off e1 keeps the value); every returned point is feasible
    assert data.violation(res.M)[0] <= 1e-7


def test_lam_zero_hinge_and_no_must_links():
    data = ConstraintData.from_pairs(_X0, _P0, _L0, hard=False, lam=0.0)
    res = solve_constraint_exact(data)
    assert res.certificate.passed and abs(res.objective) <= 1e-7
    only_cannot = ConstraintData.from_pairs(_X0, _P0[2:], _L0[2:], lam=0.0)
    res = solve_constraint_exact(only_cannot)
    assert res.certificate.passed and abs(res.objective) <= 1e-7


def test_lam_zero_bound_repair():
    """With lam = 0, g is finite only when Y(u) <= 0: multipliers that break
    it are repaired (scaled / zeroed), and the bound stays valid."""
    data = ConstraintData.from_pairs(_X0, _P0, _L0, hard=True, lam=0.0)
    u = data.multipliers(np.full(len(data.cannot), 0.5))
    bound = data.dual_bound(u)
    assert np.isfinite(bound)
    assert bound <= 0.5 + 1e-12


# ---------------------------------------------------------------------------
# Infeasibility
# ---------------------------------------------------------------------------


def _infeasible(hard, diagonal, lam):
    rng = np.random.RandomState(0)
    X = rng.randn(8, 3)
    X[5] = X[2]  # the query (row 2) is identical to an irrelevant item (row 5)
    pairs = np.array([[0, 1], [0, 2], [2, 5], [3, 4], [6, 7], [1, 3]])
    labels = np.array([1, -1, -1, 1, -1, -1])
    return ConstraintData.from_pairs(X, pairs, labels, hard=hard, diagonal=diagonal,
                                     lam=lam)


@pytest.mark.parametrize("lam", [1.0, 0.0], ids=["lam1", "lam0"])
@pytest.mark.parametrize(("hard", "diagonal"), VARIANTS, ids=IDS)
def test_infeasible_precheck(hard, diagonal, lam):
    data = _infeasible(hard, diagonal, lam)
    np.testing.assert_array_equal(data.infeasible_pairs(), [2])
    with pytest.raises(InfeasibleError, match=re.escape("row 2 (2, 5)")) as info:
        solve_constraint_exact(data)
    assert "is infeasible" in str(info.value)
    assert info.value.status == "infeasible"


@pytest.mark.parametrize("solver", ["CLARABEL", "SCS"])
@pytest.mark.parametrize("lam", [1.0, 0.0], ids=["lam1", "lam0"])
@pytest.mark.parametrize(("hard", "diagonal"), VARIANTS, ids=IDS)
def test_infeasible_certified_by_the_conic_solver(hard, diagonal, lam, solver):
    """Pre-check off: the solver's Farkas ray names the offending pair."""
    data = _infeasible(hard, diagonal, lam)
    with pytest.raises(InfeasibleError) as info:
        solve_constraint_exact(data, precheck=False, solvers=(solver,))
    msg = str(info.value)
    assert f"{solver} certified the problem infeasible" in msg
    assert "Farkas ray is supported on row 2 (2, 5)." in msg
    assert "The exact test agrees" in msg


# Found by a randomised sweep: d = 1, a cannot-link of length 0.01, lam = 50.
# The optimum is A = 1 / 0.01^2, objective 2.5e9; Clarabel (0.11) claims
# infeasibility, SCS solves it, and so does the fast solver.
_XS = np.array([[0.08], [-0.04], [-0.13], [0.07], [-0.11]])
_PS = np.array([[0, 3], [1, 3], [0, 1], [3, 0], [0, 1]])
_LS = np.array([-1, 1, 1, 1, 1])


@pytest.mark.filterwarnings("ignore:Solution may be inaccurate")
def test_numerical_infeasibility_claim_on_a_feasible_problem():
    """A provably feasible problem is never reported infeasible: the next
    solver is tried, and a SolverError (not InfeasibleError) is raised when
    none is left."""
    data = ConstraintData.from_pairs(_XS, _PS, _LS, lam=50.0)
    assert len(data.infeasible_pairs()) == 0
    try:
        only_clarabel = solve_constraint_exact(data, solvers=("CLARABEL",))
    except InfeasibleError:  # pragma: no cover - the bug this test guards
        pytest.fail("a feasible problem was reported infeasible")
    except SolverError as exc:
        assert "The problem is feasible" in str(exc)
        res = solve_constraint_exact(data)
        assert res.certificate.solver == "SCS"
        assert res.info["attempts"][0]["status"] == "infeasible"
    else:  # a Clarabel version that solves it is fine too
        res = only_clarabel
    assert res.certificate.passed
    a = 1.0 / 0.01 ** 2  # the cannot-link binds: d = 0.01^2 A = 1
    must = (_XS[_PS[1:, 0]] - _XS[_PS[1:, 1]]).ravel() ** 2
    assert _rel(res.objective, must.sum() * a + 25.0 * a * a) <= 1e-6


def test_feasible_with_tiny_but_nonzero_difference():
    """Nearly identical points are feasible (A = t I with t = 1/||phi||^2)."""
    X = np.array([[0.0, 0.0], [1e-3, 0.0], [1.0, 1.0], [0.0, 1.0]])
    pairs = np.array([[0, 1], [0, 2], [0, 3]])
    data = ConstraintData.from_pairs(X, pairs, [-1, 1, -1], lam=1e-6)
    res = solve_constraint_exact(data)
    assert res.certificate.passed
    assert data.distances(res.M)[0] >= 1 - 1e-7


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------


def _bad_cases():
    X = np.arange(12.0).reshape(6, 2) ** 1.5
    p = np.array([[0, 1], [2, 3], [4, 5], [0, 5]])
    y = np.array([1, -1, -1, 1])
    Xnan = X.copy()
    Xnan[1, 1] = np.nan
    Xdup = X.copy()
    Xdup[1] = Xdup[0]
    Xtiny = np.zeros((3, 2))
    Xtiny[1, 0] = 1e-170
    Xtiny[2] = 1.0
    return {
        "nan_X": ((Xnan, p, y), {}, "X", ValueError),
        "X_1d": ((X[:, 0], p, y), {}, "X", ValueError),
        "pairs_width": ((X, p[:, :1], y), {}, "pairs", ValueError),
        "pairs_float": ((X, p + 0.5, y), {}, "pairs", ValueError),
        "pairs_range": ((X, p + 3, y), {}, "pairs", ValueError),
        "pairs_negative": ((X, p - 1, y), {}, "pairs", ValueError),
        "pairs_empty": ((X, np.empty((0, 2), int), y[:0]), {}, "pairs", ValueError),
        "labels_values": ((X, p, [1, 0, -1, 1]), {}, "labels", ValueError),
        "labels_bool": ((X, p, y > 0), {}, "labels", ValueError),
        "labels_strings": ((X, p, ["a"] * 4), {}, "labels", ValueError),
        "labels_length": ((X, p, y[:3]), {}, "labels", ValueError),
        "no_cannot_link": ((X, p, np.ones(4, int)), {}, "labels", ValueError),
        "zero_must_link": ((Xdup, p, y), {}, "pairs", ValueError),
        "underflow": ((Xtiny, np.array([[0, 1], [0, 2]]), [-1, -1]), {}, "X",
                      ValueError),
        "negative_lam": ((X, p, y), {"lam": -0.1}, "lam", ValueError),
        "nan_lam": ((X, p, y), {"lam": float("nan")}, "lam", ValueError),
        "hard_not_bool": ((X, p, y), {"hard": 1}, "hard", TypeError),
        "diagonal_not_bool": ((X, p, y), {"diagonal": "yes"}, "diagonal", TypeError),
    }


@pytest.mark.parametrize("case", sorted(_bad_cases()))
def test_bad_input_names_the_argument(case):
    args, kwargs, name, exc = _bad_cases()[case]
    with pytest.raises(exc, match=rf"^{re.escape(name)}"):
        ConstraintData.from_pairs(*args, **kwargs)


def test_bad_form_and_model_input(retrieval):
    X, pairs, labels = retrieval
    data = ConstraintData.from_pairs(X, pairs, labels, hard=False)
    with pytest.raises(ValueError, match="^form:"):
        solve_constraint_exact(data, form="epigraph")
    with pytest.raises(ValueError, match="^A:"):
        data.objective(np.eye(3))

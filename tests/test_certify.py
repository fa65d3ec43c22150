"""cvxmetric.certify: a valid bound for any CVXPY problem, never above the optimum.

Every instance here has an optimum known in closed form, one for each cone
type Clarabel and SCS accept (CVXPY hands SCS a generalized power cone as
3-d ones).  The bound must
never pass it (whatever the solver, its accuracy, or a perturbed dual) and
must be tight when Clarabel solves to its tight tolerances.
"""

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cvxmetric
from cvxmetric._certify import _KEPT, conic_solve
from cvxmetric._exact import solver_options

#: How far a bound may pass the optimum: the rounding of the bound's own
#: float64 arithmetic, relative to max(1, |optimum|).
ROUNDING = 1e-9
#: Relative gap of the bound when Clarabel solves to tight tolerances.
TIGHT = 1e-8


def _lp_box(rng, n=6):
    c = rng.standard_normal(n)
    lo, hi = -rng.uniform(0.5, 2, n), rng.uniform(0.5, 2, n)
    x = cp.Variable(n)
    problem = cp.Problem(cp.Minimize(c @ x), [x >= lo, x <= hi])
    return problem, float(np.minimum(c * lo, c * hi).sum())


def _lp_simplex(rng, n=6):
    c = rng.standard_normal(n)
    x = cp.Variable(n, nonneg=True)
    return cp.Problem(cp.Minimize(c @ x), [cp.sum(x) == 1]), float(c.min())


def _qp(rng, n=6):
    a = rng.standard_normal(n)
    x = cp.Variable(n)
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(x - a)), [x >= 0])
    return problem, 0.5 * float(np.sum(np.minimum(a, 0) ** 2))


def _socp(rng, n=6):
    c, rho = rng.standard_normal(n), rng.uniform(0.5, 3)
    x = cp.Variable(n)
    return (cp.Problem(cp.Minimize(c @ x), [cp.norm(x) <= rho]),
            -rho * float(np.linalg.norm(c)))


def _sdp(rng, n=4):
    C = rng.standard_normal((n, n))
    C = C + C.T
    X = cp.Variable((n, n), PSD=True)
    return (cp.Problem(cp.Minimize(cp.trace(C @ X)), [cp.trace(X) == 1]),
            float(np.linalg.eigvalsh(C)[0]))


def _sdp_max(rng, n=4):
    C = rng.standard_normal((n, n))
    C = C + C.T
    X = cp.Variable((n, n), PSD=True)
    return (cp.Problem(cp.Maximize(cp.trace(C @ X)), [cp.trace(X) <= 2]),
            2 * max(float(np.linalg.eigvalsh(C)[-1]), 0.0))


def _exp(rng, n=5):
    q = rng.uniform(0.2, 2, n)
    x = cp.Variable(n)
    problem = cp.Problem(cp.Minimize(cp.sum(cp.rel_entr(x, q))), [cp.sum(x) == 1])
    return problem, -float(np.log(q.sum()))


def _logdet(rng, n=3):
    G = rng.standard_normal((n, n))
    C = G @ G.T + n * np.eye(n)
    X = cp.Variable((n, n), PSD=True)
    problem = cp.Problem(cp.Maximize(cp.log_det(X)), [cp.trace(C @ X) <= n])
    return problem, -float(np.linalg.slogdet(C)[1])


def _power(rng, n=4):
    a = rng.uniform(0.5, 2, n)
    x = cp.Variable(n)
    problem = cp.Problem(cp.Minimize(cp.sum(cp.power(cp.pos(x), 1.5)) - a @ x),
                         [x >= -1, x <= 10])
    return problem, -float(np.sum(4 * a ** 3 / 27))


def _power_nd(rng, n=3):
    alpha = rng.dirichlet(np.ones(n))
    x, z = cp.Variable(n, pos=True), cp.Variable()
    problem = cp.Problem(cp.Maximize(z), [cp.constraints.PowConeND(x, z, alpha),
                                          cp.sum(x) <= 3])
    return problem, float(np.prod((3 * alpha) ** alpha))


INSTANCES = {"power_nd": _power_nd, "lp_box": _lp_box, "lp_simplex": _lp_simplex, "qp": _qp,
             "socp": _socp, "sdp": _sdp, "sdp_max": _sdp_max, "exp": _exp,
             "logdet": _logdet, "power": _power}


def _valid(cert, optimum):
    """The bound is on the right side of the optimum (up to rounding)."""
    slack = ROUNDING * max(1.0, abs(optimum))
    if cert.sense == "minimize":
        return cert.dual_bound <= optimum + slack
    return cert.dual_bound >= optimum - slack


@pytest.mark.parametrize("name", sorted(INSTANCES))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tight_and_valid_with_clarabel(name, seed):
    problem, optimum = INSTANCES[name](np.random.default_rng(seed))
    conic_solve(problem, "CLARABEL", **solver_options("CLARABEL", 1e-10))
    cert = cvxmetric.certify(problem)
    assert _valid(cert, optimum)
    assert abs(cert.dual_bound - optimum) <= TIGHT * max(1.0, abs(optimum))
    assert cert.passed, cert.message
    assert cert.dual_source.startswith("CLARABEL")
    assert np.isfinite(cert.radius)


@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_valid_after_loose_scs(name):
    problem, optimum = INSTANCES[name](np.random.default_rng(3))
    conic_solve(problem, "SCS", eps_abs=1e-3, eps_rel=1e-3)
    cert = cvxmetric.certify(problem)
    assert cert.dual_source.startswith("SCS")
    assert _valid(cert, optimum)


@pytest.mark.parametrize("solver, opts", [("CLARABEL", {"max_iter": 5}),
                                          ("SCS", {"max_iters": 5})])
@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_valid_after_five_iterations(name, solver, opts):
    problem, optimum = INSTANCES[name](np.random.default_rng(4))
    conic_solve(problem, solver, **opts)
    if any(v.value is None for v in problem.variables()):
        pytest.skip(f"{solver} returned no point after 5 iterations")
    cert = cvxmetric.certify(problem)
    assert _valid(cert, optimum)


@pytest.mark.parametrize("name", sorted(INSTANCES))
@pytest.mark.parametrize("seed", [0, 1])
def test_valid_with_a_perturbed_dual(name, seed):
    rng = np.random.default_rng(10 + seed)
    problem, optimum = INSTANCES[name](rng)
    conic_solve(problem, "CLARABEL")
    form, x, y, snap = _KEPT[problem]
    for size in (1e-6, 1e-3, 1e-1):
        noisy = y + size * (1 + np.abs(y)) * rng.standard_normal(y.size)
        _KEPT[problem] = (form, x, noisy, snap)
        assert _valid(cvxmetric.certify(problem), optimum)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 7), log_scale=st.floats(-3, 3), seed=st.integers(0, 2**31 - 1),
       kind=st.sampled_from(["lp_box", "socp", "sdp", "sdp_max", "qp"]))
def test_valid_over_sizes_and_scales(n, log_scale, seed, kind):
    scale = 10.0 ** log_scale
    problem, optimum = INSTANCES[kind](np.random.default_rng(seed), n)
    problem = cp.Problem(type(problem.objective)(scale * problem.objective.args[0]),
                         problem.constraints)
    optimum *= scale
    conic_solve(problem, "CLARABEL", **solver_options("CLARABEL", 1e-10))
    cert = cvxmetric.certify(problem)
    assert _valid(cert, optimum)
    assert abs(cert.dual_bound - optimum) <= 1e-7 * max(1.0, abs(optimum))


def test_plain_solve_gets_a_computed_dual():
    problem, optimum = _sdp(np.random.default_rng(5))
    problem.solve(solver="SCS")
    cert = cvxmetric.certify(problem)
    assert cert.dual_source.startswith("computed by Clarabel")
    assert _valid(cert, optimum)


def test_kept_dual_is_dropped_when_values_change():
    problem, _ = _sdp(np.random.default_rng(6))
    conic_solve(problem, "CLARABEL")
    X = problem.variables()[0]
    X.value = X.value + 1e-3 * np.eye(X.shape[0])
    assert cvxmetric.certify(problem).dual_source.startswith("computed")


def test_no_bound_without_a_box_then_radius():
    # min |x|^1.5 - x: the level set is bounded, but not by linear consequences
    x = cp.Variable(3)
    problem = cp.Problem(cp.Minimize(cp.sum(cp.power(cp.abs(x), 1.5)) - cp.sum(x)))
    conic_solve(problem, "CLARABEL")
    cert = cvxmetric.certify(problem)
    assert not cert.passed and cert.dual_bound == -np.inf
    assert "radius=" in cert.message
    cert = cvxmetric.certify(problem, radius=5.0)
    assert cert.passed and cert.dual_bound <= -3 * 4 / 27 + ROUNDING
    assert "radius given" in cert.radius_source


def test_an_infeasible_point_does_not_pass():
    problem, _ = _lp_box(np.random.default_rng(7))
    conic_solve(problem, "CLARABEL")
    x = problem.variables()[0]
    x.value = x.value + 0.5
    cert = cvxmetric.certify(problem)
    assert cert.max_violation > 0.1 and not cert.passed


@pytest.mark.parametrize("bad, match", [
    (lambda p: 3, "problem: expected a cvxpy.Problem"),
    (lambda p: cp.Problem(cp.Minimize(cp.sum(cp.Variable(2)))), "no value"),
])
def test_bad_problem(bad, match):
    problem, _ = _lp_box(np.random.default_rng(8))
    with pytest.raises(ValueError, match=match):
        cvxmetric.certify(bad(problem))


@pytest.mark.parametrize("radius", [0.0, -1.0, np.inf, np.nan])
def test_bad_radius(radius):
    problem, _ = _lp_box(np.random.default_rng(9))
    conic_solve(problem, "CLARABEL")
    with pytest.raises(ValueError, match="radius"):
        cvxmetric.certify(problem, radius=radius)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 6), log_noise=st.floats(-9, 0), seed=st.integers(0, 2**31 - 1),
       kind=st.sampled_from(sorted(INSTANCES)))
def test_valid_with_any_dual(n, log_noise, seed, kind):
    """Whatever dual the certificate is handed, its bound stays valid."""
    rng = np.random.default_rng(seed)
    builder = INSTANCES[kind]
    problem, optimum = builder(rng, n) if kind not in ("exp", "logdet", "power",
                                                       "power_nd") else builder(rng)
    conic_solve(problem, "CLARABEL")
    form, x, y, snap = _KEPT[problem]
    noisy = y + 10.0 ** log_noise * (1 + np.abs(y)) * rng.standard_normal(y.size)
    _KEPT[problem] = (form, x, noisy, snap)
    assert _valid(cvxmetric.certify(problem), optimum)

"""Qwise exact path: Eq. 8 / Eq. 11 as CVXPY problems with certificates.

Objective comparisons use ``TOLERANCES["exact"]`` / ``EXACT_GAP`` from
:mod:`cvxmetric._tolerances`.  Independent CVXPY models (written here, not
taken from the library) check the reductions of Eq. 7.
"""

import dataclasses
import warnings

import cvxpy as cp
import numpy as np
import pytest
from cvxpy.reductions.solvers.solving_chain import SolvingChain

from cvxmetric._exact import solve_certified
from cvxmetric._tolerances import EXACT_GAP, REFERENCE_AGREEMENT, TOLERANCES
from cvxmetric.constraints import LabeledPairs, Quadruplets
from cvxmetric.qwise import QwiseData, QwiseModel, solve_exact
from cvxmetric.qwise.fast import warm_start
from cvxmetric.result import (
    Certificate,
    CertificateError,
    InfeasibleError,
    SolverError,
    SolverResult,
    Status,
    UnboundedError,
)

EXACT = TOLERANCES["exact"]
#: PSD feasibility of an exact solution (from the task statement).
MIN_EIG = -1e-7

# tight options for the independent reference models written in this file
_CLARABEL = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10,
             "max_iter": 400}


# ---------------------------------------------------------------------------
# independent reference models
# ---------------------------------------------------------------------------


def _omega(regularizer, M, A_S):
    if regularizer == "trace":
        return cp.trace(M)
    if regularizer == "frobenius":
        return 0.5 * cp.sum_squares(M)
    return cp.trace(A_S @ M)


def _D(M, X, i, j):
    """Vector of ``(x_i - x_j)^T M (x_i - x_j)`` written with quad_form."""
    return cp.hstack([cp.quad_form(X[a] - X[b], M) if a != b else cp.Constant(0.0)
                      for a, b in zip(i, j)])


def triplet_model(X, T, delta, C, regularizer, A_S):
    """min Omega(M) + C sum xi  s.t.  D_ik >= D_ij + delta - xi, xi >= 0, M PSD."""
    d = X.shape[1]
    M = cp.Variable((d, d), PSD=True)
    xi = cp.Variable(len(T))
    i, j, k = T.T
    cons = [_D(M, X, i, k) >= _D(M, X, i, j) + delta - xi, xi >= 0]
    prob = cp.Problem(cp.Minimize(_omega(regularizer, M, A_S) + C * cp.sum(xi)), cons)
    prob.solve(solver="CLARABEL", **_CLARABEL)
    assert prob.status == cp.OPTIMAL
    return prob.value, M.value


def hinge_model(X, quad_idx, delta, weights, regularizer, A_S):
    """min Omega(M) + sum_q w_q [delta_q + D_ij - D_kl]_+ over PSD M."""
    d = X.shape[1]
    M = cp.Variable((d, d), PSD=True)
    i, j, k, l = np.asarray(quad_idx).T
    loss = weights @ cp.pos(delta + _D(M, X, i, j) - _D(M, X, k, l))
    prob = cp.Problem(cp.Minimize(_omega(regularizer, M, A_S) + loss))
    prob.solve(solver="CLARABEL", **_CLARABEL)
    assert prob.status == cp.OPTIMAL
    return prob.value, M.value


def fake_init(M):
    """A warm start carrying only ``M`` (no multipliers)."""
    cert = Certificate(np.nan, -np.inf, np.inf, np.inf, 0.0, 0.0, "test")
    return SolverResult(M=M, status=Status.OPTIMAL, objective=np.nan, n_iter=0,
                        certificate=cert, method="test", info={})


# ---------------------------------------------------------------------------
# Eq. 11 reduces to Eq. 8
# ---------------------------------------------------------------------------


def test_eq11_with_Cp_zero_is_eq8(quads, pairs, u_l, regularizer, A_S, make_data,
                                  exact_eq8, rel_gap):
    u, l = u_l
    d11 = make_data(quads, pairs, regularizer=regularizer, A_S=A_S, C_p=0.0,
                    u=u, l=l)
    r11 = solve_exact(d11, reduce=False)
    assert r11.certificate.passed and exact_eq8.certificate.passed
    assert rel_gap(r11.objective, exact_eq8.objective) <= EXACT
    # the objectives coincide as functions, not only at the optimum
    d8 = exact_eq8.info["model"].data
    for M in (r11.M, exact_eq8.M, np.eye(quads.X.shape[1])):
        assert d11.objective(M) == pytest.approx(d8.objective(M), rel=1e-14)


def test_eq11_with_empty_pairs_is_eq8(quads, u_l, regularizer, A_S, make_data,
                                      exact_eq8, rel_gap):
    u, l = u_l
    X = quads.X
    # no pairs at all (bounds and C_p given but unused)
    d_none = make_data(quads, None, regularizer=regularizer, A_S=A_S, C_p=5.0,
                       u=u, l=l)
    # an empty S and D (built directly: create() refuses empty sets)
    empty = LabeledPairs(X, np.zeros((0, 2), np.intp), np.zeros(0, np.int8))
    d_empty = make_data(quads, empty, regularizer=regularizer, A_S=A_S, C_p=5.0,
                        u=u, l=l)
    assert d_empty.n_constraints == len(quads)
    model = QwiseModel(d_empty)
    assert set(model.constraints) == {"quadruplets", "psd"}
    assert model.xi_S is None and model.xi_D is None
    for data in (d_none, d_empty):
        r = solve_exact(data, reduce=False)
        assert r.certificate.passed
        assert rel_gap(r.objective, exact_eq8.objective) <= EXACT


# ---------------------------------------------------------------------------
# the reductions of Eq. 7 give identical optima
# ---------------------------------------------------------------------------


def test_triplet_reduction_same_optimum(triplets, regularizer, A_S, make_data,
                                        rel_gap):
    delta, C = 0.8, 0.7
    data = make_data(triplets.to_quadruplets(delta), regularizer=regularizer,
                     A_S=A_S, C_q=C)
    r = solve_exact(data, reduce=False)
    assert r.certificate.passed
    ref, M_ref = triplet_model(triplets.X, triplets.indices, delta, C,
                               regularizer, A_S)
    assert rel_gap(r.objective, ref) <= EXACT
    # the library's objective at the reference point is the reference value
    assert rel_gap(data.objective(M_ref), ref) <= EXACT


def test_pair_reduction_Cq_zero(quads, pairs, u_l, regularizer, A_S, make_data,
                                rel_gap):
    """Eq. 11 with C_q = 0 is Eq. 8 on the reduced pairs with C_q := C_p."""
    u, l = u_l
    c = 0.6
    d11 = make_data(quads, pairs, regularizer=regularizer, A_S=A_S, C_q=0.0,
                    C_p=c, u=u, l=l)
    d8 = make_data(pairs.to_quadruplets(u, l), regularizer=regularizer, A_S=A_S,
                   C_q=c)
    r11 = solve_exact(d11, reduce=False)
    r8 = solve_exact(d8, reduce=False)
    assert r11.certificate.passed and r8.certificate.passed
    assert rel_gap(r11.objective, r8.objective) <= EXACT


def test_pair_reduction_weighted(quads, pairs, u_l, regularizer, A_S, exact_eq11,
                                 rel_gap):
    """Eq. 11 is the quadruplet hinge problem over N + reduced(S, D) with
    per-constraint weights (C_q on N, C_p on the pairs)."""
    u, l = u_l
    data = exact_eq11.info["model"].data
    red = pairs.to_quadruplets(u, l)
    idx = np.vstack([quads.indices, red.indices])
    delta = np.concatenate([quads.delta, red.delta])
    w = np.concatenate([np.full(len(quads), data.C_q), np.full(len(red), data.C_p)])
    ref, M_ref = hinge_model(quads.X, idx, delta, w, regularizer, A_S)
    assert rel_gap(exact_eq11.objective, ref) <= EXACT
    assert rel_gap(data.objective(M_ref), ref) <= EXACT


# ---------------------------------------------------------------------------
# certificates of the exact solutions
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["eq8", "eq11"])
def test_certificate(which, exact_eq8, exact_eq11, rel_gap):
    r = exact_eq8 if which == "eq8" else exact_eq11
    model = r.info["model"]
    cert = r.certificate
    assert r.method == "exact" and r.status == Status.OPTIMAL
    assert cert.passed
    assert cert.rel_gap <= EXACT_GAP
    assert cert.min_eig >= MIN_EIG
    assert cert.solver == "CLARABEL" and cert.tolerances
    assert np.isfinite(cert.dual_bound)
    assert cert.dual_bound <= cert.objective + EXACT_GAP * max(1, abs(cert.objective))
    # the objective is recomputed from M, and agrees with CVXPY's value
    assert r.objective == cert.objective
    assert r.objective == pytest.approx(model.data.objective(r.M), rel=1e-12)
    assert rel_gap(r.objective, model.problem.value) <= 1e-6
    np.testing.assert_array_equal(r.M, r.M.T)


@pytest.mark.parametrize("which", ["eq8", "eq11"])
def test_slacks_are_hinges(which, exact_eq8, exact_eq11):
    """At the optimum the slacks equal the hinge values and the multipliers
    are in their box (the epigraph form is Eq. 11)."""
    r = exact_eq8 if which == "eq8" else exact_eq11
    model = r.info["model"]
    data = model.data
    hinge = np.maximum(data.margins(r.M), 0.0)
    slacks = [model.xi.value]
    if model.xi_S is not None:
        slacks.append(model.xi_S.value)
    if model.xi_D is not None:
        slacks.append(model.xi_D.value)
    scale = max(1.0, float(np.max(np.abs(data.delta_q))))
    np.testing.assert_allclose(np.concatenate(slacks), hinge, atol=1e-6 * scale)
    alpha = r.info["alpha"]
    assert alpha.shape == (data.n_constraints,)
    assert np.all(alpha >= -1e-7) and np.all(alpha <= data.c_q * (1 + 1e-7) + 1e-9)


def test_reduce_true_equals_false(eq11_data, exact_eq11, rel_gap):
    r = solve_exact(eq11_data, reduce=True, warm_start=warm_start)
    assert r.method == "exact" and r.certificate.passed
    assert r.certificate.rel_gap <= EXACT_GAP
    assert rel_gap(r.objective, exact_eq11.objective) <= EXACT
    assert r.info["reduced"] in (True, False)


@pytest.mark.parametrize("guess", ["exact", "zero", "large"])
def test_reduce_from_any_guess(eq11_data, exact_eq11, guess, rel_gap):
    """A wrong partition can only cost time: the result is still certified."""
    d = eq11_data.n_features
    init = {"exact": exact_eq11, "zero": fake_init(np.zeros((d, d))),
            "large": fake_init(100.0 * np.eye(d))}[guess]
    r = solve_exact(eq11_data, reduce=True, init=init)
    assert r.certificate.passed
    assert rel_gap(r.objective, exact_eq11.objective) <= EXACT


def test_reduce_when_no_constraint_depends_on_M(X, make_data, rel_gap):
    """Quadruplets comparing a distance with itself are refused by
    ``Quadruplets.create``; built directly (bypassing it) the solvers still
    return the right answer, M = 0."""
    idx = [[0, 1, 1, 0], [2, 3, 2, 3]]
    with pytest.raises(ValueError, match="^quadruplets: 2 quadruplet"):
        Quadruplets.create(X, idx, [1.0, -0.5])
    q = Quadruplets(X, np.array(idx), np.array([1.0, -0.5]))
    data = make_data(q, C_q=2.0)
    assert rel_gap(solve_exact(data, reduce=False).objective, 2.0) <= EXACT
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        r = solve_exact(data, reduce=True, warm_start=warm_start)
    assert r.certificate.passed and rel_gap(r.objective, 2.0) <= EXACT


def test_scs_agrees(quads, pairs, u_l, make_data, rel_gap):
    """The fallback solver reaches the same optimum (reference agreement)."""
    u, l = u_l
    data = make_data(quads, pairs, regularizer="trace", C_p=0.5, u=u, l=l)
    r_clarabel = QwiseModel(data).solve(solvers=("CLARABEL",))
    r_scs = QwiseModel(data).solve(solvers=("SCS",))
    assert r_scs.certificate.solver == "SCS" and r_scs.certificate.passed
    assert rel_gap(r_scs.objective, r_clarabel.objective) <= REFERENCE_AGREEMENT


# ---------------------------------------------------------------------------
# the model: reachable, DPP, parameter sweeps without recompiling
# ---------------------------------------------------------------------------


def test_model_is_reachable(eq11_data, quads, pairs):
    model = QwiseModel(eq11_data)
    d = eq11_data.n_features
    assert isinstance(model.problem, cp.Problem)
    assert isinstance(model.M, cp.Variable) and model.M.shape == (d, d)
    assert model.M.is_symmetric()
    assert model.xi.shape == (len(quads),)
    assert model.xi_S.shape == (len(pairs.similar),)
    assert model.xi_D.shape == (len(pairs.dissimilar),)
    assert set(model.constraints) == {"quadruplets", "similar", "dissimilar", "psd"}
    assert all(c in model.problem.constraints for c in model.constraints.values())
    assert set(model.params) == {"C_q", "C_p", "u", "l"}
    assert {p.name() for p in model.problem.parameters()} == {"C_q", "C_p", "u", "l"}
    assert {v.name() for v in model.problem.variables()} == {"M", "xi", "xi_S", "xi_D"}
    assert model.problem.is_dcp() and model.problem.is_dpp()
    r = model.solve()
    assert r.info["model"] is model
    assert model.M.value is not None
    np.testing.assert_allclose(r.M, model.M.value, atol=1e-12)


def test_model_without_pairs(eq8_data, quads):
    model = QwiseModel(eq8_data)
    assert set(model.params) == {"C_q"}
    assert set(model.constraints) == {"quadruplets", "psd"}
    assert model.xi_S is None and model.xi_D is None
    assert model.problem.is_dpp()


class _CountApply:
    """Counts full compilations (``SolvingChain.apply``) of any problem."""

    def __init__(self, monkeypatch):
        self.calls = 0
        original = SolvingChain.apply

        def apply(chain, *args, **kwargs):
            self.calls += 1
            return original(chain, *args, **kwargs)

        monkeypatch.setattr(SolvingChain, "apply", apply)


@pytest.mark.parametrize("params", [{"C_q": 2.5}, {"C_q": 0.3, "C_p": 2.0},
                                    {"u": 0.5, "l": 4.0}],
                         ids=["C_q", "C_q+C_p", "u+l"])
def test_dpp_sweep_does_not_recompile(eq11_data, params, make_data, quads, pairs,
                                      A_S, monkeypatch, rel_gap):
    counter = _CountApply(monkeypatch)
    model = QwiseModel(eq11_data)
    assert model.problem.is_dpp()
    first = model.solve(solvers=("CLARABEL",))
    assert counter.calls == 1
    cached = model.problem._cache.param_prog
    assert cached is not None

    model.set_params(**params)
    counter.calls = 0
    second = model.solve(solvers=("CLARABEL",))
    assert counter.calls == 0, "re-solve after set_params recompiled the problem"
    assert model.problem._cache.param_prog is cached
    assert second.certificate.passed

    # same optimum as a model built from scratch with the new values
    kw = dict(C_q=eq11_data.C_q, C_p=eq11_data.C_p, u=eq11_data.u, l=eq11_data.l)
    kw.update(params)
    fresh_data = make_data(quads, pairs, regularizer=eq11_data.regularizer,
                           A_S=A_S, **kw)
    fresh = QwiseModel(fresh_data).solve(solvers=("CLARABEL",))
    assert rel_gap(second.objective, fresh.objective) <= EXACT
    # the certificate is in the new units
    assert model.data.C_q == kw["C_q"] and model.data.u == kw["u"]
    assert second.objective == pytest.approx(fresh_data.objective(second.M),
                                             rel=1e-12)
    assert first.objective != pytest.approx(second.objective, rel=1e-3)


def test_set_params_unknown(eq8_data):
    model = QwiseModel(eq8_data)
    with pytest.raises(ValueError, match=r"^u\b"):
        model.set_params(u=1.0)
    with pytest.raises(ValueError, match=r"^C_x\b"):
        model.set_params(C_x=1.0)


def test_set_params_failure_leaves_model_unchanged(quads, pairs, u_l, make_data):
    u, l = u_l
    model = QwiseModel(make_data(quads, pairs, u=u, l=l))
    before = {k: p.value for k, p in model.params.items()}
    with pytest.raises(ValueError):
        model.set_params(u=l + 1.0)
    assert {k: p.value for k, p in model.params.items()} == before


# ---------------------------------------------------------------------------
# solve_certified: every exit path, on tiny hand-built problems
# ---------------------------------------------------------------------------


def _tiny():
    x = cp.Variable(name="x")
    return x, cp.Problem(cp.Minimize(x), [x >= 1.0])


def _cert(obj, rel_gap, solver):
    return Certificate(objective=obj, dual_bound=obj - rel_gap, gap=rel_gap,
                       rel_gap=rel_gap, max_violation=0.0, min_eig=0.0,
                       solver=solver)


def _never_called(*args):
    raise AssertionError("certify must not be called")


def test_solve_certified_ok():
    x, prob = _tiny()
    seen = []

    def certify(name, version, opts, times):
        seen.append(name)
        assert version and opts and set(times) >= {"solve", "total"}
        return _cert(float(x.value), 0.0, name)

    cert, info = solve_certified(prob, certify)
    assert seen == ["CLARABEL"] and cert.solver == "CLARABEL"
    assert info["status"] == Status.OPTIMAL
    assert abs(x.value - 1.0) < 1e-7


@pytest.mark.parametrize("kind", ["infeasible", "unbounded"])
def test_solve_certified_claims_need_confirmation(kind):
    """Both solvers agreeing, or the caller's own check, confirm a claim; one
    solver alone does not (a plain SolverError, never InfeasibleError)."""
    x = cp.Variable()
    if kind == "infeasible":
        prob, error = cp.Problem(cp.Minimize(x), [x >= 1.0, x <= 0.0]), InfeasibleError
    else:
        prob, error = cp.Problem(cp.Minimize(x), [x <= 1.0]), UnboundedError
    with pytest.raises(error) as info:
        solve_certified(prob, _never_called, solvers=("CLARABEL", "SCS"))
    assert info.value.status == kind
    assert "CLARABEL and SCS" in str(info.value)
    with pytest.raises(SolverError) as info:
        solve_certified(prob, _never_called, solvers=("SCS",))
    assert not isinstance(info.value, (InfeasibleError, UnboundedError))
    assert f"SCS claimed the problem {kind}" in str(info.value)
    with pytest.raises(error):
        solve_certified(prob, _never_called, solvers=("SCS",),
                        confirm=lambda k: k == kind)


def _solves_through_problem_solve(monkeypatch):
    """Route solve_certified's solves through ``Problem.solve`` (the package
    solves by ``conic_solve``, which keeps the conic dual), so that a test
    can stand a misbehaving solver in for it."""
    import cvxmetric._exact

    def via_solve(problem, solver, verbose=False, **opts):
        return problem.solve(solver=solver, verbose=verbose, **opts)

    monkeypatch.setattr(cvxmetric._exact, "conic_solve", via_solve)


@pytest.mark.parametrize("failure", ["claim", "raise"])
def test_solve_certified_false_claim_is_overruled(monkeypatch, failure):
    """A solver that misreports infeasibility (as Clarabel does on badly
    scaled feasible problems) is overruled by the next solver's certified
    point; a solver that raises is skipped the same way."""
    x = cp.Variable()
    prob = cp.Problem(cp.Minimize(x), [x >= 1.0])
    real_solve = cp.Problem.solve

    def fake_solve(self, *args, solver=None, **kwargs):
        if solver == "CLARABEL":
            if failure == "raise":
                raise ValueError("allocation error!")
            self._status = cp.INFEASIBLE
            return np.inf
        return real_solve(self, *args, solver=solver, **kwargs)

    monkeypatch.setattr(cp.Problem, "solve", fake_solve)
    _solves_through_problem_solve(monkeypatch)

    def certify(name, version, opts, times):
        return Certificate.from_bound(float(x.value), 1.0, max_violation=0.0,
                                      min_eig=0.0, solver=name)

    cert, info = solve_certified(prob, certify, solvers=("CLARABEL", "SCS"))
    assert cert.solver == "SCS" and cert.passed
    first = info["attempts"][0]
    if failure == "claim":
        assert first["status"] == cp.INFEASIBLE
    else:
        assert "ValueError: allocation error!" in first["error"]


def test_solve_certified_certificate_fails():
    x, prob = _tiny()
    gaps = {"CLARABEL": 0.5, "SCS": 0.1}
    calls = []

    def certify(name, version, opts, times):
        calls.append(name)
        return _cert(float(x.value), gaps[name], name)

    with pytest.raises(CertificateError) as info:
        solve_certified(prob, certify)
    assert calls == ["CLARABEL", "SCS"]
    exc = info.value
    assert isinstance(exc, SolverError)
    assert exc.status == Status.OPTIMAL_INACCURATE
    best_cert, best_info = exc.result
    assert best_cert.solver == "SCS" and best_cert.rel_gap == 0.1
    assert len(best_info["attempts"]) == 2
    assert "0.1" in str(exc)


def test_solve_certified_fallback_on_failed_certificate():
    x, prob = _tiny()

    def certify(name, version, opts, times):
        return _cert(float(x.value), 0.5 if name == "CLARABEL" else 0.0, name)

    cert, info = solve_certified(prob, certify)
    assert cert.solver == "SCS"
    assert [a["solver"] for a in info["attempts"]] == ["CLARABEL", "SCS"]


def test_solve_certified_all_solvers_raise(monkeypatch):
    x, prob = _tiny()

    def solve(*args, **kwargs):
        raise cp.error.SolverError(f"{kwargs.get('solver')} exploded")

    monkeypatch.setattr(prob, "solve", solve)
    _solves_through_problem_solve(monkeypatch)
    with pytest.raises(SolverError) as info:
        solve_certified(prob, _never_called)
    exc = info.value
    assert type(exc) is SolverError and exc.status == Status.SOLVER_ERROR
    assert "CLARABEL exploded" in str(exc) and "SCS exploded" in str(exc)


def test_solve_certified_fallback_on_raise(monkeypatch):
    x, prob = _tiny()
    original = prob.solve

    def solve(*args, **kwargs):
        if kwargs.get("solver") == "CLARABEL":
            raise cp.error.SolverError("CLARABEL exploded")
        return original(*args, **kwargs)

    monkeypatch.setattr(prob, "solve", solve)
    _solves_through_problem_solve(monkeypatch)
    cert, info = solve_certified(prob, lambda n, v, o, t: _cert(float(x.value), 0.0, n))
    assert cert.solver == "SCS"
    assert info["attempts"][0] == {"solver": "CLARABEL",
                                   "error": "SolverError: CLARABEL exploded"}


def test_solve_certified_no_solution_status(monkeypatch):
    """A solver returning neither a solution nor a certificate is skipped."""
    x, prob = _tiny()

    def solve(*args, **kwargs):
        prob._status = cp.USER_LIMIT

    monkeypatch.setattr(prob, "solve", solve)
    _solves_through_problem_solve(monkeypatch)
    with pytest.raises(SolverError) as info:
        solve_certified(prob, _never_called)
    assert type(info.value) is SolverError


# ---------------------------------------------------------------------------
# the dual bound: weak duality everywhere, tight at the solver's multipliers
# ---------------------------------------------------------------------------


def _random_alphas(data, n, seed):
    rng = np.random.RandomState(seed)
    c = data.c_q
    out = [np.zeros_like(c), c.copy(), 10.0 * c, -c]  # corners and clipping
    for _ in range(n):
        kind = rng.randint(3)
        a = rng.rand(len(c)) * c
        if kind == 1:
            a *= rng.rand() * 0.05  # small: no Loewner rescaling needed
        elif kind == 2:
            a = np.where(rng.rand(len(c)) < 0.5, 0.0, c)  # vertices of the box
        out.append(a)
    return out


def test_dual_bound_weak_duality(exact_eq11):
    data = exact_eq11.info["model"].data
    f = exact_eq11.objective
    tiny = EXACT_GAP * max(1.0, abs(f))
    bounds = [data.dual_bound(a) for a in _random_alphas(data, 40, 0)]
    assert all(b <= f + tiny for b in bounds), max(bounds) - f
    assert data.dual_bound(np.zeros(data.n_constraints)) == 0.0


def test_dual_bound_tight_at_solver_duals(exact_eq8, exact_eq11):
    for r in (exact_eq8, exact_eq11):
        data = r.info["model"].data
        alpha = r.info["alpha"]
        f = r.objective
        bound = data.dual_bound(alpha)
        assert bound <= f + EXACT_GAP * max(1.0, abs(f))
        assert bound >= f - EXACT_GAP * max(1.0, abs(f))
        # the certificate may repair alpha (best_dual_bound): never weaker
        assert r.certificate.dual_bound >= bound - 1e-12 * max(1.0, abs(bound))


def _with_singular_R(quads, pairs, u, l, R, **kw):
    """QwiseData whose 'similar' matrix is the singular ``R``.

    ``from_sets`` refuses a singular A_S (the minimum may not be attained);
    the dual-bound machinery still handles one, and is tested through a
    data object whose R is swapped after validation.
    """
    data = QwiseData.from_sets(quads, pairs, regularizer="similar", u=u, l=l, **kw)
    return dataclasses.replace(data, R=R)


def test_singular_A_S_rejected(quads, pairs, u_l):
    u, l = u_l
    d = quads.X.shape[1]
    v = np.array([1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="A_S: .*positive definite on the span"):
        QwiseData.from_sets(quads, pairs, regularizer="similar", u=u, l=l,
                            A_S=np.eye(d) - np.outer(v, v) / 2.0)


@pytest.mark.parametrize("case", ["trace", "frobenius", "similar-pd",
                                  "similar-singular"])
def test_dual_bound_below_every_primal_point(quads, pairs, u_l, case):
    """g(alpha) <= f(M) for every alpha and every PSD M (no solver involved),
    including the bisection path of a singular A_S."""
    u, l = u_l
    X = quads.X
    d = X.shape[1]
    kw = {}
    reg = case.split("-")[0]
    if case == "similar-singular":
        v = np.array([1.0, 2.0, 0.0])
        data = _with_singular_R(quads, pairs, u, l,
                                np.eye(d) - np.outer(v, v) / (v @ v),  # rank d - 1
                                C_q=1.0, C_p=0.5)
    else:
        data = QwiseData.from_sets(quads, pairs, regularizer=reg, C_q=1.0,
                                   C_p=0.5, u=u, l=l, **kw)
    rng = np.random.RandomState(1)
    Ms = [np.zeros((d, d))]
    for s in (0.01, 0.1, 1.0):
        B = rng.randn(d, 2)
        Ms.append(s * B @ B.T)
    fmin = min(data.objective(M) for M in Ms)
    for a in _random_alphas(data, 30, 2):
        b = data.dual_bound(a)
        assert b <= fmin + 1e-9 * max(1.0, abs(fmin))


def test_loewner_scale_is_minimal(quads, pairs, u_l, A_S):
    """mu = 0: the scale t makes S(alpha)/t <= R, and no smaller t >= 1 does."""
    u, l = u_l
    d = quads.X.shape[1]
    v = np.array([1.0, 0.0, 1.0])
    U = np.array([[1.0, 0.0, -1.0], [0.0, np.sqrt(2.0), 0.0]]) / np.sqrt(2.0)
    singular = np.eye(d) - np.outer(v, v) / 2.0  # null space span(v)
    for reg, A in (("trace", None), ("similar", A_S), ("similar", singular)):
        if A is singular:
            data = _with_singular_R(quads, pairs, u, l, singular)
        else:
            data = QwiseData.from_sets(quads, pairs, regularizer=reg, u=u, l=l,
                                       A_S=A)
        R = data.R
        if A is singular:
            # S supported on range(R) plus negative curvature on null(R):
            # the smallest t is the top eigenvalue 3 on the range
            Ss = [U.T @ np.diag([3.0, 0.5]) @ U - 0.7 * np.outer(v, v)]
        else:
            Ss = []
            for a in _random_alphas(data, 10, 3)[4:]:
                S = data.op.gram(data.dual_pair_weights(np.clip(a, 0, data.c_q)))
                Ss.append(0.5 * (S + S.T))
        for S in Ss:
            t = data._loewner_scale(S)
            assert 1.0 <= t < np.inf
            assert np.linalg.eigvalsh(R - S / t)[0] >= -1e-9 * max(1.0, t)
            if t > 1.0:
                assert np.linalg.eigvalsh(R - S / (t * (1 - 1e-6)))[0] < 0
        if A is singular:
            assert data._loewner_scale(Ss[0]) == pytest.approx(3.0, rel=1e-9)


def test_loewner_scale_infinite_when_impossible(quads, pairs, u_l):
    u, l = u_l
    d = quads.X.shape[1]
    v = np.array([1.0, 0.0, 1.0])
    singular = np.eye(d) - np.outer(v, v) / 2.0
    data = _with_singular_R(quads, pairs, u, l, singular)
    S = np.outer(v, v)  # positive curvature on null(R): no t >= 1 works
    assert not np.isfinite(data._loewner_scale(S))


def test_certified_when_margins_are_mixed_and_one_is_negligible():
    """Found by hypothesis: margins 2.3e-116 and -0.06.  ``f(0)`` is then
    2.3e-117, below what float64 resolves in the hinge arguments; the gap is
    judged on the margins' own scale, and both paths certify."""
    from cvxmetric.qwise import QwiseDualSolver

    rng = np.random.RandomState(3)
    X = 2.0 * rng.randn(10, 4)
    quads = Quadruplets.create(X, np.array([[9, 3, 9, 6], [6, 7, 6, 5]]),
                               np.array([2.34369972e-116, -6.09126128e-2]))
    data = QwiseData.from_sets(quads, regularizer="trace", C_q=0.1)
    assert data.gap_floor == pytest.approx(0.1 * 6.09126128e-2)
    exact = solve_exact(data, warm_start=warm_start)
    fast = QwiseDualSolver().run(data)
    for res in (exact, fast):
        assert res.status == "optimal" and res.certificate.passed
    assert abs(exact.objective - fast.objective) <= EXACT * data.gap_floor

"""Qwise on hostile numbers: extreme scales, offsets, underflow, duplicates,
collinear features, d = 1, n = 2, extreme margins and weights; uninformative
tuples; status and certificate of early stops; ``max_time``; solver settings.

Every case ends in the right answer (checked against the scaling law of
:class:`cvxmetric.qwise.Scaling` and an exact solve of the unscaled problem)
or in a ``ValueError`` whose message starts with the argument's name -- never
a NaN/inf result, a raw library exception, a wrong objective with status
``optimal``, or a hang.
"""

import re
import time  # thread_time: this thread's CPU seconds (load and BLAS spin not counted)
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from cvxmetric import Qwise, QwiseSupervised, quadruplets_from_labels
from cvxmetric._tolerances import TOLERANCES
from cvxmetric.constraints import Quadruplets, Triplets, triplets_from_labels
from cvxmetric.qwise import (
    C_RANGE,
    ProjectedSubgradient,
    QwiseData,
    QwiseDualSolver,
    solve_exact,
)
from cvxmetric.qwise.fast import warm_start

FAST = TOLERANCES["fast"]
EXACT = TOLERANCES["exact"]
SUB = TOLERANCES["subgradient"]
NAMED = re.compile(r"^(X|C_q|C_p|delta|A_S|quadruplets|preprocessor):")


def small(seed=0, n=15, d=3):
    """15 points in 3 classes (the issue's reproduction data)."""
    rng = np.random.RandomState(seed)
    y = np.arange(n) % 3
    return 2.0 * rng.randn(3, d)[y] + rng.randn(n, d), y


@pytest.fixture(scope="module")
def base():
    X, y = small(0)
    Q = quadruplets_from_labels(y, 40, random_state=0)
    return X, y, Q


def _data(X, Q, delta=1.0, **kw):
    return QwiseData.from_sets(Quadruplets.create(X, Q, delta), **kw)


def _rel(a, b):
    return abs(a - b) / max(1.0, abs(b))


def _solve(solver, data):
    if solver == "exact":
        return solve_exact(data, warm_start=warm_start)
    return QwiseDualSolver().run(data)


def _check_answer(res, f_ref, solver, floor=1e-300):
    """Finite, consistent with status, and right."""
    assert np.all(np.isfinite(res.M)) and np.isfinite(res.objective)
    cert = res.certificate
    assert (res.status == "optimal") == cert.passed
    if solver != "subgradient":
        assert res.status == "optimal", (res.status, cert.rel_gap)
    tol = {"exact": EXACT, "fast": FAST, "subgradient": SUB}[solver]
    # relative to the reference itself: the answer is right at any scale
    # (an optimum of 0 is judged against the problem's gap floor)
    assert abs(res.objective - f_ref) <= tol * max(abs(f_ref), floor), (res.objective, f_ref)
    if cert.passed:
        assert cert.dual_bound <= f_ref * (1 + 1e-9) + 1e-300


# ---------------------------------------------------------------------------
# the scaling law
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("s", [1e-6, 7e2])
@pytest.mark.parametrize("regularizer", ["trace", "frobenius", "similar"])
def test_scaling_law_exact(base, s, regularizer):
    """X -> s X with margins -> s^2 margins and C -> C / s^2 (trace,
    Frobenius) or C unchanged ('similar', default A_S): the same M; the
    objective unchanged (trace, Frobenius) or times s^2 ('similar')."""
    X, _, Q = base
    ref = solve_exact(_data(X, Q, 1.0, regularizer=regularizer, C_q=0.7), warm_start=warm_start)
    C = 0.7 if regularizer == "similar" else 0.7 / s**2
    res = solve_exact(_data(s * X, Q, s**2, regularizer=regularizer, C_q=C), warm_start=warm_start)
    f_ref = ref.objective * (s**2 if regularizer == "similar" else 1.0)
    assert res.status == "optimal"
    assert abs(res.objective - f_ref) <= EXACT * abs(f_ref)
    if regularizer == "frobenius":  # unique optimum
        np.testing.assert_allclose(res.M, ref.M, atol=1e-3 * np.abs(ref.M).max())


@pytest.mark.parametrize("t", [1e-200, 1e300])
@pytest.mark.parametrize("regularizer", ["trace", "similar"])
def test_margin_scaling_linear_regularizers(base, t, regularizer):
    """Linear regularisers: margins -> t margins gives M -> t M, f -> t f
    (the ZeroDivisionError of delta = 1e300 is gone)."""
    X, _, Q = base
    ref = solve_exact(_data(X, Q, 1.0, regularizer=regularizer), warm_start=warm_start)
    for solver in ("exact", "fast"):
        res = _solve(solver, _data(X, Q, t, regularizer=regularizer))
        _check_answer(res, t * ref.objective, solver)


# ---------------------------------------------------------------------------
# hostile inputs: right answer or a ValueError naming the argument
# ---------------------------------------------------------------------------


def _hostile_cases():
    X, y = small(0)
    Q = quadruplets_from_labels(y, 40, random_state=0)
    dup = X.copy()
    dup[5] = dup[0]  # duplicated points across classes
    dup[10] = dup[0]
    col = X.copy()
    col[:, 2] = col[:, 0] + 1e-7 * np.random.RandomState(2).randn(len(X))
    exact_col = X.copy()
    exact_col[:, 2] = 2.0 * X[:, 0] - X[:, 1]
    # (label, X, quadruplets, delta, kwargs, how the answer relates to the
    # unscaled problem: (factor on f, "same" data) or None for "must refuse")
    cases = []
    for s in (1e-200, 1e-150, 1e-8, 1e8, 1e150, 1e200):
        cases.append((f"X*{s:g}", X * s, Q, 1.0, {}, s))
    cases += [
        ("offset 1e8", X + 1e8, Q, 1.0, {}, "self"),
        ("offset 1e8, spread 1e-8", X * 1e-8 + 1e8, Q, 1.0, {}, "self"),
        ("underflowing differences", np.vstack([X[:14], X[13] + 1e-310]), Q, 1.0, {},
         "self"),
        ("delta 0", X, Q, 0.0, {}, "zero"),
        ("delta -1", X, Q, -1.0, {}, "zero"),
        ("delta 1e-300", X, Q, 1e-300, {}, "self"),
        ("delta 1e300", X, Q, 1e300, {}, "self"),
        ("C_q 1e-300", X, Q, 1.0, {"C_q": 1e-300}, "self"),
        ("C_q 1e300", X, Q, 1.0, {"C_q": 1e300}, "self"),
        ("C_q 0", X, Q, 1.0, {"C_q": 0.0}, "zero"),
        ("duplicated points", dup, Q, 1.0, {}, "self"),
        ("collinear 1e-7", col, Q, 1.0, {}, "self"),
        ("exactly collinear", exact_col, Q, 1.0, {}, "self"),
        ("d=1", X[:, :1], Q, 1.0, {}, "self"),
        ("n=2", np.array([[0.0, 1.0], [2.0, -1.0]]), np.array([[0, 0, 0, 1]]), 1.0,
         {}, "self"),
    ]
    return cases


_CASES = {c[0]: c for c in _hostile_cases()}


@pytest.fixture(scope="module")
def references():
    """Exact optima of the unscaled problems (per regulariser)."""
    X, y = small(0)
    Q = quadruplets_from_labels(y, 40, random_state=0)
    return {reg: solve_exact(_data(X, Q, 1.0, regularizer=reg), warm_start=warm_start).objective
            for reg in ("trace", "frobenius", "similar")}


@pytest.mark.parametrize("regularizer", ["trace", "frobenius", "similar"])
@pytest.mark.parametrize("case", sorted(_CASES))
def test_hostile_input(case, regularizer, references):
    """exact and fast: certified and right; Algorithm 1 (a short run):
    finite, status consistent with its certificate, never below the
    optimum."""
    _, X, Q, delta, kw, how = _CASES[case]
    try:
        data = _data(X, Q, delta, regularizer=regularizer, **kw)
    except ValueError as exc:
        assert NAMED.match(str(exc)), str(exc)
        return
    exact = _solve("exact", data)
    assert exact.status == "optimal" and exact.certificate.passed
    if how == "zero":
        f_ref, floor = 0.0, data.gap_floor
    elif how == "self":
        f_ref, floor = exact.objective, 1e-300
    else:
        # X -> s X, margins fixed: only the 'similar' regulariser keeps its
        # optimal value (its default A_S scales like the data); trace and
        # Frobenius change their scale-free weight (refused when out of
        # range, else judged by the exact solve's certificate)
        f_ref = references[regularizer] if regularizer == "similar" else exact.objective
        floor = 1e-300
    _check_answer(exact, f_ref, "exact", floor)
    _check_answer(_solve("fast", data), f_ref, "fast", floor)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sub = ProjectedSubgradient(maxiter=200).run(data)
    assert np.all(np.isfinite(sub.M)) and np.isfinite(sub.objective)
    assert (sub.status == "optimal") == sub.certificate.passed
    assert sub.objective >= f_ref - EXACT * max(abs(f_ref), floor)


def test_hostile_refusals_name_the_argument(base):
    """The cases that cannot be answered in floating point are refused."""
    X, _, Q = base
    with pytest.raises(ValueError, match="^X: the difference vectors"):
        _data(X * 1e200, Q)
    with pytest.raises(ValueError, match="^X: the hinge weight"):
        _data(X * 1e150, Q)  # trace: scale-free weight C_q s^2 ~ 1e301
    with pytest.raises(ValueError, match="^delta: the hinge weight"):
        _data(X, Q, 1e300, regularizer="frobenius")  # C_q s^4 / t ~ 1e-298
    for C in (1e300, C_RANGE[1] * 1e3, 1e-300):
        with pytest.raises(ValueError, match="^C_q: the hinge weight"):
            _data(X, Q, C_q=C)
    # the estimator passes the message through
    with pytest.raises(ValueError, match="^C_q:"):
        Qwise(preprocessor=X, C_q=1e300).fit(Q)
    with pytest.raises(ValueError, match="^X:"):
        Qwise(preprocessor=X * 1e200).fit(Q)
    with pytest.raises(ValueError, match="^A_S:"):
        col = X.copy()
        col[:, 2] = col[:, 0] + 1e-7 * np.random.RandomState(2).randn(len(X))
        _data(col, Q, regularizer="similar")


def test_similar_is_scale_invariant_at_1e150(base, references):
    """'similar' with its default A_S: X -> s X leaves the optimum's value
    unchanged and M -> M / s^2, also at s = 1e+-150."""
    X, _, Q = base
    ref = solve_exact(_data(X, Q, regularizer="similar"), warm_start=warm_start)
    for s in (1e-150, 1e150):
        for solver in ("exact", "fast"):
            res = _solve(solver, _data(s * X, Q, regularizer="similar"))
            _check_answer(res, ref.objective, solver)
            assert res.info["scaling"]["s"] > 1e100 or res.info["scaling"]["s"] < 1e-100
        np.testing.assert_allclose(res.M * s**2, ref.M, atol=1e-3 * np.abs(ref.M).max())


@pytest.mark.parametrize("solver", ["exact", "fast", "subgradient"])
def test_estimators_on_hostile_data(base, solver):
    X, y, Q = base
    kw = dict(solver=solver, regularizer="similar")
    if solver == "subgradient":
        kw["max_iter"] = 500
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for Xs in (X * 1e150, X * 1e-150, X + 1e8):
            e = Qwise(preprocessor=Xs, **kw).fit(Q)
            assert np.all(np.isfinite(e.mahalanobis_matrix_))
            assert (e.status_ == "optimal") == e.certificate_.passed
            e2 = QwiseSupervised(n_constraints=60, random_state=0, **kw).fit(Xs, y)
            assert np.all(np.isfinite(e2.mahalanobis_matrix_))
            assert (e2.status_ == "optimal") == e2.certificate_.passed
    with pytest.raises(ValueError, match="^X:"):
        QwiseSupervised(solver=solver).fit(X * 1e200, y)


# ---------------------------------------------------------------------------
# tuples that carry no information
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [[0, 1, 0, 1], [0, 1, 1, 0]])
def test_qwise_refuses_same_pair_quadruplets(base, bad):
    X, _, Q = base
    Qb = np.vstack([Q[:5], [bad]])
    with pytest.raises(ValueError, match="^quadruplets: 1 quadruplet"):
        Qwise(preprocessor=X).fit(Qb)
    with pytest.raises(ValueError, match="^quadruplets: 1 quadruplet"):
        Qwise().fit(X[Qb])  # as points
    # the same pair through duplicated rows
    Xd = X.copy()
    Xd[2], Xd[3] = X[0], X[1]
    with pytest.raises(ValueError, match="^quadruplets:"):
        Qwise(preprocessor=Xd).fit([[0, 1, 2, 3]])


def test_qwise_supervised_skips_same_pair_quadruplets():
    """With rows duplicated across classes the label sampler can draw
    quadruplets whose two pairs join the same two points; the supervised
    learner drops them (as it drops zero-length ones) instead of failing."""
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 0.0], [1.0, 0.0], [0.0, 1.0],
                  [1.0, 1.0]])
    y = np.array([0, 0, 1, 1, 2, 2])  # rows 0 / 2 and 1 / 3 coincide
    e = QwiseSupervised(n_constraints=200, random_state=0).fit(X, y)
    assert e.status_ == "optimal"


# ---------------------------------------------------------------------------
# status and certificate of early stops
# ---------------------------------------------------------------------------


def test_subgradient_one_iteration_does_not_pass(base):
    X, _, Q = base
    with pytest.warns(ConvergenceWarning):
        r = ProjectedSubgradient(maxiter=1).run(_data(X, Q))
    assert not r.certificate.passed
    assert r.status == "max_iter_reached" and r.raw_status == "max_iter_reached"
    e = Qwise(preprocessor=X, solver="subgradient", max_iter=1)
    with pytest.warns(ConvergenceWarning):
        e.fit(Q)
    assert e.status_ == "max_iter_reached" and not e.certificate_.passed


def test_fast_loose_tol_does_not_claim_to_pass(base):
    """tol=0.5 may stop the solver early, never loosen the certificate."""
    X, y = small(3, n=60, d=5)
    Q = quadruplets_from_labels(y, 400, random_state=3)
    data = _data(X, Q)
    exact = solve_exact(data, warm_start=warm_start)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        r = QwiseDualSolver(tol=0.5, check_every=1).run(data)
    excess = (r.objective - exact.objective) / exact.objective
    assert r.certificate.passed == (r.certificate.rel_gap <= r.certificate.tol_gap)
    assert (r.status == "optimal") == r.certificate.passed
    if excess > 10 * FAST:
        assert not r.certificate.passed and r.status != "optimal"
    assert r.certificate.dual_bound <= exact.objective * (1 + 1e-9)


# ---------------------------------------------------------------------------
# max_time
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def big():
    rng = np.random.RandomState(0)
    y = rng.randint(0, 5, 800)
    X = rng.randn(5, 20)[y] + 2.0 * rng.randn(800, 20)
    Q = quadruplets_from_labels(y, 30_000, random_state=0)
    return _data(X, Q)


@pytest.mark.parametrize("make", [
    lambda: QwiseDualSolver(max_time=0.3),
    lambda: QwiseDualSolver(max_time=0.3, working_set=3000),
    lambda: ProjectedSubgradient(max_time=0.3),
])
@pytest.mark.usefixtures("one_blas_thread")
def test_max_time_is_honoured(big, make):
    solver = make()
    t0 = time.thread_time()
    with pytest.warns(ConvergenceWarning, match="time limit"):
        r = solver.run(big)
    elapsed = time.thread_time() - t0
    assert r.status == "time_limit_reached" and not r.certificate.passed
    # set-up, one iteration (or one inner step) and the certificate
    assert elapsed < 0.3 + 3.0, elapsed


# ---------------------------------------------------------------------------
# solver settings
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("cls, field, bad", [
    (QwiseDualSolver, "maxiter", 0), (QwiseDualSolver, "maxiter", 1.5),
    (QwiseDualSolver, "tol", 0.0), (QwiseDualSolver, "tol", np.nan),
    (QwiseDualSolver, "max_time", -1.0), (QwiseDualSolver, "max_time", np.inf),
    (QwiseDualSolver, "check_every", 0), (QwiseDualSolver, "omega0", 0.0),
    (QwiseDualSolver, "omega0", -1.0), (QwiseDualSolver, "working_set", 0),
    (QwiseDualSolver, "working_set", "all"), (QwiseDualSolver, "follow_rounds", -1),
    (ProjectedSubgradient, "maxiter", -5), (ProjectedSubgradient, "tol", -1e-3),
    (ProjectedSubgradient, "max_time", "1s"), (ProjectedSubgradient, "eta0", 0.0),
    (ProjectedSubgradient, "eta0", np.inf), (ProjectedSubgradient, "step", "adam"),
    (ProjectedSubgradient, "recheck_every", 0),
    (ProjectedSubgradient, "active_set", "yes"),
])
def test_solver_settings_validated(cls, field, bad):
    with pytest.raises(ValueError, match=re.escape(field)):
        cls(**{field: bad})


def test_triplet_tuples_refused():
    X, y = small(0)
    with pytest.raises(ValueError, match="^triplets: 1 triplet"):
        Triplets.create(X, [[0, 3, 3]])
    T = triplets_from_labels(y, 500, random_state=0)
    Triplets.create(X, T)  # the sampler never draws (q, r, r)


# ---------------------------------------------------------------------------
# The vector model (Eq. 12-14) at extreme scales
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def iris_vector_sets():
    from sklearn.datasets import load_iris

    from cvxmetric import pairs_from_labels, quadruplets_from_labels

    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    quads = quadruplets_from_labels(y, 100, random_state=0)
    pairs, labels = pairs_from_labels(y, 60, random_state=0)
    return X, y, quads, pairs, labels


@pytest.mark.parametrize("psi", ["squared", "linear"])
@pytest.mark.parametrize("solver", ["exact", "newton"])
def test_vector_huge_scale_refused(iris_vector_sets, psi, solver):
    """X x 1e150 (Psi up to 1e301, or an overflow at 1e200): a ValueError
    naming X, never an OverflowError from the twin's weight."""
    from cvxmetric import QwiseVector, QwiseVectorSupervised

    X, y, quads, pairs, labels = iris_vector_sets
    for s in (1e150, 1e200):
        est = QwiseVector(psi=psi, solver=solver, preprocessor=X * s)
        with pytest.raises(ValueError, match=r"^X: .*standardise X"):
            est.fit(quads, pairs=pairs, pair_labels=labels)
    if psi == "squared":
        with pytest.raises(ValueError, match=r"^X: "):
            QwiseVectorSupervised(solver=solver, random_state=0).fit(X * 1e150, y)


@pytest.mark.parametrize("psi", ["squared", "linear"])
@pytest.mark.parametrize("solver", ["exact", "newton"])
def test_vector_tiny_scale_solved(iris_vector_sets, psi, solver):
    """X x 1e-150 (and 1e-300, where Psi underflows): w has no effect on
    the margins above round-off, so every term keeps the loss it has at
    w = 0 -- the certified optimum is C (n_quadruplets + n_pairs) up to
    round-off (b's own term is 0.5 b^2 with balanced pair labels)."""
    from cvxmetric import QwiseVector, QwiseVectorSupervised

    X, y, quads, pairs, labels = iris_vector_sets
    n_terms = len(quads) + len(pairs)
    for s in (1e-150, 1e-300):
        est = QwiseVector(psi=psi, solver=solver, preprocessor=X * s)
        est.fit(quads, pairs=pairs, pair_labels=labels)
        assert est.status_ == "optimal"
        assert abs(est.objective_ - n_terms) <= 1e-6 * n_terms
        assert np.all(np.isfinite(est.coef_))
    if psi == "squared":
        sup = QwiseVectorSupervised(solver=solver, random_state=0).fit(X * 1e-150, y)
        assert sup.status_ == "optimal" and np.isfinite(sup.objective_)


# ---------------------------------------------------------------------------
# The structural model (Eq. 16-17) at extreme scales
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("regularizer", ["trace", "frobenius"])
@pytest.mark.parametrize("solver", ["exact", "cutting_plane", "fast"])
def test_structural_huge_scale_refused(iris_vector_sets, regularizer, solver):
    """X x 1e150: a ValueError naming X (the scale-free hinge weight is out
    of range), never the conic solver's allocation error; the tuple learner
    the same."""
    from cvxmetric.qwise_structural import QwiseStructural, QwiseStructuralSupervised

    X, y, quads, _, _ = iris_vector_sets
    est = QwiseStructuralSupervised(regularizer=regularizer, solver=solver,
                                    n_constraints=100, random_state=0)
    with pytest.raises(ValueError, match=r"^X: .*scale-free"):
        est.fit(X * 1e150, y)
    tup = QwiseStructural(regularizer=regularizer, solver=solver,
                          preprocessor=X * 1e150)
    with pytest.raises(ValueError, match=r"^X: "):
        tup.fit(quads)


@pytest.mark.parametrize("solver", ["exact", "cutting_plane"])
def test_structural_tiny_scale_solved(iris_vector_sets, solver):
    """X x 1e-150: M moves no hinge above round-off, so every hinge keeps
    its value 1 at M = 0 and the certified optimum is C H(0) = C."""
    from cvxmetric.qwise_structural import QwiseStructuralSupervised

    X, y, _, _, _ = iris_vector_sets
    est = QwiseStructuralSupervised(solver=solver, n_constraints=100, random_state=0)
    est.fit(X * 1e-150, y)
    assert est.status_ == "optimal"
    assert abs(est.objective_ - 1.0) <= 1e-6


# ---------------------------------------------------------------------------
# tiny scales: fast and exact agree (M = 0 certified, or the same refusal)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [1e-30, 1e-60, 1e-75, 1e-100, 1e-150])
@pytest.mark.parametrize("regularizer", ["trace", "frobenius"])
def test_tiny_scales_fast_and_exact_agree(base, scale, regularizer):
    """Where the scale-free hinge weight is in range, both certify M = 0 or
    a point as good (every hinge at its margin; the exact path's conic solve had left
    round-off around 0 and raised CertificateError under the trace); where
    it is not, both refuse naming X."""
    X, y, Q = base
    out = {}
    for solver in ("exact", "fast"):
        est = Qwise(preprocessor=X * scale, regularizer=regularizer, solver=solver)
        try:
            est.fit(Q)
        except ValueError as exc:
            assert str(exc).startswith("X: the hinge weight"), str(exc)
            out[solver] = "refused"
            continue
        assert est.status_ == "optimal" and est.certificate_.passed
        out[solver] = est.objective_
    if out["exact"] == "refused" or out["fast"] == "refused":
        assert out["exact"] == out["fast"]
    else:
        assert np.isclose(out["exact"], out["fast"], rtol=1e-9)


@pytest.mark.parametrize("scale", [1e-75, 1e-150])
@pytest.mark.parametrize("regularizer", ["trace", "frobenius"])
def test_structural_tiny_scale_fast_agrees_with_exact(iris_vector_sets, scale,
                                                     regularizer):
    """The closed form's scale-free weight underflows, but M = 0 is
    certified on Eq. 16 itself: fast returns it, as exact does (C H(0) = C)."""
    from cvxmetric.qwise_structural import QwiseStructuralSupervised

    X, y, _, _, _ = iris_vector_sets
    res = {}
    for solver in ("exact", "fast"):
        est = QwiseStructuralSupervised(solver=solver, regularizer=regularizer,
                                        n_constraints=100, random_state=0)
        est.fit(X * scale, y)
        assert est.status_ == "optimal" and est.certificate_.passed
        res[solver] = est.objective_
    assert np.isclose(res["fast"], 1.0, rtol=1e-9)
    assert np.isclose(res["exact"], res["fast"], rtol=1e-6)

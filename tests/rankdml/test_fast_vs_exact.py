"""The fast solvers against the exact CVXPY optimum.

For every instance (fresh fixtures, hypothesis-generated tiny instances and
the bundled collection):

* ``(f_fast - f_exact) / max(1, |f_exact|)`` within
  ``tolerance("rankdml", "fast")`` in absolute value;
* the fast certificate passes and its relative gap is within the tolerance;
* the returned matrix is feasible (PSD / nonnegative diagonal, trace);
* the regularisers are strongly convex on the feasible set, so the minimiser
  is unique and the matrices agree to ``MATRIX_RTOL`` -- except Eq. 11 as
  printed, flat along ``a = c 1``, where only the objectives are compared.
"""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context
from sklearn.exceptions import ConvergenceWarning

from cvxmetric import collection as col
from cvxmetric._tolerances import MATRIX_RTOL, tolerance
from cvxmetric.constraints import Triplets
from cvxmetric.rankdml import (
    DiagonalInteriorPoint,
    RankData,
    RankDualSolver,
    solve_exact,
    solve_fast,
)
from cvxmetric.rankdml.fast import warm_start

FAST = tolerance("rankdml", "fast")


def _rel(a, b):
    return (float(a) - float(b)) / max(1.0, abs(float(b)))


def check(data, exact, fast):
    if currently_in_test_context():
        note(f"exact {exact.objective!r} fast {fast.objective!r} "
             f"gap {fast.certificate.rel_gap!r} status {fast.status}")
    assert exact.certificate.passed
    assert fast.status == "optimal"
    assert fast.certificate.passed and fast.certificate.rel_gap <= FAST
    assert abs(_rel(fast.objective, exact.objective)) <= FAST
    assert fast.objective == pytest.approx(data.objective(fast.M), rel=1e-12)
    # the fast bound is a bound: never above the exact optimum
    assert fast.certificate.dual_bound <= exact.objective + FAST * max(
        1.0, abs(exact.objective))
    viol, min_eig = data.violation(fast.M)
    assert viol <= 1e-9 * max(1.0, data.tau or 1.0)
    if data.free_laplacian:
        # Eq. 11 as printed: the regulariser is flat along a = c 1, so the
        # minimiser need not be unique (e.g. every large enough flat metric
        # when the Euclidean one orders every triplet): objectives only
        return
    err = np.linalg.norm(fast.M - exact.M)
    assert err <= MATRIX_RTOL * max(1.0, float(np.linalg.norm(exact.M))), err


def test_default_fast_solver_on_every_kind(kind_data, kind_exact):
    fast = solve_fast(kind_data)
    if kind_data.diagonal:
        assert fast.method == "fast-ipm"
    elif kind_data.regularizer == "frobenius":
        assert fast.method == "fast-pdhg"
    else:
        assert fast.method == "fast-dual"
    check(kind_data, kind_exact, fast)


def test_dual_newton_on_diagonal_kinds_too(kind_data, kind_exact):
    # the dual projected Newton solver is generic: an independent check of
    # the interior point on the diagonal problems -- except Eq. 11 as
    # printed, whose dual lives on a half-space of the box
    if kind_data.free_laplacian:
        with pytest.raises(ValueError, match="use DiagonalInteriorPoint"):
            RankDualSolver().run(kind_data)
        return
    check(kind_data, kind_exact, RankDualSolver().run(kind_data))


def test_interior_point_rejects_full_problems(rank_triplets):
    with pytest.raises(ValueError, match="diagonal problems only"):
        DiagonalInteriorPoint().run(RankData.from_triplets(rank_triplets))


def test_warm_start_and_max_iter(kind_data, kind_exact):
    fast = solve_fast(kind_data)
    again = solve_fast(kind_data, init=fast)
    check(kind_data, kind_exact, again)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        short = solve_fast(kind_data, maxiter=1, tol=1e-15)
    assert short.status == "max_iter_reached"
    # PDHG checks its gap every check_every (64) iterations
    assert short.n_iter == 1 or (short.method == "fast-pdhg" and short.n_iter <= 64)
    assert not short.certificate.passed
    # even unconverged, the returned point is feasible and certified honestly
    assert short.certificate.dual_bound <= kind_exact.objective * (1 + 1e-9) + 1e-9
    assert short.objective >= kind_exact.objective * (1 - 1e-9) - 1e-9


@st.composite
def tiny_instances(draw):
    d = draw(st.integers(1, 4))
    n = draw(st.integers(4, 9))
    seed = draw(st.integers(0, 2 ** 31 - 1))
    rng = np.random.RandomState(seed)
    scale = np.exp(rng.uniform(-1, 1, d))
    X = rng.normal(size=(n, d)) * scale
    N = draw(st.integers(1, 25))
    T = np.stack([rng.randint(0, n, N), rng.randint(0, n, N), rng.randint(0, n, N)], 1)
    X = np.vstack([X, X[:1] + 1.0])  # a distinct extra row keeps pairs non-degenerate
    # a triplet whose relevant and irrelevant items coincide does not
    # constrain the metric (Triplets refuses it): point its irrelevant item
    # at the extra row instead (the relevant one is never that row)
    bad = T[:, 1] == T[:, 2]
    T[bad, 2] = n
    kind, kw = draw(st.sampled_from([
        ("frobenius", dict(regularizer="frobenius")),
        ("frobenius-diag", dict(regularizer="frobenius", diagonal=True)),
        ("laplacian", dict(regularizer="laplacian", diagonal=True)),
        ("laplacian-fixed", dict(regularizer="laplacian", diagonal=True,
                                 form="trace_fixed")),
        ("burg", dict(regularizer="burg")),
        ("burg-spectral", dict(regularizer="burg", form="spectral")),
        ("logdet", dict(regularizer="logdet")),
    ]))
    lam = draw(st.sampled_from([0.1, 1.0, 10.0]))
    kw = dict(kw)
    if kw["regularizer"] in ("burg", "logdet"):
        B = rng.normal(size=(d, d))
        kw["A0"] = B @ B.T / d + 0.5 * np.eye(d)
    if kw["regularizer"] in ("burg", "logdet") or kw.get("form") == "trace_fixed":
        kw["tau"] = float(draw(st.sampled_from([0.5, 1.0, 3.0])))
    return RankData.from_triplets(Triplets.create(X, T), lam=lam, **kw)


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=tiny_instances())
def test_fast_vs_exact_hypothesis(data):
    exact = solve_exact(data, warm_start=warm_start)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        fast = solve_fast(data)
    check(data, exact, fast)


def test_bundled_collection_against_stored_references():
    root = col.find_root()
    names = col.instance_names(root, "rankdml")
    assert len(names) >= 5
    kinds = set()
    for inst in col.iter_instances(root, "rankdml"):
        status, ref = col.reference_status(root, inst)
        assert status == "current", (inst.name, status)
        data = inst.to_data()
        fast = col.run_method("rankdml", "fast", data)
        assert abs(_rel(inst.spec.objective(data, fast.M), ref.objective)) <= FAST
        kinds.add((data.regularizer, data.form, data.diagonal))
    # the printed forms (defaults) and the documented variants
    assert {("frobenius", "printed", False), ("burg", "printed", False),
            ("burg", "spectral", False), ("logdet", "printed", False),
            ("laplacian", "printed", True), ("laplacian", "trace_fixed", True),
            ("frobenius", "printed", True)} <= kinds

"""MMC solvers: the exact certificate, the fast solvers against the exact
optimum (fresh instances, hypothesis, the collection), Newton's equivalence.

Objective comparisons are *relative to the optimum itself*,
``|r - r*| / r*``: the MMC optimum scales like ``|S| / |D|^2`` and is far
below 1, so the package's usual ``max(1, |f|)`` normalisation would make
every check an absolute one.  Tolerances come from the one table.
"""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import note as _hyp_note
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

from cvxmetric._tolerances import EXACT_GAP, REFERENCE_AGREEMENT, tolerance
from cvxmetric.constraints import pairs_from_labels
from cvxmetric.formulations import formulation
from cvxmetric.mmc import (
    MMCData,
    MMCModel,
    MMCNewton,
    MMCProjectedGradient,
)

solve_exact = formulation("mmc").solve_exact  # the registry's warm start, polish

FAST = tolerance("mmc", "fast")
NEWTON = tolerance("mmc", "newton")


def note(msg):
    if currently_in_test_context():  # inside a hypothesis example
        _hyp_note(msg)


def rel(a, b):
    return abs(float(a) - float(b)) / abs(float(b))


def make_data(n=30, d=4, n_pairs=40, seed=0, diagonal=False, spread=1.5):
    rng = np.random.RandomState(seed)
    y = np.arange(n) % 3
    X = rng.randn(3, d)[y] * spread + rng.randn(n, d) * np.linspace(0.3, 3, d)
    pairs, labels = pairs_from_labels(y, n_pairs, random_state=seed)
    return MMCData.create(X, pairs, labels, diagonal=diagonal)


def check_result(data, res):
    """Invariants of every MMC result: paper's units, g = 1, r recomputed."""
    x = res.info["w"] if data.diagonal else res.M
    assert res.M.shape == (data.n_features,) * 2
    assert data.g(x) == pytest.approx(1.0, rel=1e-12)
    assert res.objective == pytest.approx(data.f(x), rel=1e-12)
    assert res.info["scale_free"] == pytest.approx(data.scale_free(res.M), rel=1e-12)
    assert res.objective == pytest.approx(res.info["scale_free"], rel=1e-12)
    if data.diagonal:
        assert np.all(res.M[~np.eye(data.n_features, dtype=bool)] == 0)
        assert np.all(x >= 0)
    else:
        scale = np.linalg.norm(res.M)
        assert np.linalg.eigvalsh(res.M)[0] >= -1e-12 * scale
    cert = res.certificate
    assert cert.dual_bound <= cert.objective * (1 + 1e-12)
    assert data.relative_gap(cert) >= -1e-12


# ---------------------------------------------------------------------------
# exact
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("diagonal", [False, True])
def test_exact_certificate_and_model(diagonal):
    data = make_data(diagonal=diagonal)
    res = solve_exact(data)
    check_result(data, res)
    cert = res.certificate
    assert res.status == "optimal" and res.method == "exact" and cert.passed
    assert data.relative_gap(cert) <= EXACT_GAP
    assert cert.max_violation <= 1e-12
    # the CVXPY problem and its variable are reachable
    model = res.info["model"]
    assert isinstance(model, MMCModel)
    assert model.problem.is_dcp() and model.problem.status == "optimal"
    assert model.M.value is not None
    assert model.M.shape == ((data.n_features,) if diagonal
                             else (data.n_features, data.n_features))
    assert set(model.constraints) == ({"dissimilar"} if diagonal
                                      else {"dissimilar", "psd"})
    # paper's units: the scaled model's value is (rho |D|)^2 times r*
    scaled = model.problem.value / (model.rho * data.n_dissimilar) ** 2
    assert rel(scaled, res.objective) <= 1e-6


@pytest.mark.parametrize("diagonal", [False, True])
def test_exact_solvers_agree(diagonal):
    data = make_data(seed=1, diagonal=diagonal)
    a = solve_exact(data, solvers=("CLARABEL",))
    b = solve_exact(data, solvers=("SCS",))
    assert a.certificate.solver == "CLARABEL" and b.certificate.solver == "SCS"
    assert rel(a.objective, b.objective) <= REFERENCE_AGREEMENT


def test_diagonal_optimum_is_above_full():
    full = solve_exact(make_data(seed=2))
    diag = solve_exact(make_data(seed=2, diagonal=True))
    assert full.objective <= diag.objective * (1 + EXACT_GAP)


def test_badly_scaled_features():
    """Feature scales 1e-2 to 1e3 (as in raw wine): the model's Jacobi
    scaling keeps the conic solve certified."""
    data = make_data(seed=3, d=5)
    X = data.X * np.array([1e-2, 1.0, 10.0, 1e2, 1e3])
    pairs = np.vstack([data.similar, data.dissimilar])
    labels = np.r_[np.ones(data.n_similar), -np.ones(data.n_dissimilar)].astype(int)
    for diagonal in (False, True):
        scaled = MMCData.create(X, pairs, labels, diagonal=diagonal)
        res = solve_exact(scaled)
        assert res.certificate.passed
        fast = MMCProjectedGradient().run(scaled)
        assert rel(fast.objective, res.objective) <= FAST


# ---------------------------------------------------------------------------
# fast vs exact
# ---------------------------------------------------------------------------


def check_fast(data, exact=None):
    if exact is None:
        exact = solve_exact(data)
    fast = MMCProjectedGradient().run(data)
    note(f"exact {exact.objective!r} fast {fast.objective!r} "
         f"status {fast.status} n_iter {fast.n_iter}")
    check_result(data, fast)
    assert fast.status == "optimal" and fast.method == "fast"
    assert fast.certificate.passed
    assert data.relative_gap(fast.certificate) <= FAST
    assert rel(fast.objective, exact.objective) <= FAST
    # certified: the fast bound is below the exact optimum (up to its gap)
    assert fast.certificate.dual_bound <= exact.objective * (1 + EXACT_GAP)
    return fast, exact


@pytest.mark.parametrize("diagonal", [False, True])
@pytest.mark.parametrize("seed", [0, 4])
def test_fast_vs_exact(diagonal, seed):
    data = make_data(seed=seed, diagonal=diagonal, d=5, n_pairs=60)
    fast, _ = check_fast(data)
    # without preconditioning: Xing's iteration itself, exact projection
    plain = MMCProjectedGradient(precondition=False).run(data)
    assert rel(plain.objective, fast.objective) <= FAST


def test_fast_warm_start_and_max_iter():
    data = make_data(seed=5, d=5)
    exact = solve_exact(data)
    warm = MMCProjectedGradient().run(data, init=exact)
    assert rel(warm.objective, exact.objective) <= FAST
    with pytest.warns(Warning, match="did not converge"):
        short = MMCProjectedGradient(maxiter=1).run(data)
    assert short.status == "max_iter_reached" and short.n_iter == 1
    check_result(data, short)  # still a certified, feasible point


@st.composite
def mmc_instances(draw):
    n = draw(st.integers(4, 14))
    d = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2 ** 16))
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d) * rng.uniform(0.1, 10, size=d)
    n_pairs = draw(st.integers(2, 20))
    pairs = np.array([rng.choice(n, 2, replace=False) for _ in range(n_pairs)])
    labels = np.where(np.arange(n_pairs) % 2 == 0, 1, -1)
    diagonal = draw(st.booleans())
    return MMCData.create(X, pairs, labels, diagonal=diagonal)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(mmc_instances())
def test_fast_vs_exact_hypothesis(data):
    note(f"d={data.n_features} S={data.n_similar} D={data.n_dissimilar} "
         f"diagonal={data.diagonal} degenerate={data.degenerate}")
    exact = solve_exact(data)
    assert exact.certificate.passed
    if data.degenerate:
        assert "degenerate" in exact.info and exact.certificate.dual_bound == 0
        fast = MMCProjectedGradient().run(data)
        assert fast.certificate.passed and "degenerate" in fast.info
        return
    check_fast(data, exact)
    if data.diagonal:
        newton = MMCNewton().run(data)
        check_result(data, newton)
        assert rel(newton.objective, exact.objective) <= NEWTON


# ---------------------------------------------------------------------------
# Newton (Xing Sec. 2.2): same minimiser up to scale
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 6])
def test_newton_equivalence(seed):
    """min h = (1 + log 2 + log r*) / 2, attained with a^T w = 1/2 at a
    minimiser of the scale-free diagonal MMC value."""
    data = make_data(seed=seed, diagonal=True, d=5, n_pairs=60)
    exact = solve_exact(data)
    newton = MMCNewton().run(data)
    check_result(data, newton)
    assert newton.status == "optimal" and newton.certificate.passed
    assert rel(newton.objective, exact.objective) <= NEWTON
    w_n = newton.info["w_newton"]  # the minimiser of h itself
    assert data.a @ w_n == pytest.approx(0.5, rel=1e-8)
    h_star = 0.5 * (1 + np.log(2) + np.log(exact.objective))
    assert newton.info["h"] == pytest.approx(h_star, rel=1e-8, abs=1e-8)
    # h at the exact solution, scaled onto the ray's minimiser, is h* too
    w_e = exact.info["w"] / (2 * data.a @ exact.info["w"])
    h_e = data.a @ w_e - np.log(data.g(w_e))
    assert h_e == pytest.approx(h_star, rel=1e-8, abs=1e-8)
    # and the scale-free values of the two minimisers agree
    assert rel(data.scale_free(w_n), exact.objective) <= NEWTON
    # few iterations: Newton converges quadratically
    assert newton.n_iter <= 30


def test_newton_with_inactive_coordinates():
    """A noise feature (large within similar pairs) gets w_k = 0 exactly;
    the projected Newton step handles the bound."""
    data = make_data(seed=7, diagonal=True, d=4, n_pairs=60)
    X = data.X.copy()
    X[:, 0] = np.random.RandomState(7).randn(len(X)) * 50
    pairs = np.vstack([data.similar, data.dissimilar])
    labels = np.r_[np.ones(data.n_similar), -np.ones(data.n_dissimilar)].astype(int)
    data = MMCData.create(X, pairs, labels, diagonal=True)
    exact = solve_exact(data)
    newton = MMCNewton().run(data)
    assert rel(newton.objective, exact.objective) <= NEWTON
    w = newton.info["w"]
    assert np.any(w == 0) and np.all(w >= 0)


# ---------------------------------------------------------------------------
# the bundled collection: relative gaps against the stored references
# ---------------------------------------------------------------------------


def test_collection_relative_gaps():
    import cvxmetric.collection as col

    root = col.find_root()
    names = col.instance_names(root, "mmc")
    assert len(names) >= 5
    kinds = set()
    for name in names:
        inst = col.load_instance(root, "mmc", name)
        ref = col.read_reference(root, inst)
        data = inst.to_data()
        kinds.add(data.diagonal)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a ConvergenceWarning fails
            for method in col.METHODS["mmc"]:
                if not inst.spec.applies(method, inst.hyperparameters):
                    continue
                res = col.METHODS["mmc"][method](data)
                r = data.scale_free(res.M)
                assert abs(r - ref.objective) / ref.objective <= tolerance(
                    "mmc", method), (name, method, r, ref.objective)
    assert kinds == {False, True}

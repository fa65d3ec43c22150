"""LDML-family defaults on standard data, units, budgets and hostile input."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from cvxmetric import (
    LDML,
    LDMLStar,
    LDMLSupervised,
    MildML,
    NotAttainedError,
    pairs_from_labels,
)
from cvxmetric.ldml import BagPairs, LDMLData
from cvxmetric.ldml._budget import budget
from cvxmetric.ldml._polish import polish
from cvxmetric.ldml._scale import (
    auto_lam,
    unit_scale,
    zero_point,
    zero_point_labels,
    zero_result,
)
from cvxmetric.ldml.fast import AllPairs, _row_ids, solve_fast


def _std(loader):
    X, y = loader(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _iris():
    return _std(load_iris)


def _bags(y, size=3, seed=0):
    p = np.random.RandomState(seed).permutation(len(y))
    bags = [p[k:k + size] for k in range(0, len(y), size)]
    return bags, [sorted(set(y[b].tolist())) for b in bags]


# -- defaults fit standard data ---------------------------------------------

@pytest.mark.parametrize("name", ["wine", "breast_cancer_raw", "digits_pca30"])
def test_ldml_defaults_certify_where_lam_zero_is_not_attained(name):
    if name == "wine":
        X, y = _std(load_wine)
    elif name == "breast_cancer_raw":
        X, y = load_breast_cancer(return_X_y=True)
    else:
        X, y = load_digits(return_X_y=True)
        X = PCA(30, random_state=0).fit_transform(X)
    pairs, labels = pairs_from_labels(y, 180, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = LDML(preprocessor=X).fit(pairs, labels)
    assert est.status_ == "optimal" and est.certificate_.passed
    assert est.lam_ > 0
    # lam = 0 (Eq. 2 as printed) keeps its attainment check
    with pytest.raises(NotAttainedError, match="lam"):
        LDML(lam=0, preprocessor=X).fit(pairs, labels)


def test_ldml_exact_default_certifies_breast_cancer():
    X, y = _std(load_breast_cancer)
    pairs, labels = pairs_from_labels(y, 180, random_state=0)
    exact = LDML(solver="exact", preprocessor=X).fit(pairs, labels)
    fast = LDML(preprocessor=X).fit(pairs, labels)
    assert exact.status_ == fast.status_ == "optimal"
    assert abs(exact.objective_ - fast.objective_) <= 1e-6 * fast.objective_


def test_auto_lam_is_a_fraction_of_lam_max_and_scale_free():
    X, y = _iris()
    pairs, s = pairs_from_labels(y, 180, random_state=0)
    zp = zero_point(X, pairs, s)
    lam = auto_lam(zp, "trace")
    # lam_max: M = 0 is optimal from there on (certified), not below
    assert zero_result(zp, 1.001 * zp.lam_max, "trace") is not None
    assert zero_result(zp, 0.999 * zp.lam_max, "trace") is None
    assert np.isclose(lam, 0.01 * zp.lam_max)
    # X -> cX is lam_max -> c^2 lam_max
    zp2 = zero_point(4.0 * X, pairs, s)
    assert np.isclose(zp2.lam_max, 16.0 * zp.lam_max)
    assert np.isclose(auto_lam(zp2, "frobenius"), 256.0 * auto_lam(zp, "frobenius"))


def test_zero_point_of_labels_equals_that_of_every_pair_with_duplicates():
    X, y = load_iris(return_X_y=True)  # iris has duplicate rows
    rows = _row_ids(X)
    i, j = np.triu_indices(len(y), 1)
    keep = rows[i] != rows[j]
    s = np.where(y[i] == y[j], 1, -1)[keep]
    a = zero_point(X, np.column_stack([i, j])[keep], s)
    b = zero_point_labels(X, y, rows)
    assert (a.n_pos, a.n_neg) == (b.n_pos, b.n_neg)
    np.testing.assert_allclose(a.S0, b.S0, rtol=1e-10, atol=1e-9 * np.abs(a.S0).max())
    assert np.isclose(a.f0, b.f0)


# -- LDMLSupervised: check_estimator, the default solver, exact on iris ------

def test_supervised_default_solver_is_certified_at_full_rank():
    X, y = _iris()
    est = LDMLSupervised().fit(X[::3], y[::3])
    assert est.solver_ == "lowrank" and est.status_ == "optimal"
    fast = LDMLSupervised(solver="fast").fit(X[::3], y[::3])
    assert abs(fast.objective_ - est.objective_) <= 1e-6 * est.objective_
    low = LDMLSupervised(n_components=2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        low.fit(X[::3], y[::3])
    assert low.solver_ == "lowrank" and low.components_.shape == (2, 4)


def test_supervised_exact_refuses_iris_in_one_sentence():
    from cvxmetric import ProblemSizeError

    X, y = _iris()
    with pytest.raises(ProblemSizeError, match=r"^solver: 'exact' .*'fast'.*\.$"):
        LDMLSupervised(solver="exact").fit(X, y)


# -- ConvergenceWarning -------------------------------------------------------

def test_fits_that_do_not_end_optimal_warn_with_the_status():
    X, y = _iris()
    bags, caps = _bags(y)
    with pytest.warns(ConvergenceWarning, match="optimal_inaccurate.*not convex"):
        est = MildML(preprocessor=X, random_state=0).fit(bags, caps)
    assert est.status_ != "optimal"
    with pytest.warns(ConvergenceWarning, match="max_iter_reached.*raise max_iter"):
        LDMLSupervised(solver="lowrank", max_iter=2, random_state=0).fit(X, y)


# -- units ----------------------------------------------------------------

@pytest.mark.parametrize("solver", ["exact", "fast", "lowrank"])
def test_extreme_scales_give_the_unit_scale_fit(solver):
    X, y = _iris()
    pairs, labels = pairs_from_labels(y, 180, random_state=0)
    ref = LDML(solver=solver, preprocessor=X, random_state=0).fit(pairs, labels)
    for c in (1e150, 1e-150):
        est = LDML(solver=solver, preprocessor=X * c, random_state=0).fit(pairs, labels)
        assert est.status_ == "optimal"
        assert np.isclose(est.objective_, ref.objective_, rtol=1e-8)
        # the exact path certifies F to 1e-6: (M, b) agree less closely
        assert np.isclose(est.b_, ref.b_, rtol=1e-4)
        np.testing.assert_allclose(est.pair_distance(pairs),
                                   ref.pair_distance(pairs), rtol=1e-3, atol=1e-6)
    with pytest.raises(ValueError, match="^X: .*rescale X"):
        LDML(solver=solver, preprocessor=X * 1e200, random_state=0).fit(pairs, labels)


def test_supervised_and_star_extreme_scales():
    X, y = _iris()
    for solver in ("fast", "lowrank"):
        ref = LDMLSupervised(solver=solver, random_state=0).fit(X[::3], y[::3])
        tiny = LDMLSupervised(solver=solver, random_state=0).fit(X[::3] * 1e-150, y[::3])
        assert tiny.status_ == "optimal"
        assert np.isclose(tiny.objective_, ref.objective_, rtol=1e-8)
    bags, caps = _bags(y)
    ref = LDMLStar(preprocessor=X, random_state=0).fit(bags, caps)
    tiny = LDMLStar(preprocessor=X * 1e-150, random_state=0).fit(bags, caps)
    assert tiny.status_ == ref.status_ == "optimal"
    assert np.isclose(tiny.objective_, ref.objective_, rtol=1e-8)


def test_huge_weights_give_the_certified_zero_metric():
    X, y = _iris()
    pairs, labels = pairs_from_labels(y, 180, random_state=0)
    n_pos = int(np.sum(labels > 0))
    P = len(labels)
    f0 = n_pos * np.log(P / n_pos) + (P - n_pos) * np.log(P / (P - n_pos))
    cases = [dict(lam=1e300, solver=s) for s in ("exact", "fast", "lowrank")]
    cases.append(dict(lam=1e300, regularizer="frobenius"))
    # the hang: a Frobenius weight 1 on data of scale 1e-150 is 1e600 at unit scale
    cases.append(dict(lam=1.0, regularizer="frobenius", solver="fast",
                      preprocessor=X * 1e-150))
    for kw in cases:
        kw.setdefault("preprocessor", X)
        est = LDML(**kw).fit(pairs, labels)
        assert est.status_ == "optimal"
        assert np.all(est.get_mahalanobis_matrix() == 0)
        assert np.isclose(est.objective_, f0)
    # at a rank below the dimension the zero metric keeps that rank's shape
    low = LDML(lam=1e300, solver="lowrank", n_components=2, preprocessor=X)
    assert low.fit(pairs, labels).components_.shape == (2, 4)
    assert LDMLSupervised(lam=1e300, n_components=2).fit(X, y).components_.shape == (2, 4)


# -- the objective is that of the returned point -------------------------------

def test_objective_is_that_of_the_returned_point():
    X, y = _iris()
    pairs, labels = pairs_from_labels(y, 180, random_state=0)
    for solver in ("exact", "fast", "lowrank"):
        est = LDML(solver=solver, preprocessor=X, random_state=0).fit(pairs, labels)
        f = LDMLData(X, pairs, labels, lam=est.lam_).objective(
            est.get_mahalanobis_matrix(), est.b_)
        assert abs(f - est.objective_) <= 1e-10 * f


def test_mildml_far_from_the_origin_reports_its_point():
    X, y = _iris()
    bags, caps = _bags(y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = MildML(preprocessor=X + 1e8, max_iter=50, random_state=0).fit(bags, caps)
    # evaluated where the offset costs no digits ((X + 1e8) - 1e8 is exact):
    # the same distances
    f = BagPairs((X + 1e8) - 1e8, bags, caps, lam=est.lam_).objective(est.components_,
                                                                     est.b_)
    assert abs(f - est.objective_) <= 1e-6 * f


# -- budgets --------------------------------------------------------------------

def test_an_expired_budget_skips_polish_repair_and_sdps():
    X, y = _iris()
    pairs, labels = pairs_from_labels(y, 180, random_state=0)
    data = LDMLData(X, pairs, labels)  # lam = 0
    res = solve_fast(LDMLData(X, pairs, labels, lam=0.1))
    with budget(0.0):
        assert polish(data, res.M, res.info["b"]) == []
        assert data.strict_direction() is None
        assert data.attained() is None  # undecided, not an SDP past the budget
    assert data.attained() is True  # without a budget it is decided


def test_max_time_ends_time_limit_reached_with_a_warning():
    rng = np.random.RandomState(0)
    y = np.arange(300) % 5
    X = rng.normal(size=(5, 30))[y] * 1.5 + rng.normal(size=(300, 30))
    pairs, labels = pairs_from_labels(y, 2000, random_state=0)
    for est in (LDML(max_time=1e-6, preprocessor=X),
                LDML(lam=0, max_time=1e-6, preprocessor=X),
                LDMLSupervised(max_time=1e-6),
                LDMLSupervised(solver="lowrank", max_time=1e-6)):
        with pytest.warns(ConvergenceWarning, match="time_limit_reached.*max_time"):
            est.fit(pairs, labels) if isinstance(est, LDML) else est.fit(X, y)
        assert est.status_ == "time_limit_reached"
    bags, caps = _bags(y, 4)
    with pytest.warns(ConvergenceWarning, match="time_limit_reached"):
        est = LDMLStar(max_time=1e-6, preprocessor=X).fit(bags, caps)
    assert est.n_rounds_ == 1


def test_ldmlstar_past_max_time_stops_its_first_label_step(monkeypatch):
    # 400 bags of 4: the label step solves one matching per bag and sweep;
    # past the budget it stops once a class has two instances (a few bags),
    # where it used to run its sweeps to the end
    import cvxmetric.ldml._naming as naming

    rng = np.random.RandomState(0)
    y = np.arange(1600) % 20
    X = rng.normal(size=(20, 30))[y] * 1.5 + rng.normal(size=(1600, 30))
    bags, caps = _bags(y, 4)
    calls = []
    assign = naming.assign_bag
    monkeypatch.setattr(naming, "assign_bag", lambda G, **kw: calls.append(1) or assign(G, **kw))
    for max_time in (1e-6, 0.05):
        calls.clear()
        with pytest.warns(ConvergenceWarning, match="time_limit_reached.*max_time"):
            est = LDMLStar(max_time=max_time, preprocessor=X, random_state=0).fit(bags, caps)
        assert est.status_ == "time_limit_reached" and est.n_rounds_ == 1
        if max_time == 1e-6:  # spent before the label step (0.05 s: by the machine)
            assert 0 < len(calls) < 10  # the full fit: 4 800 matchings
            assert np.all(est.labels_[np.concatenate(bags[len(calls):])] == -1)


@pytest.mark.usefixtures("one_blas_thread")
def test_ldml_exact_honours_max_time():
    import time

    X, y = _std(load_breast_cancer)
    pairs, labels = pairs_from_labels(y, 180, random_state=0)
    t0 = time.thread_time()
    full = LDML(solver="exact", preprocessor=X).fit(pairs, labels)
    t_full = time.thread_time() - t0
    assert full.status_ == "optimal"
    # spent before the first solve: the point M = 0 (the best b), uncertified
    with pytest.warns(ConvergenceWarning, match="time_limit_reached.*max_time"):
        est = LDML(solver="exact", preprocessor=X, max_time=1e-6).fit(pairs, labels)
    assert est.status_ == "time_limit_reached" and not est.certificate_.passed
    assert not np.any(est.get_mahalanobis_matrix())
    f = LDMLData(X, pairs, labels, lam=est.lam_).objective(est.get_mahalanobis_matrix(),
                                                           est.b_)
    assert abs(f - est.objective_) <= 1e-10 * f
    # spent during the conic solves: they stop at the budget (their own
    # time limit), later attempts do not start; the point returned is a
    # real point (never below the optimum), not called optimal
    t0 = time.thread_time()
    with pytest.warns(ConvergenceWarning, match="time_limit_reached.*max_time"):
        est = LDML(solver="exact", preprocessor=X, max_time=0.1).fit(pairs, labels)
    t_cut = time.thread_time() - t0
    assert est.status_ == "time_limit_reached" and not est.certificate_.passed
    assert est.objective_ >= full.objective_ * (1 - 1e-9)
    assert t_cut < 0.5 * t_full


@pytest.mark.usefixtures("one_blas_thread")
def test_ldml_exact_budget_bounds_the_attainment_sdps():
    # lam = 0 on digits PCA-30's 2 000 pairs: the attainment and level-set
    # SDPs take minutes of CPU; within max_time each conic solve is
    # compiled first and limited to what is left, so the fit ends after
    # about one compilation and one solver iteration past its budget
    import time

    X, y = load_digits(return_X_y=True)
    X = PCA(30, random_state=0).fit_transform(X)
    pairs, labels = pairs_from_labels(y, 2000, random_state=0)
    t0 = time.thread_time()
    with pytest.warns(ConvergenceWarning, match="time_limit_reached.*max_time"):
        est = LDML(solver="exact", lam=0, preprocessor=X, max_time=0.3).fit(pairs, labels)
    assert time.thread_time() - t0 < 10.0
    assert est.status_ == "time_limit_reached" and not est.certificate_.passed


def test_exact_past_its_budget_returns_the_best_point_it_has():
    from cvxmetric.ldml.exact import _time_limited
    from cvxmetric.result import Certificate

    X, y = _iris()
    pairs, labels = pairs_from_labels(y, 180, random_state=0)
    data = LDMLData(X, pairs, labels, lam=1.0)
    opt = LDML(solver="exact", preprocessor=X, lam=1.0).fit(pairs, labels)
    M, b = opt.get_mahalanobis_matrix(), opt.b_
    f = data.objective(M, b)
    loose = Certificate.from_bound(f, f - 1.0, max_violation=0.0, min_eig=0.0,
                                   solver="CLARABEL")
    res = _time_limited(data, [(loose, M, b)], None, 0.0)
    assert res.status == "time_limit_reached" and res.objective == f
    np.testing.assert_array_equal(res.M, M)
    # nothing better than M = 0 seen: M = 0 at its best b
    worse = Certificate.from_bound(1e9, 0.0, max_violation=0.0, min_eig=0.0,
                                   solver="CLARABEL")
    res = _time_limited(data, [(worse, 2 * M, b)], None, 0.0)
    assert res.status == "time_limit_reached" and not np.any(res.M)
    assert res.objective == pytest.approx(data.value_at_zero(), rel=1e-12)


# -- bad input ----------------------------------------------------------------

def test_identical_samples_are_refused_naming_the_argument():
    Xs = np.ones((9, 3))
    with pytest.raises(ValueError, match="^X: every sample is the same point"):
        LDMLSupervised(solver="lowrank").fit(Xs, np.arange(9) % 2)
    with pytest.raises(ValueError, match="^X: every sample is the same point"):
        LDMLSupervised().fit(Xs, np.arange(9) % 2)
    bags, caps = [[0, 1, 2], [3, 4, 5], [6, 7, 8]], [[0], [1], [0]]
    for cls in (MildML, LDMLStar):
        with pytest.raises(ValueError, match="^bags: every sample is the same point"):
            cls(preprocessor=Xs).fit(bags, caps)


def test_bag_labels_none_or_mixed_types_are_refused():
    X = np.random.RandomState(0).normal(size=(12, 3))
    bags = [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]
    for cls in (MildML, LDMLStar):
        with pytest.raises(ValueError, match=r"^bag_labels\[1\]: a label is None"):
            cls(preprocessor=X).fit(bags, [[0], [None, 1], [1], [0]])
        with pytest.raises(ValueError, match="^bag_labels: the label sets mix"):
            cls(preprocessor=X).fit(bags, [[0], ["a"], [1], [0]])


def test_kernel_params_are_checked():
    X, y = _iris()
    with pytest.raises(ValueError, match=r"^kernel_params: \['bogus'\]"):
        LDMLSupervised(kernel="rbf", kernel_params={"bogus": 1.0}).fit(X, y)
    with pytest.raises(ValueError, match="^kernel_params: given without a kernel"):
        LDMLSupervised(kernel_params={"gamma": 1.0}).fit(X, y)


def test_unit_scale_is_exact_and_overflow_free():
    X, _ = _iris()
    for c in (1.0, 1e200, 1e-200, 2.0 ** 1000):
        Xu, k = unit_scale(X * c)
        assert 0.5 <= np.sqrt(np.mean(np.sum(Xu * Xu, axis=1))) < 1.0
        Xc = X * c - (X * c).mean(axis=0)
        np.testing.assert_allclose(np.ldexp(Xu, k), Xc, rtol=1e-12,
                                   atol=1e-12 * np.abs(Xc).max())


def test_mildml_singleton_bags_at_a_large_scale_reach_ldml():
    X, y = _iris()
    idx = np.arange(0, 150, 3)
    c = 1e100
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        # the paper's schedule stops on its own rule within 3 000 iterations
        # (at the default 300 it ends max_iter_reached, and says so)
        mil = MildML(lam=0.1 / c ** 2, preprocessor=X * c, max_iter=3000,
                     random_state=0).fit([np.array([k]) for k in idx],
                                         [[y[k]] for k in idx])
    i, j = np.triu_indices(len(idx), 1)
    ref = LDML(lam=0.1 / c ** 2, preprocessor=X[idx] * c).fit(
        np.column_stack([i, j]), np.where(y[idx][i] == y[idx][j], 1, -1))
    assert ref.status_ == "optimal"
    assert abs(mil.objective_ - ref.objective_) <= 1e-6 * ref.objective_
    assert mil.result_.info["finish"]

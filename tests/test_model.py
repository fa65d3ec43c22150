"""The declared CVXPY model (cvxmetric.model): one contract, every family.

For each family: built from an estimator's parameters and its ``fit`` input,
the declared problem's optimal value is the exact ``objective_``; a
constraint can be added and the problem solved with Clarabel and SCS; the
matrix goes back to the family's objective, certificate and a fitted
metric; hyperparameters are DPP parameters (re-solved without
recompiling); bad input is a ValueError naming the argument.
"""

import re
import warnings

import cvxpy as cp
import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.preprocessing import StandardScaler

from cvxmetric import (
    SLR,
    BilinearMetric,
    ConstraintDML,
    ConstraintDMLSupervised,
    DeclaredProblem,
    InfeasibleError,
    MahalanobisMetric,
    MMC,
    MMCSupervised,
    Qwise,
    QwiseSupervised,
    RankDML,
    RankDMLSupervised,
    SolverError,
    quadruplets_from_labels,
    triplets_from_labels,
)
from cvxmetric.result import Certificate

# accuracy is asserted on every solution; CVXPY's own note on an inaccurate
# solve (SCS at 1e-9, Clarabel ending "almost solved") is not a failure here
pytestmark = pytest.mark.filterwarnings("ignore:Solution may be inaccurate")

#: Tight Clarabel options (the families' exact paths use the same).
CLARABEL = {"tol_gap_abs": 1e-9, "tol_gap_rel": 1e-9, "tol_feas": 1e-9,
            "tol_ktratio": 1e-7}
#: SCS to a tolerance well below the comparisons made with it.
SCS = {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 200_000}


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    rng = np.random.RandomState(0)
    idx = rng.choice(150, 45, replace=False)
    return X[idx], y[idx]


def _pairs(y, rng, n=24):
    """Labelled index pairs, half same-class (+1), half different (-1)."""
    out, lab = [], []
    while len(out) < n:
        i, j = rng.randint(len(y), size=2)
        if i == j:
            continue
        same = y[i] == y[j]
        want = len(out) % 2 == 0
        if same == want:
            out.append((i, j))
            lab.append(1 if same else -1)
    return np.array(out), np.array(lab)


# one case per (family, estimator): (estimator, fit args, fit kwargs)
def _cases(X, y):
    rng = np.random.RandomState(1)
    quads = quadruplets_from_labels(y, 40, random_state=0)
    triplets = triplets_from_labels(y, 40, random_state=0)
    pairs, lab = _pairs(y, rng)
    return {
        "qwise": (Qwise(preprocessor=X), (quads,), {"delta": 1.0}),
        "qwise-eq11": (Qwise(preprocessor=X, u=1.0, l=3.0), (quads,),
                       {"delta": 1.0, "pairs": pairs, "pair_labels": lab}),
        "qwise-supervised": (QwiseSupervised(n_constraints=40, random_state=0,
                                             regularizer="frobenius"), (X, y), {}),
        "mmc": (MMC(preprocessor=X), (pairs, lab), {}),
        "mmc-diagonal": (MMC(preprocessor=X, diagonal=True), (pairs, lab), {}),
        "mmc-supervised": (MMCSupervised(n_constraints=30, random_state=0), (X, y), {}),
        "slr": (SLR(), (X[:30], y[:30]), {}),
        "constraintdml": (ConstraintDML(preprocessor=X, lam=2.0), (pairs, lab), {}),
        "constraintdml-soft-diagonal": (
            ConstraintDML(preprocessor=X, hard=False, diagonal=True, lam=0.5),
            (pairs, lab), {}),
        "constraintdml-supervised": (
            ConstraintDMLSupervised(n_constraints=30, random_state=0, hard=False),
            (X, y), {}),
        "rankdml": (RankDML(preprocessor=X), (triplets,), {}),
        "rankdml-burg": (RankDML(preprocessor=X, regularizer="burg"), (triplets,), {}),
        "rankdml-laplacian": (RankDML(preprocessor=X, regularizer="laplacian"),
                              (triplets,), {}),
        "rankdml-supervised": (RankDMLSupervised(random_state=0, n_queries=15),
                               (X, y), {}),
    }


CASES = ["qwise", "qwise-eq11", "qwise-supervised", "mmc", "mmc-diagonal",
         "mmc-supervised", "slr", "constraintdml", "constraintdml-soft-diagonal",
         "constraintdml-supervised", "rankdml", "rankdml-burg", "rankdml-laplacian",
         "rankdml-supervised"]


def _fitted_and_declared(iris, name):
    from sklearn.base import clone

    X, y = iris
    est, args, kwargs = _cases(X, y)[name]
    if isinstance(est, SLR):
        est.set_params(solver="exact")
    fitted = clone(est).fit(*args, **kwargs)
    dp = est.declared_problem(*args, **kwargs)
    return fitted, dp, est


@pytest.mark.parametrize("name", CASES)
def test_declared_value_is_the_exact_objective(iris, name):
    fitted, dp, est = _fitted_and_declared(iris, name)
    assert isinstance(dp, DeclaredProblem)
    assert dp.family == name.split("-")[0]
    assert dp.equation.startswith("Eq. ")
    assert dp.problem.is_dpp()
    assert dp.variable is dp.variables[dp.metric_key]
    assert dp.M.shape == (dp.n_features, dp.n_features)
    assert all(isinstance(p, cp.Parameter) for p in dp.parameters.values())
    # the estimator is not fitted (nor changed) by declared_problem
    assert not hasattr(est, "components_") and not hasattr(est, "n_features_in_")
    value = dp.solve(solver="CLARABEL", **CLARABEL)
    assert value == pytest.approx(fitted.objective_, rel=1e-6)
    M = dp.matrix()
    assert dp.objective(M) == pytest.approx(fitted.objective_, rel=1e-6)
    cert = dp.certificate()
    assert isinstance(cert, Certificate) and cert.passed
    assert cert.objective == pytest.approx(fitted.objective_, rel=1e-6)


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("solver", ["CLARABEL", "SCS"])
def test_add_constraint_solve_and_hand_back(iris, name, solver):
    fitted, dp, _ = _fitted_and_declared(iris, name)
    X = iris[0]
    dp.solve(solver="CLARABEL", **CLARABEL)
    M0 = dp.matrix()
    # cap the largest diagonal entry of the optimum at half its value
    k = int(np.argmax(np.diag(M0)))
    cap = 0.5 * float(M0[k, k])
    dp.add_constraint("cap", dp.M[k, k] <= cap)
    assert "cap" in dp.constraints and "cap" not in dp.declared_constraints
    dp.solve(solver=solver, **(CLARABEL if solver == "CLARABEL" else SCS))
    M = dp.matrix()
    assert M.shape == (X.shape[1], X.shape[1])
    assert M[k, k] <= cap * (1 + 1e-5) + 1e-9
    f = dp.objective(M)
    # a constrained optimum is no better than the declared one
    assert f >= fitted.objective_ * (1 - 1e-5)
    cert = dp.certificate(M)
    assert isinstance(cert, Certificate)
    assert cert.dual_bound <= cert.objective + 1e-6 * max(1.0, abs(cert.objective))
    assert cert.dual_bound <= fitted.objective_ * (1 + 1e-6) + 1e-9
    metric = dp.metric(M)
    if dp.kind == "bilinear":
        assert isinstance(metric, BilinearMetric)
        pts = np.stack([X[:5], X[5:10]], axis=1)
        np.testing.assert_allclose(
            metric.pair_score(pts), np.einsum("pi,ij,pj->p", X[:5], M, X[5:10]))
        np.testing.assert_allclose(metric.pairwise_similarity(X[:3], X[:4]),
                                   X[:3] @ M @ X[:4].T)
        np.testing.assert_array_equal(metric.get_bilinear_matrix(), M)
    else:
        assert isinstance(metric, MahalanobisMetric)
        Z = metric.transform(X)
        pts = np.stack([X[:5], X[5:10]], axis=1)
        dist = metric.pair_distance(pts)
        np.testing.assert_allclose(dist, np.linalg.norm(Z[:5] - Z[5:10], axis=1),
                                   rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(metric.pair_score(pts), -dist)
        fn = metric.get_metric()
        assert fn(X[0], X[5], squared=True) == pytest.approx(
            float((X[0] - X[5]) @ metric.get_mahalanobis_matrix() @ (X[0] - X[5])),
            rel=1e-10, abs=1e-14)
        # integer pairs through a preprocessor
        by_index = dp.metric(M, preprocessor=X).pair_distance([[0, 5], [1, 6]])
        np.testing.assert_allclose(by_index, dist[:2], rtol=1e-12)


def test_add_term_changes_the_problem_not_the_family_objective(iris):
    _, dp, _ = _fitted_and_declared(iris, "qwise")
    base = dp.solve(solver="CLARABEL", **CLARABEL)
    dp.add_term(10.0 * cp.sum_squares(dp.M))
    value = dp.solve(solver="CLARABEL", **CLARABEL)
    M = dp.matrix()
    assert value == pytest.approx(dp.objective(M) + 10.0 * np.sum(M * M), rel=1e-6)
    assert dp.objective(M) >= base * (1 - 1e-8)


@pytest.mark.parametrize("name, key, values", [
    ("qwise-eq11", "C_q", (1.0, 3.0)),
    ("qwise-eq11", "u", (1.0, 0.5)),
    ("slr", "delta1", (1.0, 2.0)),
    ("constraintdml", "lam", (2.0, 0.25)),
])
def test_parameters_are_dpp(iris, name, key, values):
    """A new parameter value changes the solution without recompiling, and
    the family's objective and certificate follow it."""
    X, y = iris
    _, dp, est = _fitted_and_declared(iris, name)
    dp.solve(solver="CLARABEL", **CLARABEL)
    program = dp.problem._cache.param_prog
    assert program is not None
    M0 = dp.matrix()
    dp.set_parameters(**{key: values[1]})
    value = dp.solve(solver="CLARABEL", **CLARABEL)
    assert dp.problem._cache.param_prog is program  # not recompiled
    assert not np.allclose(dp.matrix(), M0, rtol=1e-4, atol=1e-6)
    # the same as a problem declared with the new value from the start
    est2 = est.set_params(**{key: values[1]})
    _, args, kwargs = _cases(X, y)[name]
    fresh = est2.declared_problem(*args, **kwargs)
    assert value == pytest.approx(fresh.solve(solver="CLARABEL", **CLARABEL), rel=1e-6)
    assert dp.objective() == pytest.approx(value, rel=1e-6)
    assert dp.certificate().passed
    # directly through .value: the family data follow too
    dp.parameters[key].value = values[0]
    value0 = dp.solve(solver="CLARABEL", **CLARABEL)
    assert dp.objective() == pytest.approx(value0, rel=1e-6)
    assert dp.certificate().passed


def test_mmc_declared_in_the_users_units(iris):
    """The MMC declaration is the printed Eq. 2 on X itself: scaling X by s
    scales the optimal M by 1 / s^2, the value not at all."""
    X, y = iris
    rng = np.random.RandomState(1)
    pairs, lab = _pairs(y, rng)
    values, mats = [], []
    for s in (1.0, 4.0):
        dp = MMC(preprocessor=s * X).declared_problem(pairs, lab)
        assert set(dp.constraints) == {"dissimilar", "psd"}
        values.append(dp.solve(solver="CLARABEL", **CLARABEL))
        mats.append(dp.matrix())
    assert values[1] == pytest.approx(values[0], rel=1e-6)
    # M / 16 on 4 X is the metric M on X: the same value
    assert dp.objective(mats[0] / 16.0) == pytest.approx(values[0], rel=1e-6)
    assert dp.certificate(mats[0] / 16.0).passed


def test_supervised_same_sample_as_fit(iris):
    X, y = iris
    rs = np.random.RandomState(5)
    est = MMCSupervised(n_constraints=30, random_state=rs)
    dp = est.declared_problem(X, y)
    fitted = est.fit(X, y)  # the RandomState instance was not advanced
    assert dp.solve(solver="CLARABEL", **CLARABEL) == pytest.approx(
        fitted.objective_, rel=1e-6)


@pytest.mark.parametrize("name", CASES)
def test_default_solve_is_the_certified_path(iris, name):
    # solve() with no solver: Clarabel tight (SCS fallback), accepted only
    # when the family's certificate passes -- the exact paths' contract
    fitted, dp, _ = _fitted_and_declared(iris, name)
    value = dp.solve()
    cert = dp.certificate()
    assert cert.passed, (cert.rel_gap, cert.max_violation)
    assert cert.solver in ("CLARABEL", "SCS")
    assert value == pytest.approx(fitted.objective_, rel=1e-6)
    assert dp.objective() == pytest.approx(fitted.objective_, rel=1e-6)


def test_default_solve_of_a_modified_problem(iris):
    fitted, dp, _ = _fitted_and_declared(iris, "mmc")
    assert not dp.modified
    M0 = fitted.get_mahalanobis_matrix()
    bound = 0.5 * float(np.trace(M0))
    dp.add_constraint("trace", cp.trace(dp.M) <= bound)
    assert dp.modified
    value = dp.solve()
    assert dp.problem.status == cp.OPTIMAL
    assert np.trace(dp.matrix()) <= bound * (1 + 1e-6)
    # the tighter feasible set cannot do better than the declared optimum
    assert value >= fitted.objective_ * (1 - 1e-6)


def test_certificate_before_solve_warns(iris):
    _, dp, _ = _fitted_and_declared(iris, "mmc")
    with pytest.warns(UserWarning, match="not solved"):
        cert = dp.certificate()
    assert not cert.passed and cert.dual_bound == -np.inf


def test_certificate_without_multipliers_says_so(iris):
    _, dp, _ = _fitted_and_declared(iris, "qwise")
    d = dp.n_features
    with pytest.warns(UserWarning, match="no dual multipliers"):
        cert = dp.certificate(np.eye(d))
    assert cert.dual_bound == -np.inf and not cert.passed
    assert cert.objective == pytest.approx(dp.objective(np.eye(d)))


def test_infeasible_raises(iris):
    X, _ = iris
    # a cannot-link of identical points: d_A = 0 < 1 for every A
    dp = ConstraintDML(preprocessor=X).declared_problem([[0, 1], [2, 2]], [1, -1])
    with pytest.raises(InfeasibleError, match="cannot-link"):
        dp.solve(solver="CLARABEL")


def test_not_solved(iris):
    _, dp, _ = _fitted_and_declared(iris, "mmc")
    with pytest.raises(ValueError, match=r"^M: has no value"):
        dp.matrix()


def test_solver_error_is_the_package_error(iris):
    _, dp, _ = _fitted_and_declared(iris, "qwise")
    with pytest.raises(SolverError):
        dp.solve(solver="CLARABEL", max_iter=1)


def _no_array(message):
    return not re.search(r"\[\s*-?\d+\.\d+\s+-?\d", message)


@pytest.mark.parametrize("call, arg", [
    (lambda dp: dp.solve(solver="NOT_A_SOLVER"), "solver"),
    (lambda dp: dp.objective(np.ones((3, 3))), "M"),
    (lambda dp: dp.objective(np.full((4, 4), np.nan)), "M"),
    (lambda dp: dp.certificate(np.ones(4)), "M"),
    (lambda dp: dp.metric(np.ones((2, 5))), "M"),
    (lambda dp: dp.set_parameters(C_q=-1.0), "C_q"),
    (lambda dp: dp.set_parameters(u=5.0), "u, l"),
    (lambda dp: dp.set_parameters(nope=1.0), "nope"),
    (lambda dp: dp.add_constraint("quadruplets", dp.M[0, 0] <= 1), "name"),
    (lambda dp: dp.add_constraint("x", "M <= 1"), "constraint"),
    (lambda dp: dp.add_term(dp.M), "expression"),
])
def test_bad_input_names_the_argument(iris, call, arg):
    _, dp, _ = _fitted_and_declared(iris, "qwise-eq11")
    with pytest.raises(ValueError) as info:
        call(dp)
    message = str(info.value)
    assert message.startswith(f"{arg}:"), message
    assert _no_array(message), message


def test_bad_input_other_families(iris):
    X, y = iris
    dp = SLR().declared_problem(X[:20], y[:20])
    with pytest.raises(ValueError, match=r"^delta1, delta2:"):
        dp.set_parameters(delta1=-1.0)
    dp = MMC(preprocessor=X, diagonal=True).declared_problem([[0, 1], [2, 3]], [1, -1])
    with pytest.raises(ValueError, match=r"^M: the problem is diagonal") as info:
        dp.objective(np.ones((4, 4)))
    assert _no_array(str(info.value))
    dp = ConstraintDML(preprocessor=X).declared_problem([[0, 1], [2, 3]], [1, -1])
    with pytest.raises(ValueError, match=r"^lam:"):
        dp.set_parameters(lam=-1.0)
    with pytest.raises(ValueError, match=r"^M: a Mahalanobis matrix is symmetric"):
        MahalanobisMetric(np.array([[1.0, 2.0], [0.0, 1.0]])).fit()


@pytest.mark.parametrize("make, args, arg", [
    (lambda X: Qwise(preprocessor=X), ([[0, 1, 2, 3]],), "y"),
    (lambda X: Qwise(preprocessor=X), ([[0, 1, 2, 300]], None), "quadruplets"),
    (lambda X: Qwise(preprocessor=X, C_q=-1.0), ([[0, 1, 2, 3]], None), "C_q"),
    (lambda X: MMC(preprocessor=X), ([[0, 1], [2, 3]], [1, 0]), "y"),
    (lambda X: MMCSupervised(), ("X", "one class"), "y"),
    (lambda X: ConstraintDML(preprocessor=X), ([[0, 1], [2, 3]], [1, 2]), "y"),
    (lambda X: ConstraintDMLSupervised(lam=-1.0), ("X", "y"), "lam"),
    (lambda X: SLR(delta1=0.0, delta2=1.0), ("X", "y"), "delta1, delta2"),
])
def test_estimator_validates_like_fit(iris, make, args, arg):
    X, y = iris
    named = {"X": X, "y": y, "one class": np.zeros(len(y))}
    args = tuple(named[a] if isinstance(a, str) and a in named else a for a in args)
    if arg == "y" and len(args) == 1:  # Qwise: y given positionally is refused
        args = (args[0], np.ones(1))
    with pytest.raises(ValueError) as info:
        make(X).declared_problem(*args)
    message = str(info.value)
    assert re.match(rf"^(The )?'?{re.escape(arg)}", message) or \
        message.startswith(f"{arg}:") or f"'{arg}' parameter" in message, message
    assert _no_array(message), message


def test_metric_objects_standalone():
    metric = MahalanobisMetric(np.diag([4.0, 1.0])).fit()
    np.testing.assert_allclose(metric.pair_distance([[[0.0, 0.0], [1.0, 0.0]]]), [2.0])
    np.testing.assert_allclose(np.sort(np.abs(metric.transform([[1.0, 1.0]]))),
                               [[1.0, 2.0]])
    bil = BilinearMetric(np.array([[1.0, 2.0], [0.0, 1.0]])).fit()
    np.testing.assert_allclose(bil.pair_score([[[1.0, 0.0], [0.0, 1.0]]]), [2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bil.pairwise_similarity([[1.0, 0.0]]).shape == (1, 1)


def test_metric_objects_init_only_stores():
    # scikit-learn's convention: __init__ stores its arguments, fit() works
    bad = MahalanobisMetric(np.array([[1.0, 2.0], [0.0, 1.0]]))
    assert not hasattr(bad, "components_")
    assert not hasattr(BilinearMetric(np.eye(2)), "bilinear_matrix_")

"""The declared problems of the Qwise vector model (Eq. 14, Eq. 27-30), the
structural Qwise (Eq. 16) and OMDML (Eq. 3 at a fixed theta): the contract
of cvxmetric.model, as tests/test_model.py checks it for the other families.

For each: the certified ``solve()`` reaches the exact ``objective_`` and
its certificate passes; the problem is DPP and its hyperparameters are
validated ``cp.Parameter``; a constraint can be added; the metric goes back
to a fitted metric object.
"""

import warnings

import cvxpy as cp
import numpy as np
import pytest
from scipy.linalg import block_diag
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.preprocessing import StandardScaler

from cvxmetric import (
    OMDML,
    DeclaredProblem,
    QwiseStructural,
    QwiseStructuralSupervised,
    QwiseVector,
    QwiseVectorSupervised,
    formulation,
    pairs_from_labels,
    quadruplets_from_labels,
    triplets_from_labels,
)

pytestmark = pytest.mark.filterwarnings("ignore:Solution may be inaccurate")

CLARABEL = {"tol_gap_abs": 1e-9, "tol_gap_rel": 1e-9, "tol_feas": 1e-9,
            "tol_ktratio": 1e-7}


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    idx = np.random.RandomState(0).choice(150, 45, replace=False)
    return X[idx], y[idx]


def _cases(X, y):
    quads = quadruplets_from_labels(y, 40, random_state=0)
    triplets = triplets_from_labels(y, 40, random_state=0)
    pairs, lab = pairs_from_labels(y, 20, random_state=0)
    with_pairs = {"pairs": pairs, "pair_labels": lab}
    views2 = [X[:, :2], X[:, 2:]]
    views3 = [X[:, :1], X[:, 1:3], X[:, 3:]]
    return {
        "qwise_vector": (QwiseVector(preprocessor=X), (quads,), with_pairs),
        "qwise_vector-huber": (QwiseVector(preprocessor=X, loss="huber", C_p=2.0),
                               (quads,), with_pairs),
        "qwise_vector-linear": (QwiseVector(preprocessor=X, psi="linear"), (quads,),
                                with_pairs),
        "qwise_vector-no-pairs": (QwiseVector(preprocessor=X), (quads,), {}),
        "qwise_vector-supervised": (
            QwiseVectorSupervised(n_constraints=40, random_state=0), (X, y), {}),
        "qwise_vector-supervised-huber": (
            QwiseVectorSupervised(n_constraints=40, random_state=0, loss="huber"),
            (X, y), {}),
        "qwise_structural": (QwiseStructural(preprocessor=X, solver="exact"),
                             (quads,), {}),
        "qwise_structural-triplets-frobenius": (
            QwiseStructural(preprocessor=X, reading="triplets", regularizer="frobenius",
                            solver="exact", C=2.0), (triplets,), {}),
        "qwise_structural-supervised": (
            QwiseStructuralSupervised(n_constraints=40, random_state=0, solver="exact"),
            (X, y), {}),
        "omdml": (OMDML(solver="exact"), (views2, triplets), {}),
        "omdml-theta": (OMDML(solver="exact", theta=[0.2, 0.3, 0.5], C=2.0),
                        (views3, triplets), {}),
    }


CASES = list(_cases(np.zeros((6, 4)), np.array([0, 0, 0, 1, 1, 1])))


def _declared(iris, name):
    X, y = iris
    est, args, kwargs = _cases(X, y)[name]
    fitted = clone(est).fit(*args, **kwargs)
    dp = est.declared_problem(*args, **kwargs)
    return fitted, dp, est


def _fitted_matrix(fitted):
    """The fitted metric as the declared problem's ``metric()`` holds it."""
    if isinstance(fitted, OMDML):
        return block_diag(*[t * M for t, M in zip(fitted.theta_, fitted.metrics_)])
    return fitted.get_mahalanobis_matrix()


@pytest.mark.parametrize("name", CASES)
def test_certified_solve_is_the_exact_objective(iris, name):
    fitted, dp, est = _declared(iris, name)
    assert isinstance(dp, DeclaredProblem)
    assert dp.family == name.split("-")[0]
    assert dp.equation.startswith("Eq. ")
    assert dp.problem.is_dpp()
    assert dp.parameters and all(isinstance(p, cp.Parameter)
                                 for p in dp.parameters.values())
    assert not dp.modified
    assert not hasattr(est, "objective_")  # declared_problem fits nothing
    value = dp.solve()  # the package's certified path
    cert = dp.certificate()
    assert cert.passed, (cert.rel_gap, cert.max_violation)
    assert cert.solver in ("CLARABEL", "SCS")
    assert value == pytest.approx(fitted.objective_, rel=1e-6)
    assert dp.objective() == pytest.approx(fitted.objective_, rel=1e-6)
    assert dp.problem.value == pytest.approx(fitted.objective_, rel=1e-6)


@pytest.mark.parametrize("name", CASES)
def test_metric_round_trips(iris, name):
    X, _ = iris
    fitted, dp, _ = _declared(iris, name)
    dp.solve()
    metric = dp.metric()
    G = metric.get_mahalanobis_matrix()
    want = _fitted_matrix(fitted)
    scale = np.max(np.abs(want))
    assert np.allclose(G, want, atol=1e-5 * scale)
    # the same metric from the matrix handed back explicitly
    assert np.allclose(dp.metric(dp.matrix()).get_mahalanobis_matrix(), G)
    if isinstance(fitted, OMDML):
        views = _cases(*iris)[name][1][0]
        Xc, pairs = np.hstack(views), np.array([[0, 1], [2, 30], [5, 44]])
        assert np.allclose(metric.pair_distance(Xc[pairs]) ** 2,
                           fitted.pair_distance(views, pairs), rtol=1e-4)
        assert all(np.allclose(a, b, atol=1e-5 * scale)
                   for a, b in zip(dp.metrics(), fitted.metrics_))
    else:
        assert metric.transform(X).shape == (X.shape[0], X.shape[1])


# (case, parameter, new value, a value refused)
PARAMETERS = [
    ("qwise_vector", "C_q", 3.0, -1.0),
    ("qwise_vector", "C_p", 0.25, -0.5),
    ("qwise_vector-supervised-huber", "C_q", 0.5, -1.0),
    ("qwise_structural", "C", 0.3, 0.0),
    ("omdml", "C", 4.0, -1.0),
    ("omdml-theta", "theta", np.array([0.6, 0.2, 0.2]), np.array([0.6, 0.6, 0.6])),
]


@pytest.mark.parametrize("name, key, value, bad", PARAMETERS)
def test_parameters_are_dpp_and_validated(iris, name, key, value, bad):
    X, y = iris
    _, dp, est = _declared(iris, name)
    old = dp.solve(solver="CLARABEL", **CLARABEL)
    program = dp.problem._cache.param_prog
    M0 = dp.matrix()
    with pytest.raises(ValueError, match=f"^{key}: "):
        dp.set_parameters(**{key: bad})
    # a refused value leaves the problem unchanged
    assert dp.objective(M0) == pytest.approx(dp.problem.value, rel=1e-6)
    with pytest.raises(ValueError, match="^bogus: not a parameter"):
        dp.set_parameters(bogus=1.0)
    dp.set_parameters(**{key: value})
    new = dp.solve(solver="CLARABEL", **CLARABEL)
    assert dp.problem._cache.param_prog is program  # not recompiled
    assert new != pytest.approx(old, rel=1e-4)
    assert dp.objective() == pytest.approx(new, rel=1e-6)
    # the same as the problem declared and fitted with that value
    _, args, kwargs = _cases(X, y)[name]
    est2 = clone(est).set_params(**{key: value})
    assert new == pytest.approx(est2.fit(*args, **kwargs).objective_, rel=1e-6)
    fresh = est2.declared_problem(*args, **kwargs)
    assert new == pytest.approx(fresh.solve(solver="CLARABEL", **CLARABEL), rel=1e-6)
    # the certified path on the new value, and its certificate
    assert dp.solve() == pytest.approx(new, rel=1e-6)
    assert dp.certificate().passed


def _cap(dp):
    """A constraint that cuts the declared optimum off."""
    if dp.family == "qwise_vector" and dp.data.psi == "linear":
        w = dp.variables["w"]
        return w[0] <= 0.5 * float(w.value[0]) if w.value[0] > 0 else \
            w[0] >= 0.5 * float(w.value[0])
    tr = float(np.trace(dp.matrix()))
    return cp.trace(dp.M) <= 0.5 * tr


@pytest.mark.parametrize("name", CASES)
def test_add_constraint(iris, name):
    _, dp, _ = _declared(iris, name)
    base = dp.solve()
    dp.add_constraint("cap", _cap(dp))
    assert dp.modified
    assert "cap" in dp.constraints and "cap" not in dp.declared_constraints
    assert dp.problem.is_dpp()
    value = dp.solve()  # a modified problem: the first solver reporting optimal
    assert dp.problem.status == cp.OPTIMAL
    assert dp.constraints["cap"].violation().max() <= 1e-6
    assert value >= base * (1 - 1e-6)
    assert dp.objective() >= base * (1 - 1e-6)


@pytest.mark.parametrize("name, warns", [
    ("qwise_vector", True), ("qwise_vector-huber", False),
    ("qwise_structural", True), ("omdml", False),
])
def test_certificate_before_a_solve(iris, name, warns):
    """Eq. 14's and Eq. 16's bounds need the multipliers of a solve (a
    warning, no bound); the smoothed Eq. 27 and OMDML bound the optimum
    from the point's own multipliers."""
    _, dp, _ = _declared(iris, name)
    with pytest.warns(UserWarning, match="not solved"):
        assert not dp.certificate().passed
    M = np.eye(dp.n_features)
    if warns:
        with pytest.warns(UserWarning, match="no dual multipliers"):
            cert = dp.certificate(M)
        assert cert.dual_bound == -np.inf
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            cert = dp.certificate(M)
        assert np.isfinite(cert.dual_bound)
        assert cert.dual_bound <= cert.objective
    assert not cert.passed
    assert cert.objective == pytest.approx(dp.objective(M))


def test_supervised_same_sample_as_fit(iris):
    X, y = iris
    for make in (lambda rs: QwiseVectorSupervised(n_constraints=30, random_state=rs),
                 lambda rs: QwiseStructuralSupervised(n_constraints=30, random_state=rs,
                                                      solver="exact")):
        rs = np.random.RandomState(5)
        est = make(rs)
        dp = est.declared_problem(X, y)
        fitted = est.fit(X, y)  # the RandomState instance was not advanced
        assert dp.solve() == pytest.approx(fitted.objective_, rel=1e-6)


def test_vector_linear_point_is_w(iris):
    fitted, dp, _ = _declared(iris, "qwise_vector-linear")
    with pytest.raises(ValueError, match="^M: with psi='linear'"):
        _ = dp.M
    dp.solve()
    w = dp.variables["w"].value
    assert np.allclose(dp.matrix(), np.outer(w, w))
    # w itself is the point; w w^T only as the solved one (its sign is lost)
    assert dp.objective(w) == pytest.approx(fitted.objective_, rel=1e-6)
    assert dp.objective(dp.matrix()) == pytest.approx(fitted.objective_, rel=1e-6)
    with pytest.raises(ValueError, match="^M: with psi='linear'"):
        dp.objective(np.outer(-w, -w) + np.eye(w.size))
    with pytest.raises(ValueError, match="^M: expected"):
        dp.objective(np.ones(3))


def test_omdml_block_diagonal_matrix(iris):
    _, dp, _ = _declared(iris, "omdml-theta")
    dp.solve()
    M = dp.matrix()
    assert M.shape == (4, 4)
    assert np.allclose(M, block_diag(*dp.metrics()))
    bad = M.copy()
    bad[0, 3] = bad[3, 0] = 1.0
    with pytest.raises(ValueError, match="^M: expected the block-diagonal"):
        dp.objective(bad)
    assert dp.metric_keys == ("M_0", "M_1", "M_2")
    assert set(dp.constraints) == {"hinge", "psd_0", "psd_1", "psd_2"}


@pytest.mark.parametrize("make, args, arg", [
    (lambda X: QwiseVector(preprocessor=X), ({"a": [[0, 1, 2, 3]]},), "quadruplets"),
    (lambda X: QwiseVector(preprocessor=X), ([[0, 1, 2, 3]], [1]), "y"),
    (lambda X: QwiseStructural(preprocessor=X), ([[0, 1, 2]],), "quadruplets"),
    (lambda X: OMDML(theta=[0.5, 0.5]), ([[[0.0], [1.0], [2.0]]], [[0, 1, 2]]), "theta"),
    (lambda X: OMDML(), ([np.zeros((3, 1))], [[0, 1, 5]]), "triplets"),
])
def test_declared_problem_validates_like_fit(iris, make, args, arg):
    X, _ = iris
    with pytest.raises(ValueError, match=f"^{arg}"):
        make(X).declared_problem(*args)
    with pytest.raises(ValueError, match=f"^{arg}"):
        make(X).fit(*args)


@pytest.mark.parametrize("name", ["qwise_vector", "qwise_structural", "omdml"])
def test_registry_names_the_declaration(name):
    assert formulation(name).load("declared").__name__.startswith("declared")


def test_omdml_page_example(docs_helpers):
    """The declared-problem example of docs/omdml/formulation.md prints what it shows."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "omdml" / "formulation.md").read_text()
    start = text.index("OMDML has one metric per view")
    section = text[start:text.index("\n## ", start)]
    pairs = docs_helpers.python_text_pairs(section, "docs/omdml/formulation.md")
    assert len(pairs) == 1
    code, expected = pairs[0]
    got = docs_helpers.run_code(code, "docs/omdml/formulation.md (declaration)")
    want = expected.splitlines()
    assert len(got) == len(want), "\n".join(got)
    for g, w in zip(got, want):
        assert docs_helpers.same_numbers(g, w, 1e-4), (g, w)

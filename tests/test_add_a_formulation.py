"""docs/add_a_formulation.md, executed end to end, and what it claims.

The page's ```python blocks run in order in one namespace (they build on
each other) and each must print the ```text block after it.  The
formulation it defines is then checked on its own terms: its dual bound is
below the objective of every feasible point (weak duality, on random
instances and random dual points), its certified optimum is that of an
independently written CVXPY problem, its certificate fails off the
optimum, and its estimator follows scikit-learn's conventions.  The
registry's ``register`` / ``unregister`` / ``registered`` are checked here
too.
"""

import contextlib
import io
import warnings
from pathlib import Path

import cvxpy as cp
import numpy as np
import pytest
from sklearn.base import clone

from cvxmetric import Formulation, Method, formulation, formulations
from cvxmetric._tolerances import EXACT_GAP
from cvxmetric.formulations import (SUITE_INPUTS, catalogued, register, registered,
                                    unregister)
from cvxmetric.model import DeclaredProblem

DOC = Path(__file__).resolve().parents[1] / "docs" / "add_a_formulation.md"
NAME = "sparse_pairs"
CATALOGUE = [f.name for f in formulations()]


def _examples(docs_helpers):
    return docs_helpers.python_text_pairs(DOC.read_text(), "docs/add_a_formulation.md")


@pytest.fixture(scope="module")
def tutorial(docs_helpers):
    """Run the page: ``(namespace, printed lines of each block)``; the
    formulation is unregistered afterwards even when a block fails."""
    namespace = {"__name__": "__docs_example__"}
    printed = []
    try:
        for k, (code, _) in enumerate(_examples(docs_helpers)):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(code, f"docs/add_a_formulation.md example {k + 1}",
                             "exec"), namespace)
            printed.append(out.getvalue().splitlines())
    finally:
        if NAME in [f.name for f in formulations()]:
            unregister(NAME)
    return namespace, printed


def test_the_page_has_its_examples(docs_helpers):
    assert len(_examples(docs_helpers)) == 8


@pytest.mark.parametrize("k", range(8))
def test_each_example_prints_what_the_page_shows(tutorial, docs_helpers, k):
    want = _examples(docs_helpers)[k][1].splitlines()
    got = tutorial[1][k]
    assert len(got) == len(want), (got, want)
    for g, w in zip(got, want):
        # printed decimals agree to EXACT_GAP (or the last printed digit)
        assert docs_helpers.same_numbers(g, w, EXACT_GAP), (g, w)


def test_the_registry_and_the_collection_are_left_as_they_were(tutorial):
    from cvxmetric import collection

    assert [f.name for f in formulations()] == CATALOGUE
    assert NAME not in collection.FAMILIES and NAME not in collection.METHODS
    with pytest.raises(ValueError, match="^name: unknown formulation"):
        formulation(NAME)


def test_the_architecture_page_links_the_tutorial():
    text = (DOC.parent / "architecture.md").read_text()
    assert "(add_a_formulation.md)" in text


# ---------------------------------------------------------------------------
# The formulation of the page, on its own terms
# ---------------------------------------------------------------------------


def _instance(seed, n=12, d=3, n_pairs=30):
    """Random samples, pairs, labels and hyperparameters."""
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 2.0, size=d)
    i = rng.randint(n, size=n_pairs)
    j = (i + 1 + rng.randint(n - 1, size=n_pairs)) % n
    labels = np.where(rng.rand(n_pairs) < 0.5, 1, -1)
    hp = {"lam": rng.uniform(0.05, 1.0), "mu": rng.uniform(0.0, 0.3),
          "b": rng.uniform(0.5, 3.0)}
    return X, np.column_stack([i, j]), labels, hp


def _random_psd(rng, d, scale=1.0):
    B = rng.normal(size=(d, d))
    return scale * B @ B.T / d


def _independent_optimum(data):
    """The problem written again, independently: hinge by ``cp.pos``, no
    slacks; ``(objective at the returned point, the point)``."""
    P, d = data.phi.shape
    M = cp.Variable((d, d), PSD=True)
    D = cp.hstack([cp.quad_form(data.phi[p], M) for p in range(P)])
    F = (data.lam / 2 * cp.sum_squares(M) + data.mu * cp.sum(cp.abs(M))
         + cp.sum(cp.pos(1 + cp.multiply(data.y, D - data.b))) / P)
    cp.Problem(cp.Minimize(F)).solve(solver="CLARABEL")
    Mv = 0.5 * (M.value + M.value.T)
    w, V = np.linalg.eigh(Mv)
    Mv = (V * np.maximum(w, 0.0)) @ V.T  # exactly feasible
    return data.objective(Mv), Mv


@pytest.mark.parametrize("seed", range(4))
def test_the_bound_is_below_every_feasible_objective(tutorial, seed):
    """Weak duality: g(a, Z) <= F(M) for every dual point of the boxes and
    every PSD M -- random ones and the independent solver's point."""
    Data = tutorial[0]["SparsePairsData"]
    X, pairs, labels, hp = _instance(seed)
    data = Data(X, pairs, labels, **hp)
    rng = np.random.RandomState(100 + seed)
    f_opt, M_opt = _independent_optimum(data)
    for _ in range(30):
        M = _random_psd(rng, X.shape[1], rng.uniform(0.01, 2.0))
        a = rng.uniform(-0.5, 1.5, size=len(labels))  # clipped by the bound
        S = _random_psd(rng, X.shape[1], rng.uniform(0.0, 1.0))
        bound = data.dual_bound(M, a, S)
        roundoff = 1e-12 * max(1.0, abs(f_opt))
        assert bound <= data.objective(M) + roundoff
        assert bound <= f_opt + roundoff
        assert data.dual_bound(M_opt, a, S) <= f_opt + roundoff


@pytest.mark.parametrize("seed", range(4))
def test_the_certified_optimum_is_the_independent_one(tutorial, seed):
    ns = tutorial[0]
    X, pairs, labels, hp = _instance(seed)
    data = ns["SparsePairsData"](X, pairs, labels, **hp)
    result = ns["solve_exact"](data)
    assert result.status == "optimal" and result.certificate.passed
    assert result.certificate.rel_gap <= EXACT_GAP
    assert result.certificate.dual_bound <= result.objective
    f_ind, _ = _independent_optimum(data)
    assert abs(result.objective - f_ind) / max(1.0, abs(f_ind)) <= EXACT_GAP
    assert [(s.name, s.kind) for s in result.trace][0] == ("CLARABEL", "conic")


@pytest.mark.parametrize("seed", range(4))
def test_the_certificate_fails_off_the_optimum(tutorial, seed):
    """Strong convexity: F(M* + E) - F* >= lam/2 ||E||^2, and every bound is
    at most F*; a perturbation with that margin above the tolerance fails,
    whatever multipliers the certificate is given."""
    ns = tutorial[0]
    X, pairs, labels, hp = _instance(seed)
    data = ns["SparsePairsData"](X, pairs, labels, **hp)
    dp = ns["declared_problem"](data)
    dp.solve()
    assert dp.certificate().passed
    M = dp.matrix()
    rng = np.random.RandomState(200 + seed)
    for _ in range(5):
        E = _random_psd(rng, X.shape[1])  # PSD: M + E stays feasible
        f = data.objective(M + E)
        E *= np.sqrt(4 * EXACT_GAP * max(1.0, f) / data.lam) / np.linalg.norm(E)
        assert data.lam / 2 * np.sum(E * E) > EXACT_GAP * max(1.0, data.objective(M + E))
        assert not dp.certificate(M + E).passed
        assert not data.certificate(M + E, np.ones(len(labels)),
                                    np.zeros_like(M)).passed


def test_no_certificate_before_a_solve(tutorial):
    ns = tutorial[0]
    X, pairs, labels, hp = _instance(0)
    dp = ns["declared_problem"](ns["SparsePairsData"](X, pairs, labels, **hp))
    with pytest.warns(UserWarning, match="not solved"):
        assert not dp.certificate().passed
    with pytest.warns(UserWarning, match="no dual multipliers"):
        assert not dp.certificate(np.eye(X.shape[1])).passed


@pytest.mark.parametrize("bad, match", [
    ({"lam": 0.0}, "^lam: "), ({"lam": np.nan}, "^lam: "), ({"mu": -1.0}, "^mu: "),
    ({"b": np.inf}, "^b: "), ({"lam": True}, "^lam: ")])
def test_hyperparameters_are_validated(tutorial, bad, match):
    X, pairs, labels, _ = _instance(0)
    with pytest.raises(ValueError, match=match):
        tutorial[0]["SparsePairsData"](X, pairs, labels, **bad)


def test_the_estimator_follows_scikit_learn(tutorial):
    ns = tutorial[0]
    X, pairs, labels, hp = _instance(1)
    est_cls = ns["SparsePairs"]
    with registered(ns["f"]):
        est = est_cls(preprocessor=X, **hp)
        assert est.get_params() == {**hp, "preprocessor": X}
        copy = clone(est).set_params(mu=0.0)
        assert copy.get_params()["mu"] == 0.0 and est.mu == hp["mu"]
        est.fit(pairs, labels)
        exact = ns["solve_exact"](ns["SparsePairsData"](X, pairs, labels, **hp))
        assert est.status_ == "optimal" and est.certificate_.passed
        assert abs(est.objective_ - exact.objective) <= EXACT_GAP * max(
            1.0, abs(exact.objective))
        M = est.get_mahalanobis_matrix()
        assert np.allclose(est.transform(X), X @ est.components_.T)
        diff = X[pairs[:, 0]] - X[pairs[:, 1]]
        assert np.allclose(est.pair_distance(pairs) ** 2,
                           np.einsum("pi,ij,pj->p", diff, M, diff))
        assert set(est.predict(pairs)) <= {-1, 1}
        assert est.result_.trace and est.result_.trace[0].name == "CLARABEL"
        dp = est.declared_problem(pairs, labels)
        assert isinstance(dp, DeclaredProblem) and dp.family == NAME
        with pytest.raises(ValueError, match="^lam: "):
            clone(est).set_params(lam=-1.0).fit(pairs, labels)
        with pytest.raises(ValueError, match="^y: "):
            clone(est).fit(pairs, labels[:-1])
    with pytest.raises(ValueError, match="^name: unknown formulation"):
        clone(est).fit(pairs, labels)  # no longer registered


# ---------------------------------------------------------------------------
# register / unregister / registered
# ---------------------------------------------------------------------------


def _entry(name="toy_formulation", **kw):
    kw.setdefault("suite", False)
    return Formulation(name, "a paper", "Eq. 1", ("Toy",), data=dict,
                       methods=(Method("exact", {}, "exact"),), **kw)


def test_register_adds_after_the_catalogue_and_unregister_removes():
    entry = _entry(exact=len)
    assert register(entry) is entry
    try:
        assert formulations()[-1] is entry and formulation(entry.name) is entry
        assert [f.name for f in formulations()[:-1]] == CATALOGUE
        # objects are returned as they are, strings imported
        assert entry.load("data") is dict and entry.load("exact") is len
        with pytest.raises(ValueError, match="^declared: "):
            entry.load("declared")
    finally:
        assert unregister(entry.name) is entry
    assert [f.name for f in formulations()] == CATALOGUE
    assert formulation("mmc").load("exact").__name__ == "solve_exact"


@pytest.mark.parametrize("name", ["mmc", "qwise"])
def test_a_catalogue_name_is_taken(name):
    with pytest.raises(ValueError, match=f"^formulation: the name '{name}' is taken"):
        register(_entry(name))
    with pytest.raises(ValueError, match="^name: .* catalogue"):
        unregister(name)


def test_a_registered_name_is_taken_until_unregistered():
    with registered(_entry()), pytest.raises(ValueError, match="unregister it first"):
        register(_entry())
    register(_entry())  # free again
    unregister("toy_formulation")
    with pytest.raises(ValueError, match="^name: no formulation 'toy_formulation'"):
        unregister("toy_formulation")


@pytest.mark.parametrize("bad, error, match", [
    ("not a formulation", TypeError, "^formulation: expected a Formulation"),
    (_entry("Bad-Name"), ValueError, "^formulation: invalid name"),
    (_entry("9lives"), ValueError, "^formulation: invalid name")])
def test_register_refuses_what_is_not_a_valid_entry(bad, error, match):
    with pytest.raises(error, match=match):
        register(bad)
    assert [f.name for f in formulations()] == CATALOGUE


def test_registered_unregisters_when_the_block_raises():
    from cvxmetric import collection
    from cvxmetric.collection import FamilySpec, register_family

    with pytest.raises(RuntimeError, match="inside"):
        with registered(_entry()):
            register_family(FamilySpec("toy_formulation", (), {}, None, None, None,
                                       None, None))
            assert "toy_formulation" in collection.FAMILIES
            raise RuntimeError("inside")
    assert [f.name for f in formulations()] == CATALOGUE
    assert "toy_formulation" not in collection.FAMILIES


def test_a_suite_formulation_states_the_data_of_each_estimator():
    class Toy:
        pass

    with pytest.raises(ValueError, match="^suite_data: 'toy_formulation'"):
        Formulation("toy_formulation", "a paper", "Eq. 1", (Toy,), data=dict)
    entry = Formulation("toy_formulation", "a paper", "Eq. 1", (Toy,), data=dict,
                        suite_data={"Toy": SUITE_INPUTS["pairs"]})
    with registered(entry):
        assert formulation("toy_formulation").estimator("Toy") is Toy
        from cvxmetric.bench import conformance

        assert conformance.FAMILIES["toy_formulation"] == ("Toy",)
        assert not catalogued("toy_formulation") and catalogued("mmc")
    assert "toy_formulation" not in conformance.FAMILIES
    assert [f.name for f in formulations()] == CATALOGUE


def test_a_modified_problem_is_not_an_exact_path(tutorial):
    from cvxmetric._extend import certified_result

    ns = tutorial[0]
    X, pairs, labels, hp = _instance(2)
    dp = ns["declared_problem"](ns["SparsePairsData"](X, pairs, labels, **hp))
    dp.add_constraint("trace", cp.trace(dp.M) <= 1.0)
    with warnings.catch_warnings(), pytest.raises(
            ValueError, match="^declared: the problem was modified"):
        warnings.simplefilter("error")
        certified_result(dp)


def test_the_suite_runs_a_registered_formulation_in_this_process(tutorial):
    # a fresh process would not know the formulation: the suite's default
    # (isolated cases) runs its cases here instead, and certifies them
    from cvxmetric.bench import conformance

    with registered(tutorial[0]["f"]):
        rows = conformance.run_suite(datasets=("iris",), seeds=(0,),
                                     families=[NAME])
    assert [(r["method"], r["status"], r["certified"]) for r in rows] == [
        ("exact", "optimal", True)]

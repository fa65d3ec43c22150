"""What MMC's exact path and declared problem take from the fast solvers.

The exact path never imports :mod:`cvxmetric.mmc.fast`: its caller hands it
the warm start of the face reduction and the bound polish (the registry's
``mmc`` entry declares them, ``Formulation.solve_exact`` hands them over).
The declared problem's certificate is pure: the polish is a traced stage of
its certified solve, and ``certificate()`` of the point that solve accepted
is the one it judged.
"""

import ast
from pathlib import Path

import cvxpy as cp
from cvxpy.reductions.solvers.solving_chain import SolvingChain
import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine
from sklearn.preprocessing import StandardScaler

import cvxmetric.mmc.exact as exact
import cvxmetric.mmc.fast as fast
from cvxmetric import MMCSupervised
from cvxmetric._trace import recording
from cvxmetric.formulations import formulation
from cvxmetric.result import CertificateError


@pytest.fixture(scope="module")
def wine():
    """Raw wine, ``MMCSupervised(random_state=2)``'s sample: the bound at
    Clarabel's point leaves a gap, the polish closes it."""
    X, y = load_wine(return_X_y=True)
    return MMCSupervised(random_state=2).declared_problem(X, y).data


def declared(bound_polish=True):
    """Eq. 2 on standardised wine (``random_state=0``), where the certified
    solve polishes the bound at Clarabel's point: the estimator's, or
    built bare."""
    X, y = load_wine(return_X_y=True)
    dp = MMCSupervised(random_state=0).declared_problem(
        StandardScaler().fit_transform(X), y)
    return dp if bound_polish else exact.declared_problem(dp.data)


def polishes(stages):
    return [s for s in stages if s.name == "bound polish"]


def no_solver(monkeypatch):
    """Every solver the certificate could run raises."""
    def refuse(*args, **kwargs):
        raise AssertionError("a solver ran")

    monkeypatch.setattr(fast, "bound_polish", refuse)
    monkeypatch.setattr(fast.MMCProjectedGradient, "run", refuse)
    monkeypatch.setattr(fast.MMCNewton, "run", refuse)
    monkeypatch.setattr(cp.Problem, "solve", refuse)
    # conic_solve runs the solver through the chain, not Problem.solve
    monkeypatch.setattr(SolvingChain, "solve_via_data", refuse)


def test_the_exact_path_does_not_import_the_fast_solvers():
    tree = ast.parse(Path(exact.__file__).read_text())
    imported = {node.module for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom)}
    assert not {"fast", "cvxmetric.mmc.fast"} & imported
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    assert not {"MMCNewton", "MMCProjectedGradient"} & names
    f = formulation("mmc")
    assert f.load("warm_start") is fast.warm_start
    assert f.load("bound_polish") is fast.bound_polish


def test_the_warm_start_runs_only_when_the_face_reduction_wants_it():
    X, y = load_iris(return_X_y=True)
    data = MMCSupervised(random_state=0).declared_problem(
        StandardScaler().fit_transform(X), y).data
    calls = []

    def warm(d):
        calls.append(d)
        return fast.warm_start(d)

    res = exact.solve_exact(data, warm_start=warm)  # small: no face
    assert not calls and "face" not in res.info
    face = exact.solve_exact(data, warm_start=warm, reduce=True)
    assert calls == [data]  # (iris's 4 directions: no smaller face)
    assert abs(face.objective - res.objective) <= 1e-6 * res.objective
    with pytest.raises(ValueError, match="^warm_start: "):
        exact.solve_exact(data, reduce=True)


def test_the_bound_polish_runs_only_when_given_and_needed(wine):
    data = wine
    with recording() as stages:
        res = formulation("mmc").solve_exact(data)
    assert res.certificate.passed and res.certificate.tolerances["bound"] == "polished"
    assert [s.status for s in polishes(stages)] == ["tightened"]
    # bare: the plain certificate judges the point, nothing is polished
    with recording() as stages:
        try:
            bare = exact.solve_exact(data)
            assert "bound" not in bare.certificate.tolerances
        except CertificateError:
            pass
    assert not polishes(stages)


def test_the_declared_certificate_is_pure(monkeypatch):
    dp = declared()
    with recording() as stages:
        value = dp.solve()
    assert [s.status for s in polishes(stages)] == ["tightened"]
    at = stages.index(polishes(stages)[0])
    assert stages[at - 1].kind == "conic"  # after the solve whose point it bounds
    M = dp.matrix()
    no_solver(monkeypatch)
    with recording() as stages:
        cert = dp.certificate()
        again = dp.certificate(M)
    assert not stages
    # the certificate the solve judged: its polished bound, at its point
    assert cert.passed and cert.tolerances["bound"] == "polished"
    assert again.dual_bound == cert.dual_bound and again.rel_gap == cert.rel_gap
    assert dp.objective() == value
    # elsewhere (the same metric, scaled) the plain bound at the point
    plain = dp.certificate(2.0 * M)
    assert "bound" not in plain.tolerances
    assert plain.dual_bound == dp.data.certificate(2.0 * M, solver="").dual_bound
    assert plain.dual_bound < cert.dual_bound


def test_a_bare_declared_problem_judges_by_the_plain_bound():
    dp = declared(bound_polish=False)
    assert dp.bound_polish is None
    with recording() as stages:
        try:
            dp.solve()
        except CertificateError:
            assert not polishes(stages)
            return
    assert not polishes(stages)
    cert = dp.certificate()
    assert cert.passed and "bound" not in cert.tolerances


def test_a_new_solve_establishes_its_own_bound():
    dp = declared()
    dp.solve()
    with recording() as stages:
        dp.solve()
    # polished again, by this solve, at its own point
    assert [s.status for s in polishes(stages)] == ["tightened"]
    cert = dp.certificate()
    assert cert.passed and cert.tolerances["bound"] == "polished"
    dp.solve(solver="CLARABEL")  # a named solver: no polish, no kept bound
    assert "bound" not in dp.certificate().tolerances


@pytest.mark.parametrize("dataset, diagonal", [("wine", False), ("wine", True),
                                               ("iris", True)])
def test_the_declared_problem_is_certified_on_raw_features(dataset, diagonal):
    # on raw features no solver's point of Eq. 2 as printed passes (raw
    # wine: gap 0.56; iris diagonal: 1.2e-6): the declared problem takes
    # the exact path's point, certified on the problem as printed
    X, y = (load_wine if dataset == "wine" else load_iris)(return_X_y=True)
    est = MMCSupervised(diagonal=diagonal, random_state=0)
    dp = est.declared_problem(X, y)
    value = dp.solve()
    cert = dp.certificate()
    assert cert.passed
    assert value == pytest.approx(est.fit(X, y).result_.info["scale_free"], rel=1e-6)
    assert dp.objective() == value


def test_a_modified_problem_is_solved_as_printed_only(monkeypatch):
    # the exact path solves the declared problem, not the user's variant.
    # Units where the optimal M is of order one (trace 3.05): on the
    # standardized features it is of order 1e-5 and a general-purpose
    # solve of the problem as printed ends 1e-6 short of the dissimilar
    # constraint, at the certificate's tolerance; the trace bound binds.
    X, y = load_wine(return_X_y=True)
    X = 0.003 * StandardScaler().fit_transform(X)
    unmodified = MMCSupervised(random_state=0).declared_problem(X, y).solve()
    dp = MMCSupervised(random_state=0).declared_problem(X, y)
    dp.add_constraint("bounded", cp.trace(dp.variable) <= 2.0)
    monkeypatch.setattr(exact, "solve_exact", _raises)
    value = dp.solve()
    assert np.isfinite(value) and value > unmodified * (1 + 1e-3)
    assert np.trace(dp.variable.value) <= 2.0 + 1e-6


def _raises(*args, **kwargs):
    raise AssertionError("the exact path ran")

"""The trace of what ran (cvxmetric._trace): every result says which stages
produced it, in order, with iterations, seconds, the gap after each stage
and why each started."""

import json
import logging

import cvxpy as cp
import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.preprocessing import StandardScaler

import cvxmetric as cm
from cvxmetric._exact import solve_certified
from cvxmetric._trace import Stage, format_trace, record, recording
from cvxmetric.cli import main
from cvxmetric.result import Certificate


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def test_exact_fit_traces_its_conic_solve(iris):
    est = cm.MMCSupervised(random_state=0).fit(*iris)
    trace = est.result_.trace
    assert trace and all(isinstance(s, Stage) for s in trace)
    assert trace[0].why == "first"
    last = trace[-1]
    assert last.kind == "conic" and last.name == "CLARABEL"
    assert last.iterations == est.result_.n_iter > 0
    assert last.gap == pytest.approx(est.certificate_.rel_gap)


def test_fast_fit_traces_its_iterative_solver(iris):
    est = cm.MMCSupervised(solver="fast", random_state=0).fit(*iris)
    # the change of variables (a reduction), then the iterations
    reduction, stage = est.result_.trace
    assert (reduction.name, reduction.kind) == ("whiten", "reduction")
    assert stage.why == "after whiten"
    assert stage.kind == "iterative" and stage.iterations == est.n_iter_
    assert stage.status == "optimal" and stage.gap <= est.certificate_.tol_gap


def test_a_warm_started_exact_fit_lists_both_stages_in_order(iris):
    est = cm.QwiseSupervised(solver="exact", random_state=0).fit(*iris)
    kinds = [s.kind for s in est.result_.trace]
    assert kinds == ["iterative", "conic"]
    assert est.result_.trace[1].why == f"after {est.result_.trace[0].name}"


def test_a_failed_certificate_says_why_the_next_solver_ran():
    x = cp.Variable(2)
    problem = cp.Problem(cp.Minimize(cp.sum_squares(x - 1)), [x >= 0])
    calls = []

    def certify(name, version, opts, times):
        calls.append(name)
        bound = problem.value if name == "SCS" else -np.inf
        return Certificate.from_bound(problem.value, bound, max_violation=0.0,
                                      min_eig=0.0, solver=name)

    with recording() as stages:
        solve_certified(problem, certify, tol=1e-6)
    assert [s.name for s in stages] == ["CLARABEL", "SCS"]
    assert stages[0].why == "first" and "certificate fails" in stages[0].status
    assert stages[1].why.startswith("CLARABEL's certificate failed")
    assert stages[1].gap == 0.0


def test_scopes_nest_and_stages_log_at_info(caplog):
    with caplog.at_level(logging.INFO, logger="cvxmetric"):
        with recording() as outer:
            record("a", "reduction")
            with recording() as inner:
                record("b", "conic", iterations=3, gap=1e-9, status="optimal")
            record("c", "iterative")
    assert [s.name for s in inner] == ["b"]
    assert [s.name for s in outer] == ["a", "b", "c"]
    assert [s.why for s in outer] == ["first", "after a", "after b"]
    assert sum("stage b (conic)" in r.getMessage() for r in caplog.records) == 1
    table = format_trace(outer)
    assert table.splitlines()[0].split()[:3] == ["#", "stage", "kind"]
    assert len(table.splitlines()) == 4


def test_cli_solve_prints_the_trace(capsys):
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    f = sorted((root / "problems" / "qwise").glob("*.npz"))[0]
    assert main(["solve", str(f), "--trace"]) == 0
    out = capsys.readouterr().out
    assert "trace:" in out and "CLARABEL" in out
    assert main(["solve", str(f), "--method", "fast", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [s["kind"] for s in doc["trace"]] == ["iterative"]

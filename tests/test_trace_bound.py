"""Solves that serve a certificate (a bound's auxiliary SDP, a short run
that sharpens a dual bound) are traced as stages of kind ``"bound"``, after
the solver stage whose point they certify."""

import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine
from sklearn.preprocessing import StandardScaler

import cvxmetric as cm
from cvxmetric._trace import captured, emit, record, recording


def test_captured_stages_are_handed_on_in_the_callers_order():
    with recording() as stages:
        record("a", "iterative")
        with captured() as inner:
            record("b", "bound")
        assert [s.name for s in stages] == ["a"]
        record("c", "conic")
        emit(inner, why="certifying c's point")
    assert [s.name for s in stages] == ["a", "c", "b"]
    assert stages[2].why == "certifying c's point"


def test_emit_outside_a_scope_is_a_no_op():
    with captured() as inner:
        record("b", "bound")
    emit(inner)  # nothing open: nothing to do, no error


def test_mmc_bound_polish_follows_the_conic_stage_it_certifies():
    # a conic point whose plain bound leaves a gap: the polish, if it runs,
    # is a "bound" stage after the conic stage
    X, y = load_wine(return_X_y=True)
    est = cm.MMCSupervised(solver="exact", random_state=0).fit(X, y)
    trace = est.result_.trace
    assert trace[0].kind == "conic"
    for i, stage in enumerate(trace):
        if stage.kind == "bound":
            assert stage.name == "bound polish"
            assert trace[i - 1].kind == "conic"
            assert stage.why.startswith("certifying")
    assert est.result_.certificate.passed


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_ldml_auxiliary_sdps_are_traced():
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)[::3]
    est = cm.LDMLSupervised(solver="exact", lam=0.0).fit(X, y[::3])
    trace = est.result_.trace
    bound = [s for s in trace if s.kind == "bound"]
    assert bound and all(s.name.endswith("(CLARABEL)") or s.name.endswith("(SCS)")
                         for s in bound)
    assert trace[-1].kind == "conic" and np.isfinite(trace[-1].gap)

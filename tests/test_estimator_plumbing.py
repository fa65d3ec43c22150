"""The plumbing the estimators share (cvxmetric._base.FitMixin and helpers)."""

import logging
import re

import numpy as np
import pytest
from sklearn import config_context
from sklearn.utils._param_validation import InvalidParameterError

import cvxmetric as cm
from cvxmetric._base import given_options, solver_names, store_arguments
from cvxmetric.omdml import OMDML
from cvxmetric.slr import SLR

P = np.array([[0.0, 0.0], [0.2, 1.0], [1.0, 0.0], [1.1, 1.3], [0.5, 0.4], [2.0, 0.1]])
PAIRS, LABELS = [[0, 1], [2, 3], [0, 2], [1, 3], [4, 5]], [1, 1, -1, -1, -1]
X = np.array([[0.0, 0.1], [0.2, 0.0], [1.0, 1.1], [1.2, 0.9], [0.1, 0.3], [1.1, 1.0]])
Y = np.array([0, 0, 1, 1, 0, 1])

# (estimator, fit arguments, registered formulation of its solver parameter)
CASES = [
    (cm.Qwise(preprocessor=P), ([[0, 1, 2, 5]],), "qwise"),
    (cm.QwiseVector(preprocessor=P), ([[0, 1, 2, 5]],), "qwise_vector"),
    (cm.MMC(preprocessor=P), (PAIRS, LABELS), "mmc"),
    (cm.ConstraintDML(preprocessor=P), (PAIRS, LABELS), "constraintdml"),
    (cm.RankDML(preprocessor=P), ([[0, 1, 5], [2, 3, 0]],), "rankdml"),
    (cm.LDML(lam=0.1, preprocessor=P), (PAIRS, LABELS), "ldml"),
    (SLR(), (X, Y), "slr"),
    (OMDML(), ([X[:, :1], X[:, 1:]], [[0, 1, 2], [2, 3, 0]]), "omdml"),
]


@pytest.mark.parametrize("est, args, family", CASES,
                         ids=[type(c[0]).__name__ for c in CASES])
def test_solver_values_are_the_registry_methods(est, args, family):
    options = est._parameter_constraints["solver"][0].options
    assert options == set(solver_names(family))


@pytest.mark.parametrize("est, args, family", CASES[:-1],
                         ids=[type(c[0]).__name__ for c in CASES[:-1]])
def test_unknown_solver_past_validation_names_solver(est, args, family):
    # the dispatch refuses a value that parameter validation would have
    # refused (reachable only with validation switched off)
    est = est.set_params(solver="nope")
    with config_context(skip_parameter_validation=True):
        with pytest.raises(ValueError, match=r"^solver: unknown option 'nope'; "
                                             r"expected one of '"):
            est.fit(*args)


@pytest.mark.parametrize("est, args, family", CASES,
                         ids=[type(c[0]).__name__ for c in CASES])
def test_fit_validates_parameters_without_a_decorator(est, args, family):
    with pytest.raises(InvalidParameterError, match="solver"):
        est.set_params(solver="nope").fit(*args)


def test_summary_line_of_a_fit(caplog):
    with caplog.at_level(logging.INFO, logger="cvxmetric"):
        cm.RankDML(preprocessor=P, verbose=True).fit([[0, 1, 5], [2, 3, 0]])
    lines = [r.getMessage() for r in caplog.records if "status=" in r.getMessage()]
    assert len(lines) == 1
    assert re.fullmatch(
        r"RankDML: regularizer=frobenius form=printed diagonal=False solver=exact "
        r"status=optimal objective=\S+ rel_gap=\S+ n_iter=\d+ n_triplets=2", lines[0])


def test_store_arguments_and_given_options():
    class Dummy:
        def __init__(self, a, b=None):
            store_arguments(self, locals())

    assert vars(Dummy(1)) == {"a": 1, "b": None}
    assert given_options(tol=None, maxiter=5, max_time=0.0) == {"maxiter": 5, "max_time": 0.0}

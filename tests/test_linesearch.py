"""The one backtracking line search (cvxmetric._linesearch)."""

from cvxmetric._linesearch import backtracking
from cvxmetric._solver import Deadline


def test_armijo_on_a_quadratic():
    # f(x) = x^2 from x = 1 along d = -4 (an overshooting step): f(1 - 4t)
    # <= 1 - 1e-4 * 8 t first holds at t = 1/4 after two halvings
    f = lambda x: x * x  # noqa: E731
    search = backtracking(lambda t: f(1 - 4 * t), lambda t, v: v <= 1 - 8e-4 * t)
    assert search.accepted and search.step == 0.25 and search.backtracks == 2
    assert search.value == 0.0


def test_the_first_step_is_kept_when_accepted():
    calls = []
    search = backtracking(lambda t: calls.append(t) or t, lambda t, v: True, step=2.0)
    assert search.accepted and search.step == 2.0 and calls == [2.0]


def test_it_gives_up_after_max_backtracks():
    tried = []
    search = backtracking(lambda t: tried.append(t), lambda t, v: False,
                          max_backtracks=3)
    assert not search.accepted and tried == [1.0, 0.5, 0.25, 0.125]
    assert search.backtracks == 3


def test_it_gives_up_below_min_step_and_when_the_budget_is_spent():
    search = backtracking(lambda t: t, lambda t, v: False, min_step=1e-3)
    assert not search.accepted and search.step < 1e-3 and search.backtracks == 10
    spent = Deadline(0.0, start=-1.0)
    search = backtracking(lambda t: t, lambda t, v: False, deadline=spent)
    assert not search.accepted and search.backtracks == 1

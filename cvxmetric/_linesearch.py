"""The one backtracking line search of the fast solvers.

Every fast solver that searches a step does it the same way: try a step,
halve it until a sufficient-decrease (or -increase) test accepts it, give up
below a smallest step, after a number of halvings, or when the time budget
is spent.  What differs between solvers is what a trial costs and what it
returns (a value alone, or a value with its gradient and active set; a
point on a ray or on a projection arc) and the test (Armijo's, a
nonmonotone reference, a round-off allowance): those are the caller's two
functions, the loop is this module's.
"""

from dataclasses import dataclass

__all__ = ["backtracking", "LineSearch"]


@dataclass(frozen=True)
class LineSearch:
    """The outcome of :func:`backtracking`.

    Attributes
    ----------
    step : float
        The last step tried (the accepted one when :attr:`accepted`).
    value : object
        What ``trial(step)`` returned.
    backtracks : int
        Halvings made (``0``: the first step was accepted).
    accepted : bool
        Whether the test accepted :attr:`step`; otherwise the search gave
        up (too many halvings, a step below ``min_step``, or the budget).
    """

    step: float
    value: object
    backtracks: int
    accepted: bool


def backtracking(trial, accept, *, step=1.0, shrink=0.5, max_backtracks=None,
                 min_step=0.0, deadline=None):
    """The first of ``step, step * shrink, step * shrink^2, ...`` accepted.

    Parameters
    ----------
    trial : callable
        ``trial(t) -> value``: evaluates the point of step ``t`` (and
        whatever the caller needs from it).
    accept : callable
        ``accept(t, value) -> bool``: the sufficient-decrease test.
    step : float
        The first step.
    shrink : float
        Factor of each backtrack: in (0, 1) for a step; above 1 when the
        search runs on a curvature estimate ``L`` whose step is ``1 / L``
        (RankDML's dual ascent doubles ``L``).
    max_backtracks : int, optional
        Give up after this many backtracks (``None``: no limit).
    min_step : float
        Give up when the step falls below it.
    deadline : cvxmetric._solver.Deadline, optional
        Give up when it has expired (checked after each backtrack).

    Returns
    -------
    LineSearch
    """
    t, n = float(step), 0
    while True:
        value = trial(t)
        if accept(t, value):
            return LineSearch(t, value, n, True)
        if max_backtracks is not None and n >= max_backtracks:
            break
        t *= shrink
        n += 1
        if t < min_step or (deadline is not None and deadline.expired()):
            break
    return LineSearch(t, value, n, False)

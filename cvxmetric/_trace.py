"""The trace of what ran: the ordered stages behind a result.

A fit or a solve may run several stages: the conic solvers of an exact
path in turn (Clarabel, then SCS when Clarabel's point fails its
certificate), an iterative solver, the rounds of a reduction.  Each stage
records itself where it runs (:func:`record`) into the innermost open
:func:`recording` scope; the estimators open one around every ``fit`` (see
:class:`cvxmetric._solver.FitScopeMixin`) and attach what it collected to
their result (``result_.trace``), the iterative solvers around their own
run.  Each stage is also logged at INFO as it ends, so ``verbose=True``
shows the trace as it happens.
"""

import contextvars
import logging
import math
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace

__all__ = ["Stage", "recording", "record", "captured", "emit", "format_trace"]

logger = logging.getLogger("cvxmetric")

#: The innermost open :func:`recording` scope.
_CURRENT = contextvars.ContextVar("cvxmetric_trace", default=None)


class _Scope:
    """The stages of one :func:`recording` scope and its enclosing scope."""

    def __init__(self, parent):
        self.stages = []
        self.parent = parent

    def last(self):
        """The stage that ended last in this scope or an enclosing one."""
        scope = self
        while scope is not None:
            if scope.stages:
                return scope.stages[-1]
            scope = scope.parent
        return None


@dataclass(frozen=True)
class Stage:
    """One stage of a solve.

    Attributes
    ----------
    name : str
        What ran: a conic solver (``"CLARABEL"``), an iterative solver's
        name, a reduction.
    kind : str
        ``"conic"``, ``"iterative"``, ``"reduction"``; ``"bound"``: a
        solve that serves a certificate (an auxiliary SDP, a short run
        that sharpens a dual bound) rather than the problem itself;
        ``"evaluation"``: a pass that evaluates the objective at a result
        (SLR's Eq. 4 after Algorithms 2 and 3).
    iterations : int
    seconds : float
        Wall-clock seconds of the stage.
    gap : float
        Relative gap of the certificate after the stage (``nan`` when the
        stage produced none, ``inf`` when it produced no valid bound).
    status : str
        How the stage ended (the solver's own status, or why it stopped).
    why : str
        Why the stage ran: ``"first"``, or what the stage before it left
        undone (a failed certificate, an error, a claim to confirm).
    """

    name: str
    kind: str
    iterations: int
    seconds: float
    gap: float
    status: str
    why: str

    def as_dict(self):
        """Plain-JSON view."""
        return asdict(self)


@contextmanager
def recording():
    """Collect the stages recorded inside the scope.

    Yields
    ------
    list of Stage
        Filled as stages end; scopes nest, each one collecting what ends
        inside it (an inner scope's stages are its outer scope's too).
    """
    with _scope(pass_on=True) as stages:
        yield stages


@contextmanager
def captured():
    """Collect the stages recorded inside the scope *without* passing them
    to the enclosing scopes; the caller hands them on with :func:`emit`
    (e.g. the stages a certification ran, placed after the solver stage
    they certify, which is recorded once its certificate is known).

    Yields
    ------
    list of Stage
    """
    with _scope(pass_on=False) as stages:
        yield stages


@contextmanager
def _scope(pass_on):
    """A new innermost scope; at its end its stages go to the enclosing
    scope when ``pass_on`` (:func:`recording`), or stay with the caller
    (:func:`captured`)."""
    outer = _CURRENT.get()
    scope = _Scope(outer if pass_on else None)
    token = _CURRENT.set(scope)
    try:
        yield scope.stages
    finally:
        _CURRENT.reset(token)
        if pass_on and outer is not None:
            outer.stages.extend(scope.stages)


def emit(stages, why=None):
    """Append already recorded ``stages`` to the open scope (if any), in order.

    Parameters
    ----------
    stages : list of Stage
        From :func:`captured`.
    why : str, optional
        Replaces the ``why`` of the first of them when it says ``"first"``
        (it was first only within the captured scope).
    """
    stages = list(stages)
    if why is not None and stages and stages[0].why == "first":
        stages[0] = replace(stages[0], why=str(why))
    scope = _CURRENT.get()
    if scope is not None:
        scope.stages.extend(stages)


def record(name, kind, *, iterations=0, seconds=0.0, gap=math.nan, status="",
           why=None):
    """Record one stage in the open scope (if any) and log it at INFO.

    Parameters
    ----------
    name, kind, iterations, seconds, gap, status
        As :class:`Stage`.
    why : str, optional
        Why the stage ran; default ``"first"``, or ``"after <stage>"`` when
        a stage ended before it in the open scopes.

    Returns
    -------
    Stage
    """
    scope = _CURRENT.get()
    if why is None:
        last = scope.last() if scope is not None else None
        why = "first" if last is None else f"after {last.name}"
    stage = Stage(name=str(name), kind=str(kind), iterations=int(iterations),
                  seconds=float(seconds), gap=float(gap), status=str(status),
                  why=str(why))
    if scope is not None:
        scope.stages.append(stage)
    logger.info("stage %s (%s): %s after %d iterations, %.3g s, gap %.3g [%s]",
                stage.name, stage.kind, stage.status or "-", stage.iterations,
                stage.seconds, stage.gap, stage.why)
    return stage


def format_trace(trace):
    """The stages as a table, one line each (for ``cvxmetric solve --trace``)."""
    rows = [("#", "stage", "kind", "iterations", "seconds", "gap", "status", "why")]
    for i, s in enumerate(trace, 1):
        rows.append((str(i), s.name, s.kind, str(s.iterations), f"{s.seconds:.3g}",
                     f"{s.gap:.3g}", s.status or "-", s.why))
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]) - 1)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1]
                     for r in rows)

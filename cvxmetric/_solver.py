"""The contract every hand-written solver follows.

Modelled on jaxopt's iterative solvers: hyperparameters are dataclass fields,
``init_state`` builds the starting point and a small state (a named tuple with
at least ``iter_num`` and ``error``), ``update`` performs one iteration, and
``run`` loops until ``error <= tol`` or ``maxiter`` and returns the same
:class:`~cvxmetric.result.SolverResult` as the exact path.  A run that stops
on ``maxiter`` gets status ``max_iter_reached`` and a ``ConvergenceWarning``
quoting the final error; progress goes to the ``cvxmetric`` logger.
"""

import logging
import time
import warnings
from dataclasses import dataclass

from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from .result import SolverResult, Status

__all__ = ["IterativeSolver"]

logger = logging.getLogger("cvxmetric")


@dataclass
class IterativeSolver:
    """Base class: subclasses define ``init_state``, ``update``, ``finalize``.

    Attributes
    ----------
    maxiter : int
        Maximum number of iterations.
    tol : float
        Stop when ``state.error <= tol``; the meaning of ``error`` is the
        subclass's (documented there).
    max_time : float, optional
        Wall-clock budget in seconds, checked between iterations; a run that
        exhausts it ends with status ``time_limit_reached``.
    """

    maxiter: int = 1000
    tol: float = 1e-6
    max_time: float = None

    name = "iterative"

    #: Below this many features, BLAS runs single-threaded: the iterations
    #: are many small products whose threading overhead (measured: 16x on a
    #: loaded 2-core machine) outweighs any parallel gain.
    small_features = 64

    def init_state(self, data, init=None):  # pragma: no cover - interface
        """Return ``(M, state)``."""
        raise NotImplementedError

    def update(self, M, state, data):  # pragma: no cover - interface
        """One iteration: return ``(M, state)``."""
        raise NotImplementedError

    def finalize(self, M, state, data):  # pragma: no cover - interface
        """Return ``(M, certificate, info)`` for the final iterate."""
        raise NotImplementedError

    def converged(self, state):
        """Whether ``state`` meets the stopping rule."""
        return state.error <= self.tol

    def run(self, data, init=None, *, warn=True):
        """Iterate from ``init`` (a previous result, or the default start).

        Parameters
        ----------
        data : problem data (e.g. :class:`~cvxmetric.qwise.QwiseData`)
        init : SolverResult, optional
            Warm start.
        warn : bool
            Emit a ``ConvergenceWarning`` when ``maxiter`` is reached.

        Returns
        -------
        SolverResult
        """
        t0 = time.perf_counter()
        small = data.n_features <= self.small_features
        with threadpool_limits(limits=1 if small else None, user_api="blas"):
            M, state = self.init_state(data, init)
            out_of_time = False
            while not self.converged(state) and state.iter_num < self.maxiter:
                if self.max_time is not None and time.perf_counter() - t0 > self.max_time:
                    out_of_time = True
                    break
                M, state = self.update(M, state, data)
                logger.debug("%s iter %d error %.3e", self.name, state.iter_num,
                             state.error)
            M, cert, info = self.finalize(M, state, data)
        converged = self.converged(state)
        if converged:
            status = Status.OPTIMAL
        else:
            status = Status.TIME_LIMIT if out_of_time else Status.MAX_ITER
        info.setdefault("final_error", float(state.error))
        if not converged and warn:
            why = (f"within {self.max_time:g} s" if out_of_time
                   else f"in {state.iter_num} iterations")
            warnings.warn(
                f"{self.name} did not converge {why}: final error "
                f"{state.error:.3g} > tol {self.tol:.3g} (relative duality gap "
                f"{cert.rel_gap:.3g}).",
                ConvergenceWarning,
                stacklevel=2,
            )
        cert.times["total"] = time.perf_counter() - t0
        return SolverResult(
            M=M, status=status, objective=cert.objective, n_iter=state.iter_num,
            certificate=cert, method=self.name, info=info,
            time=cert.times["total"],
        )

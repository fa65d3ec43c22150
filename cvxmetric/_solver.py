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
    """

    maxiter: int = 1000
    tol: float = 1e-6

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
            while not self.converged(state) and state.iter_num < self.maxiter:
                M, state = self.update(M, state, data)
                logger.debug("%s iter %d error %.3e", self.name, state.iter_num,
                             state.error)
            M, cert, info = self.finalize(M, state, data)
        converged = self.converged(state)
        status = Status.OPTIMAL if converged else Status.MAX_ITER
        info.setdefault("final_error", float(state.error))
        if not converged and warn:
            warnings.warn(
                f"{self.name} did not converge in {state.iter_num} iterations: "
                f"final error {state.error:.3g} > tol {self.tol:.3g} "
                f"(relative duality gap {cert.rel_gap:.3g}).",
                ConvergenceWarning,
                stacklevel=2,
            )
        cert.times["total"] = time.perf_counter() - t0
        return SolverResult(
            M=M, status=status, objective=cert.objective, n_iter=state.iter_num,
            certificate=cert, method=self.name, info=info,
            time=cert.times["total"],
        )

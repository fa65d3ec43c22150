"""RCA, fast: the closed form ``M* = |C|^{1/d} C^{-1}`` from one ``eigh``.

Certified by the same closed-form dual bound as the exact path
(:meth:`~cvxmetric.rca.RCAData.certificate`, at the optimal multiplier
``lam* = |C|^{1/d}``).
"""

import time

from .._trace import record, recording
from .._validation import check_instance
from ..result import SolverResult, Status
from ._problem import RCAData

__all__ = ["solve_closed_form"]


def solve_closed_form(data):
    """RCA's optimum in closed form, certified.

    Parameters
    ----------
    data : RCAData
        With a definite within-chunklet covariance.

    Returns
    -------
    SolverResult
        ``method="fast"``, ``M`` with ``|M| = 1``; ``info["lam"]`` is the
        multiplier of ``log det M >= 0`` (``|C|^{1/d}``).

    Raises
    ------
    NotAttainedError
        When the within-chunklet covariance is singular.
    """
    check_instance(data, RCAData, "data")
    t0 = time.perf_counter()
    with recording() as stages:
        M, lam = data.closed_form()
        cert = data.certificate(M, lam, solver="closed form",
                                times={"solve": time.perf_counter() - t0})
        record("closed form", "iterative", iterations=1,
               seconds=time.perf_counter() - t0, gap=cert.rel_gap,
               status=Status.OPTIMAL if cert.passed else Status.OPTIMAL_INACCURATE)
    status = Status.OPTIMAL if cert.passed else Status.OPTIMAL_INACCURATE
    return SolverResult(M=M, status=status, objective=cert.objective, n_iter=1,
                        certificate=cert, method="fast", info={"lam": lam},
                        time=time.perf_counter() - t0, raw_status="closed form",
                        trace=tuple(stages))

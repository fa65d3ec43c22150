"""GMML, fast: the closed form ``M = A^{-1} #_t B`` (Zadeh, Hosseini, Sra,
ICML 2016), certified by the lower bound of
:class:`~cvxmetric.gmml._problem.GMMLData` (``status == "optimal"`` only
when it passes at the package's tolerance)."""

import time

from .._trace import record
from .._validation import check_instance
from ..result import NotAttainedError, SolverResult, Status
from ._problem import GMMLData

__all__ = ["solve_fast"]


def solve_fast(data):
    """The weighted geometric mean, certified.

    Parameters
    ----------
    data : GMMLData

    Returns
    -------
    SolverResult
        ``method="fast"``; ``info["stationarity"]``: ``||M A M - B|| /
        ||B||`` (``t = 1/2``).

    Raises
    ------
    NotAttainedError
        When a scatter matrix (with the regulariser) is singular.
    """
    check_instance(data, GMMLData, "data")
    why = data.attained()
    if why is not None:
        raise NotAttainedError(why)
    t0 = time.perf_counter()
    M = data.closed_form()
    cert = data.certificate(M, solver="closed form")
    status = Status.OPTIMAL if cert.passed else Status.OPTIMAL_INACCURATE
    seconds = time.perf_counter() - t0
    record("geometric mean", "iterative", iterations=1, seconds=seconds,
           gap=cert.rel_gap, status=status)
    return SolverResult(M=M, status=status, objective=cert.objective, n_iter=1,
                        certificate=cert, method="fast",
                        info={"stationarity": data.stationarity(M)}, time=seconds)

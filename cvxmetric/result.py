"""Status words, certificates, results and exceptions shared by every solver.

Every solver -- the exact CVXPY path and every hand-written fast solver --
returns a :class:`SolverResult`.  Its status is a value from :class:`Status`
(never a print), and its :class:`Certificate` states, in the paper's units,
how good the returned matrix is: objective, a dual lower bound and the gap,
the largest constraint violation and the smallest eigenvalue.
"""

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from ._tolerances import EXACT_GAP, FEASIBILITY

__all__ = [
    "Status",
    "Certificate",
    "SolverResult",
    "SolverError",
    "InfeasibleError",
    "UnboundedError",
    "NotAttainedError",
    "CertificateError",
    "ProblemSizeError",
]


class Status:
    """Status words, shared with CVXPY where the meaning is the same.

    A :class:`SolverResult`'s ``status`` says what the package vouches for:
    ``OPTIMAL`` exactly when its certificate passes at the package's own
    tolerance (:func:`~cvxmetric._tolerances.certificate_tolerance`).
    Otherwise it says why the run ended without that: ``MAX_ITER``,
    ``TIME_LIMIT``, or ``OPTIMAL_INACCURATE`` (the solver's own stopping
    rule was met, e.g. at a loosened ``tol``, but the certificate does not
    pass).  What the solver itself reported is kept in ``raw_status``.
    """

    OPTIMAL = "optimal"
    OPTIMAL_INACCURATE = "optimal_inaccurate"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    NOT_ATTAINED = "not_attained"
    MAX_ITER = "max_iter_reached"
    TIME_LIMIT = "time_limit_reached"
    SOLVER_ERROR = "solver_error"

    SOLVED = (OPTIMAL, OPTIMAL_INACCURATE)


class SolverError(RuntimeError):
    """A solve failed: no solution is returned."""

    def __init__(self, message, status=Status.SOLVER_ERROR, result=None):
        super().__init__(message)
        self.status = status
        self.result = result


class InfeasibleError(SolverError):
    """The problem has no feasible point (certified by the solver)."""

    def __init__(self, message, result=None):
        super().__init__(message, Status.INFEASIBLE, result)


class UnboundedError(SolverError):
    """The objective is unbounded below."""

    def __init__(self, message, result=None):
        super().__init__(message, Status.UNBOUNDED, result)


class NotAttainedError(SolverError):
    """The infimum is finite but not attained (minimising sequences diverge)."""

    def __init__(self, message, result=None):
        super().__init__(message, Status.NOT_ATTAINED, result)


class CertificateError(SolverError):
    """The solver claims a solution but its certificate does not pass."""

    def __init__(self, message, result=None):
        super().__init__(message, Status.OPTIMAL_INACCURATE, result)


class ProblemSizeError(ValueError):
    """The chosen solver refuses a problem this large (a documented limit,
    e.g. one conic constraint per pair for CVXPY); nothing was solved.  The
    message names the argument to change."""


@dataclass
class Certificate:
    """What is known about a returned solution, in the paper's units.

    Attributes
    ----------
    objective : float
        Objective recomputed from the primal solution (not the solver's value).
    dual_bound : float
        A lower bound on the optimal value derived from dual variables
        (``-inf`` when none is available).
    gap : float
        ``objective - dual_bound`` (>= 0 up to round-off).
    rel_gap : float
        ``gap / scale``.
    max_violation : float
        Largest violation of the problem's constraints at the returned point
        (for a PSD constraint, ``max(0, -min_eig)``).
    min_eig : float
        Smallest eigenvalue of the returned matrix.
    solver : str
        Name of the solver that produced the point.
    solver_version : str
    tolerances : dict
        The tolerances the solver ran with.
    times : dict
        Wall-clock seconds (``setup``, ``solve``, ``total``).
    tol_gap, tol_feas : float
        The thresholds :attr:`passed` was judged against.
    scale : float
        What :attr:`rel_gap` divides by: ``max(1, |objective|)`` unless the
        family's certificate says otherwise in its docstring (MMC divides
        by the objective itself, or by the Euclidean metric's value on
        degenerate data); ``nan`` where no gap is measured.
    """

    objective: float
    dual_bound: float
    gap: float
    rel_gap: float
    max_violation: float
    min_eig: float
    solver: str
    solver_version: str = ""
    tolerances: dict = field(default_factory=dict)
    times: dict = field(default_factory=dict)
    tol_gap: float = EXACT_GAP
    tol_feas: float = FEASIBILITY
    scale: float = np.nan

    @classmethod
    def from_bound(cls, objective, dual_bound, *, max_violation, min_eig, solver,
                   solver_version="", tolerances=None, times=None, tol_gap=EXACT_GAP,
                   tol_feas=FEASIBILITY):
        """The certificate of a point with objective ``objective`` and a lower
        bound ``dual_bound`` on the optimum: ``gap`` and ``rel_gap`` follow
        (``inf`` when no finite bound is known)."""
        gap = float(objective - dual_bound)
        scale = max(1.0, abs(objective)) if np.isfinite(objective) else np.nan
        rel_gap = abs(gap) / scale if np.isfinite(gap) else np.inf
        if not np.isfinite(dual_bound):
            # no valid bound: nothing is certified
            gap, rel_gap = np.inf, np.inf
        return cls(objective=float(objective), dual_bound=float(dual_bound),
                   gap=gap, rel_gap=float(rel_gap), max_violation=float(max_violation),
                   min_eig=float(min_eig), solver=solver,
                   solver_version=solver_version, tolerances=dict(tolerances or {}),
                   times=dict(times or {}), tol_gap=tol_gap, tol_feas=tol_feas,
                   scale=float(scale))

    @classmethod
    def no_point(cls, solver, solver_version="", tolerances=None, times=None):
        """The certificate of a solve that produced no usable point: it claims
        nothing (objective ``inf``, no bound) and cannot pass."""
        return cls(objective=np.inf, dual_bound=-np.inf, gap=np.inf, rel_gap=np.inf,
                   max_violation=np.inf, min_eig=np.nan, solver=solver,
                   solver_version=solver_version, tolerances=dict(tolerances or {}),
                   times=dict(times or {}))

    @property
    def passed(self):
        """True when the relative gap and the violation are within tolerance.

        A certificate without a finite, valid dual bound never passes.
        """
        return bool(
            np.isfinite(self.objective)
            and np.isfinite(self.dual_bound)
            and self.rel_gap <= self.tol_gap
            and self.max_violation <= self.tol_feas * max(1.0, abs(self.objective))
        )

    def as_dict(self):
        """Plain-JSON view."""
        out = dataclasses.asdict(self)
        out["passed"] = self.passed
        return out


def _output(key, doc):
    """A typed name for ``info[key]`` (one store: setting it sets the key)."""

    def get(self):
        return self.info.get(key)

    def set(self, value):
        self.info[key] = value

    return property(get, set, doc=doc)


@dataclass
class SolverResult:
    """The outcome of one solve, exact or fast.

    Attributes
    ----------
    M : ndarray of shape (d, d)
        The learned matrix (symmetric, PSD up to ``certificate.min_eig``).
    status : str
        A :class:`Status` word: ``"optimal"`` exactly when
        ``certificate.passed`` (enforced on construction).
    objective : float
        Objective at ``M`` in the paper's units.
    n_iter : int
        Iterations (interior-point iterations for the exact path).
    certificate : Certificate
    method : str
        ``"exact"`` or the fast method's name.
    info : dict
        Solver-specific extras (history, the CVXPY problem, ...).  The
        outputs a formulation adds to ``M`` have typed names:
        :attr:`threshold`, :attr:`factor`, :attr:`weights`, :attr:`dual`,
        :attr:`theta`.
    time : float
        Wall-clock seconds.
    raw_status : str
        What the solver itself reported (CVXPY's status for the exact path,
        the reason an iterative solver stopped); defaults to the ``status``
        given on construction.
    trace : tuple of Stage
        The stages that ran, in order (:class:`cvxmetric._trace.Stage`: the
        conic solvers tried, the iterative solvers run, with iterations,
        seconds, the gap after each and why each started); filled by the
        iterative solvers and by the estimators' ``fit``.
    """

    M: np.ndarray
    status: str
    objective: float
    n_iter: int
    certificate: Certificate
    method: str
    info: dict = field(default_factory=dict)
    time: float = 0.0
    raw_status: str = ""
    trace: tuple = ()

    def __post_init__(self):
        # one meaning of status: "optimal" iff the certificate passes at the
        # package's tolerance, however the solver stopped
        if not self.raw_status:
            self.raw_status = self.status
        if self.certificate is None:
            return
        if self.certificate.passed:
            self.status = Status.OPTIMAL
        elif self.status in Status.SOLVED:
            self.status = Status.OPTIMAL_INACCURATE

    @property
    def gap(self):
        """Relative duality gap of the certificate."""
        return self.certificate.rel_gap

    # -- the outputs a formulation adds to M (typed names of their info keys) --

    threshold = _output("b", """LDML's threshold ``b`` (``p = sigma(b - D_M)``), a float;
        ``None`` for the formulations without one.""")
    factor = _output("L", """The factor ``L`` with ``M = L^T L`` that a low-rank method
        learned, shape (rank, d); ``None`` when the method returns ``M`` only.""")
    weights = _output("w", """The diagonal of a diagonal metric, shape (d,) (MMC
        ``diagonal=True``); ``None`` for a full metric.""")
    dual = _output("alpha", """The multipliers of the constraints the method solved
        (Qwise, RankDML, the constraint-based baseline), one per constraint;
        ``None`` when the method has none.""")
    theta = _output("theta", """OMDML's combination of the views' metrics, shape
        (n_views,); ``None`` for the other formulations.""")

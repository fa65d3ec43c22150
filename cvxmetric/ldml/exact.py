"""LDML, exact: Eq. 2-3 of Guillaumin, Verbeek, Schmid (2010) in CVXPY.

The formulation (the negative of Eq. 2's log-likelihood, minimised)::

    minimise_{M PSD, b}  sum_p g(s_p (d_M(x_i, x_j) - b)) + lam R(M)

with ``g(u) = log(1 + e^u)`` (``-log sigma(b - d)`` for a similar pair,
``s_p = +1``; ``-log(1 - sigma(b - d))`` for a dissimilar one,
``s_p = -1``), ``R(M) = tr(M)`` or ``0.5 ||M||_F^2``; ``lam = 0`` is the
paper's Eq. 2.  Changes from the paper: none (``lam`` is an optional
regulariser, a ``cp.Parameter``).

Certificate.  For multipliers ``alpha_p = sigma(u_p)`` (the slopes at the
point, with ``b`` re-optimised so that ``sum_p alpha_p s_p = 0``) the dual
value is ``sum_p H(alpha_p) - lam R*(...)``, ``H`` the binary entropy; the
PSD part needs ``S(alpha) = sum_p alpha_p s_p C_p + lam I >= 0`` (trace) --
near an optimum it holds up to round-off, and the deficit is charged at a
bound ``tau >= tr(M*)`` on the optimum's trace: ``tau = f / lam`` with the
trace regulariser, and with ``lam = 0`` the value of the SDP
``max tr(M) s.t. the level set {F <= F(0, b_0)}``.  That same SDP decides
attainment: if it is unbounded, a direction of ``(M, b)`` decreases every
term forever -- the infimum is not attained (a separable set of pairs) --
and :class:`~cvxmetric.result.NotAttainedError` is raised, never a point.
"""

import math
import time
import warnings

import cvxpy as cp
import numpy as np
from scipy.optimize import brentq
from scipy.special import expit

from .._exact import SOLVERS, solve_certified
from .._linalg import PairOperator, project_psd
from .._validation import check_indices, check_option, check_samples, check_scalar
from ..result import Certificate, NotAttainedError, SolverError, SolverResult

__all__ = ["LDMLData", "solve_exact", "REGULARIZERS"]

REGULARIZERS = ("trace", "frobenius")


def _attempts(prob, solvers):
    """Solve ``prob`` with each solver in turn, yielding after each solve
    that did not fail; the caller judges the status and stops when it has
    what it needs.  CVXPY's "inaccurate" warning is silenced: the status is
    judged."""
    for name in solvers:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                prob.solve(solver=name)
        except cp.error.SolverError:
            continue
        yield name


def _logistic(u):
    return np.logaddexp(0.0, u)


def _sigmoid(u):
    # scipy's expit: exact in both tails (1 - p would lose the small one)
    return expit(u)


class LDMLData:
    """Pairs, their labels and the regulariser of Eq. 2.

    Parameters
    ----------
    X : array_like (n, D)
    pairs : array_like of int (P, 2)
    y : array_like (P,)
        +1 same class, -1 different.
    lam : float >= 0
    regularizer : {"trace", "frobenius"}
    """

    def __init__(self, X, pairs, y, *, lam=0.0, regularizer="trace"):
        self.X = check_samples(X)
        self.pairs = check_indices(pairs, "pairs", self.X.shape[0], width=2)
        y = np.asarray(y)
        if y.shape != (len(self.pairs),) or not np.all(np.isin(y, (-1, 1))):
            raise ValueError(f"y: expected +1 / -1, one per pair ({len(self.pairs)}).")
        same = np.all(self.X[self.pairs[:, 0]] == self.X[self.pairs[:, 1]], axis=1)
        if np.any(same):
            raise ValueError(f"pairs: {int(same.sum())} pair(s) join identical "
                             f"instances (first at row {int(np.flatnonzero(same)[0])}).")
        self.s = y.astype(float)
        self.lam = check_scalar(lam, "lam", low=0.0)
        self.regularizer = check_option(regularizer, "regularizer", REGULARIZERS)
        self.op = PairOperator(self.X, self.pairs)
        self.Phi = self.X[self.pairs[:, 0]] - self.X[self.pairs[:, 1]]

    @property
    def d(self):
        return self.X.shape[1]

    @property
    def n_pairs(self):
        return len(self.s)

    def distances(self, M):
        return np.sum((self.Phi @ M) * self.Phi, axis=1)

    def reg(self, M):
        if self.regularizer == "trace":
            return float(np.trace(M))
        return 0.5 * float(np.sum(M * M))

    def objective(self, M, b):
        return float(np.sum(_logistic(self.s * (self.distances(M) - b)))) \
            + self.lam * self.reg(M)

    def best_b(self, dist):
        """The intercept minimising the loss at fixed distances (one root)."""
        s = self.s

        def grad(b):  # d/db of sum g(s (d - b)) = -sum s sigma(s (d - b))
            return -float(np.sum(s * _sigmoid(s * (dist - b))))

        lo, hi = float(dist.min()) - 50.0, float(dist.max()) + 50.0
        while grad(lo) > 0:
            lo -= 2 * (hi - lo)
        while grad(hi) < 0:
            hi += 2 * (hi - lo)
        return brentq(grad, lo, hi, xtol=1e-15, rtol=1e-15, maxiter=500)

    def level_min(self, S, f_upper, solvers=SOLVERS):
        """``min <S, M>`` over ``M`` PSD and ``b`` in the level set
        ``{s_p (d_p - b) <= kappa}`` that holds the optimum (module
        docstring): a lower bound on ``<S, M*>``; ``-inf`` when unbounded
        or unsolved.  A margin of 1e-9 (1 + |value|) covers the conic
        solver's tolerance."""
        kappa = math.log(math.expm1(f_upper)) if f_upper < 700 else f_upper
        cache = getattr(self, "_level", None)
        if cache is None or cache[0] != kappa:
            M = cp.Variable((self.d, self.d), PSD=True)
            b = cp.Variable()
            Sp = cp.Parameter((self.d, self.d), symmetric=True)
            dist = cp.sum(cp.multiply(self.Phi @ M, self.Phi), axis=1)
            prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(Sp, M))),
                              [cp.multiply(self.s, dist - b) <= kappa])
            cache = self._level = (kappa, prob, Sp)
        _, prob, Sp = cache
        Sp.value = 0.5 * (S + S.T)
        for _ in _attempts(prob, solvers):
            if prob.status == cp.OPTIMAL:
                v = float(prob.value)
                return v - 1e-9 * (1.0 + abs(v))
        return -math.inf

    def dual_bound(self, M, b, tau, f_upper=None):
        """Lower bound on the optimum from the slopes at ``(M, b)`` (``b``
        re-optimised) and a bound ``tau >= tr(M*)`` (module docstring)."""
        dist = self.distances(M)
        b = self.best_b(dist)
        a = _sigmoid(self.s * (dist - b))
        ent = -float(np.sum(a * np.log(np.where(a > 0, a, 1.0))
                            + (1 - a) * np.log(np.where(a < 1, 1 - a, 1.0))))
        S = self.op.gram(a * self.s)  # sum_p alpha_p s_p C_p
        S = 0.5 * (S + S.T)
        if self.regularizer == "frobenius" and self.lam > 0:
            w = np.linalg.eigvalsh(-S)
            return ent - 0.5 / self.lam * float(np.sum(np.maximum(w, 0.0) ** 2))
        lam = self.lam if self.regularizer == "trace" else 0.0
        low = float(np.linalg.eigvalsh(S)[0]) + lam
        bound = ent + tau * min(0.0, low)
        if low < 0 and f_upper is not None:
            # sharper: min <S + lam I, M> over the level set holding M*
            bound = max(bound, ent + self.level_min(S + lam * np.eye(self.d), f_upper))
        return bound

    def recession(self, solvers=SOLVERS):
        """The best strictly decreasing direction of Eq. 2 at infinity:
        ``max -sum_p s_p (<dM, C_p> - db)`` over ``dM`` PSD with
        ``tr(dM) <= 1`` and ``s_p (<dM, C_p> - db) <= 0`` for every pair (no
        term increases along it).  A bounded SDP; a value above round-off
        means the infimum is not attained (every term keeps falling along
        the direction), 0 that no such direction exists.  Returns the value
        (``nan`` when no solver answers)."""
        dM = cp.Variable((self.d, self.d), PSD=True)
        db = cp.Variable()
        arg = cp.multiply(self.s, cp.sum(cp.multiply(self.Phi @ dM, self.Phi), axis=1)
                          - db)
        prob = cp.Problem(cp.Maximize(-cp.sum(arg)), [arg <= 0, cp.trace(dM) <= 1])
        for _ in _attempts(prob, solvers):
            if prob.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) and dM.value is not None:
                # judged on the returned direction itself, not on the status
                D = project_psd(dM.value)
                a = self.s * (self.distances(D) - float(db.value))
                scale = float(np.max(np.sum(self.Phi ** 2, axis=1)))
                if float(np.max(a)) <= 1e-7 * scale:
                    return float(-np.sum(np.minimum(a, 0.0))) / scale
        return math.nan

    def trace_bound_at_zero(self, solvers=SOLVERS):
        """:meth:`trace_bound` at ``F(0, b_0)`` (the value at ``M = 0``),
        computed once and kept: the bound the fast solvers charge the PSD
        deficit at without a regulariser."""
        if getattr(self, "_tau0", None) is None:
            f0 = float(np.sum(_logistic(-self.s * self.best_b(np.zeros(len(self.s))))))
            self._tau0 = self.trace_bound(f0, solvers)
        return self._tau0

    def trace_bound(self, f_upper, solvers=SOLVERS):
        """``tau >= tr(M*)`` (module docstring), or NotAttainedError."""
        if np.all(self.s > 0) or np.all(self.s < 0):
            raise NotAttainedError(
                "y: every pair has the same label; the intercept b runs to "
                "infinity and the likelihood has no maximiser.")
        cap = math.inf  # what the regulariser alone bounds
        if self.lam > 0 and self.regularizer == "trace":
            cap = f_upper / self.lam
        elif self.lam > 0:
            cap = math.sqrt(self.d * 2.0 * f_upper / self.lam)
        if math.isfinite(cap):
            # the regulariser bounds the trace already; the certificate
            # sharpens a loose bound by its own level-set SDP when needed
            return cap
        gain = self.recession(solvers)
        if not math.isfinite(gain):
            raise SolverError("pairs: attainment of Eq. 2 could not be decided "
                              "(no solver answered the recession problem).")
        if gain > 1e-6:
            raise NotAttainedError(
                "pairs: a metric separates the similar from the dissimilar "
                "pairs (a direction of (M, b) lowers every term of Eq. 2 "
                f"forever, relative decrease {gain:.3g}); without a "
                "regulariser the likelihood has no maximiser. Set lam > 0.")
        kappa = math.log(math.expm1(f_upper)) if f_upper < 700 else f_upper
        M = cp.Variable((self.d, self.d), PSD=True)
        b = cp.Variable()
        dist = cp.sum(cp.multiply(self.Phi @ M, self.Phi), axis=1)
        # every term of an optimum is at most F(0, b_0): the level set
        # {s_p (d_p - b) <= kappa} holds M*, so its largest trace bounds tr(M*)
        prob = cp.Problem(cp.Maximize(cp.trace(M)),
                          [cp.multiply(self.s, dist - b) <= kappa])
        for _ in _attempts(prob, solvers):
            if prob.status == cp.OPTIMAL:
                return 1.01 * float(prob.value) + 1e-9
        raise SolverError("pairs: the level set of Eq. 2 could not be bounded (no "
                          "solver answered); no certificate can be given.")


def solve_exact(data, *, solvers=SOLVERS, tol=1e-9, verbose=False):
    """Certified exact solution of Eq. 2 (with its optional regulariser).

    Returns
    -------
    SolverResult
        ``M``, ``info["b"]`` (the threshold).

    Raises
    ------
    NotAttainedError
        When the infimum is not attained (module docstring).
    """
    t0 = time.perf_counter()
    f0 = float(np.sum(_logistic(data.s * (0.0 - data.best_b(np.zeros(len(data.s)))))))
    tau = data.trace_bound(f0, solvers)  # raises before any solve
    # [declare:ldml-eq2]
    M = cp.Variable((data.d, data.d), PSD=True, name="M")
    b = cp.Variable(name="b")
    lam = cp.Parameter(nonneg=True, value=data.lam, name="lam")
    dist = cp.sum(cp.multiply(data.Phi @ M, data.Phi), axis=1)   # (P,)
    loss = cp.sum(cp.logistic(cp.multiply(data.s, dist - b)))
    reg = cp.trace(M) if data.regularizer == "trace" else 0.5 * cp.sum_squares(M)
    problem = cp.Problem(cp.Minimize(loss + lam * reg))
    # [/declare]

    def certify(name, version, opts, times):
        Mv = 0.5 * (M.value + M.value.T)
        obj = data.objective(Mv, float(b.value))
        bound = data.dual_bound(Mv, float(b.value), tau, f0)
        min_eig = float(np.linalg.eigvalsh(Mv)[0])
        return Certificate.from_bound(obj, bound, max_violation=max(0.0, -min_eig),
                                      min_eig=min_eig, solver=name,
                                      solver_version=version, tolerances=opts,
                                      times=times)

    cert, info = solve_certified(problem, certify, solvers=solvers, tol=tol,
                                 verbose=verbose)
    Mv = 0.5 * (M.value + M.value.T)
    return SolverResult(M=Mv, status=info["status"], objective=cert.objective,
                        n_iter=info["n_iter"], certificate=cert, method="exact",
                        info={"b": float(b.value), "trace_bound": tau,
                              "attempts": info["attempts"]},
                        time=time.perf_counter() - t0)

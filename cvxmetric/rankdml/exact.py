"""RankDML, exact: Eq. 7, 9 and 11 of Lee, Jin and Jain (2008) in CVXPY.

The formulation (the specification every RankDML solver answers to), for
triplets ``t = (q, r, i)`` (query, relevant, irrelevant)::

    minimise_{A, eps}   sum_t eps_t + (lam / 2) Reg(A)
    subject to          d(q, i; A) - d(q, r; A) >= 1 - eps_t,   eps_t >= 0
                        A PSD                      (a >= 0 when diagonal)
                        tr(A) = tau                ("burg", "logdet", "laplacian")

=================  ==========================================================
``regularizer``    ``(lam / 2) Reg(A)`` as declared (``B = W1 A W1``)
=================  ==========================================================
``"frobenius"``    ``lam/2 ||A||_F^2`` (Eq. 7); diagonal: ``lam/2 ||a||^2``
``"burg"``         ``lam/(2 tau^2) ||B||_F^2 - lam logdet(B) + lam/2 (2 d log tau - d)``
``"logdet"``       ``lam/(2 tau) tr(B) - lam/2 logdet(B) + lam/2 (d log tau - d)``
``"laplacian"``    ``lam/2 ||a - mean(a)||^2`` (Eq. 11)
=================  ==========================================================

``W1 = (A0 / tr(A0))^{-1/2}`` (symmetric) whitens with the unit-trace prior,
so that ``W = A0hat^{-1/2} = W1 / sqrt(tau)``; the Burg row is Eq. 8,
``tr((A A0hat^{-1})^2) - 2 logdet(A A0hat^{-1}) - d``, expanded in ``B``
(``||W A W||^2 = ||B||^2 / tau^2``, ``logdet(W A W) = logdet(B) - d log tau``)
so that ``tau`` can be a parameter.  ``log_det`` always receives the
symmetric ``W1 A W1``, never ``A A0^{-1}``.

Changes from the paper, all stated in docs/rankdml.md:

* Eq. 9 and Eq. 11 fix the trace, ``tr(A) = tau`` (the paper's
  ``A0hat = A0 tr(A) / tr(A0)`` makes them scale-invariant and non-convex);
* the Frobenius term ``tr(A A^T)`` is ``||A||_F^2`` (A symmetric);
* ``lam`` and ``tau`` are ``cp.Parameter`` (with parameters derived from
  them, kept in sync by :meth:`RankDMLModel.set_params`), so a sweep
  re-solves without recompiling; the model is DPP (asserted);
* ``A`` is a symmetric variable with an explicit ``A >> 0``.
"""

import time

import cvxpy as cp
import numpy as np

from .._exact import SOLVERS, solve_certified
from ..result import SolverResult
from ._problem import RankData

__all__ = ["RankDMLModel", "solve_exact"]


class RankDMLModel:
    """Eq. 7 / 9 / 11 declared as a CVXPY problem.

    Parameters
    ----------
    data : RankData

    Attributes
    ----------
    problem : cvxpy.Problem
    A : cvxpy.Variable
        (d, d) symmetric, or (d,) for diagonal problems.
    eps : cvxpy.Variable of shape (N,)
        The slacks of Eq. 7.
    params : dict of cvxpy.Parameter
        ``lam`` and, for trace-fixed problems, ``tau``.
    constraints : dict of cvxpy.Constraint
        ``triplets``, ``psd`` (or ``nonneg``) and ``trace``.
    """

    def __init__(self, data):
        self.data = data
        d = data.n_features
        N = data.n_constraints
        lam = cp.Parameter(nonneg=True, value=data.lam, name="lam")
        self.params = {"lam": lam}
        self._derived = {}
        self.eps = cp.Variable(N, nonneg=True, name="eps")
        cons = {}
        if data.diagonal:
            A = cp.Variable(d, name="a")
            # (N, d) @ (d,): k_t . a = d(q, i) - d(q, r)
            cons["triplets"] = data.K @ A >= 1 - self.eps
            cons["nonneg"] = A >= 0
        else:
            A = cp.Variable((d, d), symmetric=True, name="A")
            Phi = data.op.X[data.op.i] - data.op.X[data.op.j]  # (n_pairs, d)
            dist = cp.sum(cp.multiply(Phi @ A, Phi), axis=1)
            cons["triplets"] = dist[data.far] - dist[data.near] >= 1 - self.eps
            cons["psd"] = A >> 0
        self.A = A
        reg = self._regularizer_term(data, A, lam)
        if data.trace_fixed:
            tau = self.params["tau"]
            cons["trace"] = (cp.sum(A) if data.diagonal else cp.trace(A)) == tau
        self.constraints = cons
        self.problem = cp.Problem(cp.Minimize(cp.sum(self.eps) + reg),
                                  list(cons.values()))
        assert self.problem.is_dpp(), "RankDML model must be DPP"

    def _regularizer_term(self, data, A, lam):
        d = data.n_features
        reg = data.regularizer
        if reg == "frobenius":
            return 0.5 * lam * cp.sum_squares(A)
        tau = cp.Parameter(pos=True, value=data.tau, name="tau")
        self.params["tau"] = tau
        if reg == "laplacian":
            return 0.5 * lam * cp.sum_squares(A - cp.sum(A) / d)
        # unit-trace prior: W1 = (A0 / tr A0)^{-1/2}, symmetric
        w, U = np.linalg.eigh(data.A0 / np.trace(data.A0))
        W1 = (U / np.sqrt(w)) @ U.T
        W1 = 0.5 * (W1 + W1.T)
        B = W1 @ A @ W1  # symmetric (d, d)
        const = cp.Parameter(name="const")
        self._derived["const"] = const
        if reg == "burg":
            quad = cp.Parameter(nonneg=True, name="lam_over_2tau2")
            self._derived["quad"] = quad
            term = quad * cp.sum_squares(B) - lam * cp.log_det(B) + const
        else:
            lin = cp.Parameter(nonneg=True, name="lam_over_2tau")
            self._derived["lin"] = lin
            N1 = W1 @ W1  # tr(B) = <W1^2, A>
            term = lin * cp.sum(cp.multiply(N1, A)) - 0.5 * lam * cp.log_det(B) + const
        self._sync()
        return term

    def _sync(self):
        """Derived parameters from ``lam`` and ``tau``."""
        if not self._derived:
            return
        lam = float(self.params["lam"].value)
        tau = float(self.params["tau"].value)
        d = self.data.n_features
        if self.data.regularizer == "burg":
            self._derived["quad"].value = lam / (2.0 * tau * tau)
            self._derived["const"].value = 0.5 * lam * (2.0 * d * np.log(tau) - d)
        else:
            self._derived["lin"].value = lam / (2.0 * tau)
            self._derived["const"].value = 0.5 * lam * (d * np.log(tau) - d)

    def set_params(self, **values):
        """Update ``lam`` (and ``tau``) in place; re-solving does not recompile.

        The canonical data is rebuilt too (validated first, so a rejected
        value leaves the model unchanged), so certificates stay in the
        paper's units.
        """
        for key in values:
            if key not in self.params:
                raise ValueError(
                    f"{key}: not a parameter of this model; have {sorted(self.params)}."
                )
        d = self.data
        from ..constraints import Triplets

        new = RankData.from_triplets(
            Triplets(d.X, d.triplets), regularizer=d.regularizer,
            lam=values.get("lam", d.lam),
            tau=values.get("tau", d.tau) if d.trace_fixed else None,
            A0=d.A0, diagonal=d.diagonal,
        )
        for key, val in values.items():
            self.params[key].value = float(val)
        self._sync()
        self.data = new

    def alpha(self):
        """Hinge multipliers (duals of the triplet constraints), shape (N,)."""
        return np.ravel(self.constraints["triplets"].dual_value)

    def value(self):
        """The solver's ``A`` as a solver variable (symmetrised matrix or a)."""
        val = self.A.value
        return val if self.data.diagonal else 0.5 * (val + val.T)

    def solve(self, *, solvers=SOLVERS, tol=1e-9, verbose=False):
        """Solve as declared; return a certified :class:`SolverResult`."""
        t0 = time.perf_counter()

        def certify(name, version, opts, times):
            return self.data.certificate(
                self.value(), self.alpha(), solver=name, solver_version=version,
                tolerances=opts, times=times,
            )

        cert, info = solve_certified(self.problem, certify, solvers=solvers, tol=tol,
                                     verbose=verbose)
        return SolverResult(
            M=self.data.to_matrix(self.value()),
            status=info["status"],
            objective=cert.objective,
            n_iter=info["n_iter"],
            certificate=cert,
            method="exact",
            info={"model": self, "alpha": self.alpha(), "attempts": info["attempts"]},
            time=time.perf_counter() - t0,
        )


def solve_exact(data, *, solvers=SOLVERS, tol=1e-9, verbose=False):
    """Certified exact solution of Eq. 7 / 9 / 11.

    Parameters
    ----------
    data : RankData
    solvers : sequence of str
        Clarabel first, SCS as fallback.
    tol : float
        Solver tolerance.
    verbose : bool

    Returns
    -------
    SolverResult
        ``method="exact"``; ``M`` is (d, d) (``diag(a)`` for diagonal
        problems); ``info["model"]`` is the :class:`RankDMLModel` (its
        ``problem`` is the ``cp.Problem``), ``info["alpha"]`` the hinge
        multipliers.

    Raises
    ------
    CertificateError, SolverError
        When no solver produces a certified point.
    """
    return RankDMLModel(data).solve(solvers=solvers, tol=tol, verbose=verbose)

"""Qwise vector model, exact: Eq. 14 and the smoothed Eq. 27-30 in CVXPY.

Law, Thome and Cord (2016), "Learning a distance metric from relative
comparisons between quadruplets of images": the vector model (Eq. 12-14)
and its smoothed primal (Appendix A), declared by :class:`QwiseVectorModel`
and solved, certified, by :func:`solve_exact`; :func:`declared_problem`
gives the problem as printed (:mod:`cvxmetric.model`'s contract).  The data,
the losses and the dual bound are in :mod:`._problem`.
"""

import dataclasses
import time

import cvxpy as cp
import numpy as np

from .._backend import check_host_input
from .._docs import fill_doc
from .._exact import SOLVERS, solve_certified
from .._validation import check_instance
from ..model import _ModelDeclared
from ..qwise.exact import PAPER, _check_parameter_names
from ..result import Certificate, SolverResult
from ._problem import QwiseVectorData

__all__ = ["QwiseVectorModel", "solve_exact", "declared_problem"]


def _check_host(data):
    """Refuse data on another namespace (:meth:`QwiseVectorData.on_device`)
    by the name of the samples they came from: CVXPY runs on NumPy."""
    check_host_input(data.Z, "X", "Qwise's vector exact (CVXPY) path")


# [declare:qwise-phi-h]
def _phi_h_expr(u, h):
    """``phi_h(u)`` of Eq. 29-30 (see :mod:`cvxmetric.qwise_vector._problem`):
    ``huber(pos(u + h), 2 h) / (4 h)``.  CVXPY's ``huber(x, M)`` is ``x^2``
    for ``|x| <= M`` and ``2 M |x| - M^2`` beyond; on ``x = pos(u + h) >= 0``
    it is increasing, so the composition is convex (DCP)."""
    return cp.huber(cp.pos(u + h), 2.0 * h) / (4.0 * h)
# [/declare]


class QwiseVectorModel:
    """The vector model as a CVXPY problem: Eq. 14 or its smoothed Eq. 27.

    ``loss="hinge"`` declares Eq. 14 as printed (slack form)::

        min_{w, b, xi}  0.5 (||w||^2 + b^2) + C_q sum_q xi_q + C_p sum_p xi_p
        s.t.  w^T (Psi_kl - Psi_ij) >= delta_q - xi_q     q = (i, j, k, l)
              y_p (w^T Psi_p - b) >= 1 - xi_p              p in S (y=-1), D (y=+1)
              xi >= 0,  (w, b) in C^{d+1}

    and ``loss="huber"`` the smoothed primal of Appendix A (Eq. 27 with
    ``L_1^h``, ``L_0^h`` of Eq. 29-30), a convex problem of its own::

        min_{w, b}  0.5 (||w||^2 + b^2)
                    + C_q sum_q phi_h(c_q - w^T (Psi_kl - Psi_ij))
                    + C_p sum_p phi_h(1 - y_p (w^T Psi_p - b))

    with ``c_q = 1`` (margin 1, ``L_1^h``) or ``-h`` (margin 0, ``L_0^h``).
    ``C^{d+1}`` is ``R^{d+1}_+`` for ``psi="squared"`` and ``R^{d+1}`` for
    ``psi="linear"``.  Changes from the paper: none; ``C_q``, ``C_p`` are
    ``cp.Parameter`` (the problem is DPP), ``h`` is a constant of the model
    (it shapes the loss).

    Parameters
    ----------
    data : QwiseVectorData

    Attributes
    ----------
    problem : cvxpy.Problem
    w : cvxpy.Variable of shape (d,)
    b : cvxpy.Variable (scalar)
    params : dict of cvxpy.Parameter
        ``C_q``, ``C_p``.
    constraints : dict of cvxpy.Constraint
        ``quadruplets``, ``pairs`` (hinge; only non-empty sets), and for
        ``psi="squared"`` the cone is in the variables' ``nonneg`` attribute.
    """

    def __init__(self, data, *, _feature_scale=1.0):
        # _feature_scale = sigma (powers of two, one per feature): the
        # internal twin of solve_exact, over Psi_j / sigma_j and
        # w~_j = sigma_j w_j, so that ||w||^2 = sum_j w~_j^2 / sigma_j^2;
        # 1 declares the problem as printed
        _check_host(data)
        self.data = data
        self.sigma = np.broadcast_to(np.asarray(_feature_scale, dtype=float),
                                     (data.n_features,)).copy()
        nonneg = data.nonneg
        twin = bool(np.any(self.sigma != 1.0))
        if twin:
            data = data.scaled(self.sigma)
        # [declare:qwise-eq14]
        w = cp.Variable(data.n_features, nonneg=nonneg, name="w")
        b = cp.Variable(nonneg=nonneg, name="b")
        C_q = cp.Parameter(nonneg=True, value=data.C_q, name="C_q")
        C_p = cp.Parameter(nonneg=True, value=data.C_p, name="C_p")
        t_q = data.Z @ w                               # (n_quadruplets,)
        t_p = cp.multiply(data.y, data.P @ w - b)      # (n_pairs,), Eq. 27's sign
        objective = 0.5 * (cp.sum_squares(w) + cp.square(b))
        if twin:
            objective = 0.5 * (cp.sum_squares(cp.multiply(1.0 / self.sigma, w))
                               + cp.square(b))
        cons = {}
        if data.loss == "hinge":
            if data.n_quadruplets:
                self.xi = cp.Variable(data.n_quadruplets, nonneg=True, name="xi")
                cons["quadruplets"] = t_q >= data.delta - self.xi
                objective = objective + C_q * cp.sum(self.xi)
            if data.n_pairs:
                self.xi_p = cp.Variable(data.n_pairs, nonneg=True, name="xi_p")
                cons["pairs"] = t_p >= 1.0 - self.xi_p
                objective = objective + C_p * cp.sum(self.xi_p)
        # [/declare]
        # [declare:qwise-eq27]
        else:
            c_q = data.c[:data.n_quadruplets]
            if data.n_quadruplets:
                objective = objective + C_q * cp.sum(_phi_h_expr(c_q - t_q, data.h))
            if data.n_pairs:
                objective = objective + C_p * cp.sum(_phi_h_expr(1.0 - t_p, data.h))
        # [/declare]
        self.w, self.b = w, b
        self.params = {"C_q": C_q, "C_p": C_p}
        self.constraints = cons
        self.problem = cp.Problem(cp.Minimize(objective), list(cons.values()))
        assert self.problem.is_dpp(), "the vector model must be DPP"

    def set_params(self, **values):
        """Update ``C_q`` / ``C_p`` (validated; the data follows)."""
        _check_parameter_names(self.params, values)
        d = self.data
        new = {"C_q": d.C_q, "C_p": d.C_p}
        new.update({k: float(v) for k, v in values.items()})
        new_data = dataclasses.replace(d, w_weight=1.0, **new)
        for key, val in values.items():
            self.params[key].value = val
        self.data = new_data

    def omega(self):
        """``[w; b]`` from the variables' values (in the user's units)."""
        w = np.asarray(self.w.value, float) / self.sigma
        return np.append(w, float(self.b.value))

    def beta(self):
        """Dual multipliers divided by the weights (hinge), or ``None``:
        the smoothed problem's dual point is the slope at ``omega``."""
        if self.data.loss != "hinge":
            return None
        return _hinge_beta(self.data, lambda key: self.constraints[key].dual_value)

    def solve(self, *, solvers=SOLVERS, tol=1e-9, verbose=False):
        """Solve as declared; a certified :class:`SolverResult` whose ``M``
        is :meth:`QwiseVectorData.matrix` and ``info`` holds ``w``, ``b``."""
        t0 = time.perf_counter()

        def certify(name, version, opts, times):
            if self.w.value is None or self.b.value is None:
                return Certificate.no_point(name, version, opts, times)
            return self.data.certificate(
                self.data.project(self.omega()), self.beta(), solver=name,
                solver_version=version, tolerances=opts, times=times)

        cert, info = solve_certified(self.problem, certify, solvers=solvers, tol=tol,
                                     verbose=verbose)
        return vector_result(self.data, self.data.project(self.omega()), cert,
                             status=info["status"], n_iter=info["n_iter"],
                             method="exact", info={"attempts": info["attempts"]},
                             time=time.perf_counter() - t0)


def _hinge_beta(data, dual):
    """The multipliers of Eq. 14's hinges divided by their weights
    (``beta_r`` = the dual of term ``r``'s constraint / ``C_r``), from
    ``dual(key)`` of the constraints ``quadruplets`` and ``pairs`` (the
    non-empty sets); None when one has no multipliers."""
    parts = []
    for key, C, n in (("quadruplets", data.C_q, data.n_quadruplets),
                      ("pairs", data.C_p, data.n_pairs)):
        if not n:
            continue
        lam = dual(key)
        if lam is None:
            return None
        parts.append(np.ravel(lam) / C if C > 0 else np.zeros(n))
    return np.concatenate(parts)


def vector_result(data, omega, cert, *, status, n_iter, method, info, time=0.0,
                  raw_status=""):
    """The :class:`SolverResult` of a vector-model point ``omega = [w; b]``:
    ``M`` is :meth:`QwiseVectorData.matrix`, ``info`` gains ``w``, ``b``,
    ``psi`` and ``loss``."""
    info = dict(info, **data.point_info(omega))
    return SolverResult(M=data.matrix(omega), status=status, objective=cert.objective,
                        n_iter=n_iter, certificate=cert, method=method, info=info,
                        time=time, raw_status=raw_status)


def solve_exact(data, *, solvers=SOLVERS, tol=1e-9, verbose=False):
    """Certified exact solution of Eq. 14 (``loss="hinge"``) or of the smoothed
    Eq. 27 (``loss="huber"``), see :class:`QwiseVectorModel`.

    Parameters
    ----------
    data : QwiseVectorData
    solvers : sequence of str
        Clarabel first, SCS as fallback.
    tol : float
        Solver tolerance.

    Returns
    -------
    SolverResult
        ``method="exact"``; ``info["w"]``, ``info["b"]``; ``M`` is ``diag(w)``
        (``psi="squared"``) or ``w w^T`` (``psi="linear"``).

    Notes
    -----
    Features far from unit scale are solved through a twin over
    ``Psi_j / 2^k_j`` (:meth:`QwiseVectorData.feature_scale`,
    :meth:`QwiseVectorData.scaled`); the declared problem is
    :class:`QwiseVectorModel` as printed, and the result is certified on
    it.
    """
    check_instance(data, QwiseVectorData, "data")
    _check_host(data)
    return QwiseVectorModel(data, _feature_scale=data.feature_scale()).solve(
        solvers=solvers, tol=tol, verbose=verbose)


# ---------------------------------------------------------------------------
# The declared vector problem (cvxmetric.model's contract)
# ---------------------------------------------------------------------------


class _QwiseVectorDeclared(_ModelDeclared):
    """Eq. 14 / Eq. 27-30 as declared by :class:`QwiseVectorModel` on the
    user's data (:func:`declared_problem`)."""

    def __init__(self, model):
        self.model = model
        data = model.data
        variables = {"w": model.w, "b": model.b}
        for key in ("xi", "xi_p"):
            if getattr(model, key, None) is not None:
                variables[key] = getattr(model, key)
        super().__init__(
            family="qwise_vector", paper=PAPER,
            equation="Eq. 14" if data.loss == "hinge" else "Eq. 27-30",
            problem=model.problem, variables=variables, parameters=model.params,
            constraints=model.constraints, metric_key="w", data=data)
        self._linear = not data.nonneg

    # -- psi="linear": the metric w w^T is not affine in the variable w ----

    @property
    def M(self):
        if self._linear:
            raise ValueError(
                "M: with psi='linear' the metric is w w^T, which is not affine in "
                "the variable w; write added constraints and terms with "
                "dp.variables['w'] (and dp.variables['b']).")
        return super().M

    def matrix(self):
        """``diag(w)`` (``psi="squared"``) or ``w w^T`` (``psi="linear"``)."""
        if not self._linear:
            return super().matrix()
        w = self.variable.value
        if w is None:
            raise ValueError("w: has no value; call solve() first.")
        w = np.asarray(w, dtype=float)
        return np.outer(w, w)

    def _check_matrix(self, M):
        if not self._linear:
            return super()._check_matrix(M)
        if M is None:
            return self.matrix()
        from .._validation import check_finite

        d = self.n_features
        M = check_finite(M, "M")
        if M.shape not in ((d,), (d, d)):
            raise ValueError(f"M: expected w of shape ({d},) or w w^T of shape "
                             f"({d}, {d}), got {M.shape}.")
        return M

    def metric(self, M=None, preprocessor=None):
        M = self._check_matrix(M)
        if M.ndim == 1:
            M = np.outer(M, M)
        return super().metric(M, preprocessor=preprocessor)

    # -- the family's point: omega = [w; b] ------------------------------------

    def _omega(self, M):
        """``[w; b]`` of a checked ``M``: ``w = diag(M)`` (squared), the
        given ``w`` or, for ``w w^T`` (whose sign of ``w`` is lost), the
        solved ``w`` when ``M`` is its ``w w^T`` (linear); ``b`` is the
        solved threshold, 0 before a solve."""
        if M.ndim == 1:
            w = M
        elif not self._linear:
            w = np.diag(M)
        else:
            w = self.variable.value
            if w is None or not np.array_equal(M, np.outer(w, w)):
                raise ValueError(
                    "M: with psi='linear', M = w w^T does not determine the sign "
                    "of w; pass w itself (shape (n_features,)).")
            w = np.asarray(w, dtype=float)
        b = self.variables["b"].value
        return np.append(w, 0.0 if b is None else float(b))

    def _family_objective(self, M):
        return self.data.objective(self._omega(M))

    def _family_certificate(self, M):
        data, omega = self.data, self._omega(M)
        beta, missing = None, False
        if data.loss == "hinge":
            # Eq. 14's bound needs the hinges' multipliers
            beta = _hinge_beta(data, self._dual)
            missing = beta is None
        # the smoothed problem's dual point is the slope at omega (beta=None)
        cert = data.certificate(omega, beta, **self._certificate_args())
        if missing:
            self._warn_no_multipliers()
            cert = Certificate.from_bound(
                cert.objective, -np.inf, max_violation=cert.max_violation,
                min_eig=cert.min_eig, solver=cert.solver, times=cert.times,
                tol_gap=cert.tol_gap, tol_feas=cert.tol_feas)
        return cert

    def _family_repair(self, M):
        # an interior-point (w, b) >= 0 only to the solver's tolerance: its
        # projection on K, the point the exact path certifies
        if self._linear:
            return M
        b = self.variables["b"]
        if b.value is not None and float(b.value) < 0:
            b.value = 0.0
        w = np.diag(M)
        if np.all(w >= 0):
            return M
        return np.diag(np.maximum(w, 0.0))


@fill_doc
def declared_problem(data):
    """Eq. 14 (``loss="hinge"``) or the smoothed Eq. 27-30 (``"huber"``)
    exactly as printed, in the user's units, unsolved.

    :class:`QwiseVectorModel` without its feature scaling: variables ``w``
    (the metric variable: ``M = diag(w)`` for ``psi="squared"``, ``w w^T``
    for ``psi="linear"``) and the threshold ``b``, with the hinge also
    ``xi`` / ``xi_p``; parameters ``C_q``, ``C_p``; constraints
    ``quadruplets`` and ``pairs`` (hinge, non-empty sets only; the smoothed
    problem has none).  The cone ``(w, b) >= 0`` of ``psi="squared"`` is
    the variables' ``nonneg`` attribute.  The certificate (Appendix A's
    Fenchel bound) takes the hinge's multipliers from those constraints of
    the last solve; the smoothed bound needs none.  A point's threshold is
    the solved ``b`` (0 before a solve).

    Parameters
    ----------
    data : QwiseVectorData
        In the user's units (not :meth:`~QwiseVectorData.scaled`).

    {declared_returns_model}
    """
    check_instance(data, QwiseVectorData, "data")
    _check_host(data)
    if np.any(np.asarray(data.w_weight) != 1.0):
        raise ValueError("data: a scaled twin (QwiseVectorData.scaled) is not the "
                         "problem as printed; declare the user's data.")
    return _QwiseVectorDeclared(QwiseVectorModel(data))

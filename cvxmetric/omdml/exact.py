"""OMDML, exact: Eq. 3 of Wu, Hoi et al. (2016) at a fixed combination, in CVXPY.

The formulation (the specification every OMDML solver answers to)::

    minimise_{M_1..M_m PSD, xi >= 0}  0.5 sum_i ||M_i||_F^2 + C sum_t xi_t
    subject to  xi_t >= sum_i theta_i (d_i(p_t, p_t+) - d_i(p_t, p_t-)) + 1

with ``d_i(p, q) = (x_p - x_q)^T M_i (x_p - x_q)`` in view ``i`` -- the
hinge of Eq. 3 in slack form, margin 1 as printed (Algorithm 1's
``gamma`` is only the threshold that triggers an online update).  ``theta``
in the simplex is fixed: for fixed ``theta`` the problem is convex in the
``M_i``.  Changes from the paper: none; ``C`` and ``theta`` are
``cp.Parameter`` (DPP), so the joint search over ``theta``
(:func:`solve_joint_grid`) re-solves without recompiling.

The joint problem over ``theta`` is not convex (docs/omdml.md): with
``N_i = theta_i M_i`` the loss is linear in ``N`` but the regulariser
becomes ``0.5 sum_i ||N_i||^2 / theta_i^2``, and minimising it over the
simplex leaves ``0.5 (sum_i ||N_i||_F^{2/3})^3``, a non-convex penalty.
Two references for small ``m``: :func:`solve_joint_grid` (a global search
on a grid of the simplex with the exact inner solve) and
:func:`solve_joint_alternating` (exact ``M``-steps and exact ``theta``-steps,
a local solution).
"""

import itertools
import time

import cvxpy as cp
import numpy as np

from .._exact import SOLVERS, solve_certified
from ..result import SolverResult
from ._problem import OMDMLData, check_theta

__all__ = ["OMDMLModel", "solve_exact", "solve_joint_grid", "solve_joint_alternating",
           "PAPER"]

PAPER = ("Wu, Hoi, Zhao, Miao, Liu: Online multi-modal distance metric learning "
         "(TKDE 2016)")


# [declare:omdml-sqdist]
def _sqdist_expr(M, D):
    """``D_t^T M D_t`` for the rows of ``D`` (T, n_i), vectorised."""
    return cp.sum(cp.multiply(D @ M, D), axis=1)
# [/declare]


class OMDMLModel:
    """Eq. 3 at fixed ``theta`` declared as a CVXPY problem.

    Parameters
    ----------
    data : OMDMLData
    theta : array_like of shape (m,), optional
        In the simplex; default uniform.

    Attributes
    ----------
    problem : cvxpy.Problem
    M : list of cvxpy.Variable (n_i, n_i), symmetric
    xi : cvxpy.Variable (T,)
    params : dict of cvxpy.Parameter
        ``C`` and ``theta``.
    constraints : dict of cvxpy.Constraint
        ``hinge`` and ``psd_0`` .. ``psd_{m-1}``.
    """

    def __init__(self, data, theta=None):
        m = data.n_views
        theta = np.full(m, 1.0 / m) if theta is None else check_theta(theta, m)
        self.data = data
        # [declare:omdml-eq3]
        C = cp.Parameter(nonneg=True, value=data.C, name="C")
        th = cp.Parameter(m, nonneg=True, value=theta, name="theta")
        M = [cp.Variable((n, n), symmetric=True, name=f"M_{i}")
             for i, n in enumerate(data.dims)]
        xi = cp.Variable(data.n_triplets, nonneg=True, name="xi")
        f = sum(th[i] * (_sqdist_expr(M[i], data.A[i]) - _sqdist_expr(M[i], data.B[i]))
                for i in range(m))  # (T,) combined d(p, p+) - d(p, p-)
        cons = {"hinge": xi >= f + 1.0}
        cons.update({f"psd_{i}": M[i] >> 0 for i in range(m)})
        objective = 0.5 * sum(cp.sum_squares(Mi) for Mi in M) + C * cp.sum(xi)
        # [/declare]
        self.M, self.xi = M, xi
        self.params = {"C": C, "theta": th}
        self.constraints = cons
        self.problem = cp.Problem(cp.Minimize(objective), list(cons.values()))
        assert self.problem.is_dpp(), "the OMDML model must be DPP"

    @property
    def theta(self):
        return np.asarray(self.params["theta"].value, dtype=float)

    def set_theta(self, theta):
        """A new combination (validated), re-solved without recompiling."""
        self.params["theta"].value = check_theta(theta, self.data.n_views)

    def solve(self, *, solvers=SOLVERS, tol=1e-9, verbose=False):
        """Solve as declared; a certified :class:`SolverResult` (``M``: the
        block-diagonal matrix of the ``M_i``; ``info["metrics"]``: the list)."""
        t0 = time.perf_counter()
        theta = self.theta

        def certify(name, version, opts, times):
            Ms = [0.5 * (Mi.value + Mi.value.T) for Mi in self.M]
            alpha = np.ravel(self.constraints["hinge"].dual_value)
            return self.data.certificate(Ms, theta, alpha, solver=name,
                                         solver_version=version, tolerances=opts,
                                         times=times)

        cert, info = solve_certified(self.problem, certify, solvers=solvers, tol=tol,
                                     verbose=verbose)
        Ms = [0.5 * (Mi.value + Mi.value.T) for Mi in self.M]
        return omdml_result(Ms, theta, cert, status=info["status"],
                            n_iter=info["n_iter"], method="exact",
                            info={"attempts": info["attempts"]},
                            time=time.perf_counter() - t0)


def omdml_result(Ms, theta, cert, *, status, n_iter, method, info, time=0.0,
                 raw_status=""):
    """The :class:`SolverResult` of per-view matrices ``Ms`` at ``theta``:
    ``M`` is their block-diagonal matrix, ``info`` gains ``metrics`` and
    ``theta``."""
    from scipy.linalg import block_diag

    info = dict(info, metrics=[np.array(M) for M in Ms], theta=np.array(theta))
    return SolverResult(M=block_diag(*Ms), status=status, objective=cert.objective,
                        n_iter=n_iter, certificate=cert, method=method, info=info,
                        time=time, raw_status=raw_status)


def solve_exact(data, theta=None, *, solvers=SOLVERS, tol=1e-9, verbose=False):
    """Certified exact solution of Eq. 3 at fixed ``theta`` (default uniform).

    Parameters
    ----------
    data : OMDMLData
    theta : array_like of shape (m,), optional

    Returns
    -------
    SolverResult
    """
    if not isinstance(data, OMDMLData):
        raise TypeError("data: expected an OMDMLData instance.")
    return OMDMLModel(data, theta).solve(solvers=solvers, tol=tol, verbose=verbose)


def simplex_grid(m, resolution):
    """Every ``theta`` with entries ``k / resolution`` summing to 1."""
    pts = [c for c in itertools.product(range(resolution + 1), repeat=m)
           if sum(c) == resolution]
    return np.array(pts, dtype=float) / resolution


def solve_joint_grid(data, resolution=10, *, max_views=3, **kwargs):
    """The joint problem (Eq. 3 over ``theta`` too) by a global grid search.

    Every ``theta`` of :func:`simplex_grid` (``resolution`` steps per
    edge) is solved exactly, warm from the same compiled model.  The best is
    the joint optimum up to the grid: the true ``theta*`` may lie between
    grid points.

    Returns
    -------
    best : SolverResult
        ``info["grid"]``: ``(thetas, objectives)`` of every grid point.
    """
    if data.n_views > max_views:
        raise ValueError(f"data: the grid search is for at most {max_views} views "
                         f"(got {data.n_views}); raise max_views knowingly.")
    model = OMDMLModel(data)
    thetas = simplex_grid(data.n_views, int(resolution))
    best, objs = None, []
    for th in thetas:
        model.set_theta(th)
        res = model.solve(**kwargs)
        objs.append(res.objective)
        if best is None or res.objective < best.objective:
            best = res
    best.info["grid"] = (thetas, np.array(objs))
    best.info["resolution"] = int(resolution)
    return best


def _theta_step(data, Ms):
    """``argmin_theta`` of Eq. 3 with the ``M_i`` fixed: an LP over the simplex."""
    F = data.view_scores(Ms)  # (T, m)
    th = cp.Variable(data.n_views, nonneg=True)
    prob = cp.Problem(cp.Minimize(cp.sum(cp.pos(F @ th + 1.0))), [cp.sum(th) == 1])
    prob.solve(solver="CLARABEL")
    theta = np.clip(np.asarray(th.value, dtype=float), 0.0, None)
    return theta / theta.sum()


def solve_joint_alternating(data, theta0=None, *, max_rounds=20, rtol=1e-9, **kwargs):
    """A local solution of the joint problem: exact ``M``-steps (Eq. 3 at
    fixed ``theta``) and exact ``theta``-steps (an LP) until the objective
    stops decreasing.

    Returns
    -------
    SolverResult
        ``info["rounds"]``, ``info["history"]`` (objective per round).
    """
    m = data.n_views
    theta = np.full(m, 1.0 / m) if theta0 is None else check_theta(theta0, m)
    model = OMDMLModel(data, theta)
    res = model.solve(**kwargs)
    history = [res.objective]
    for _ in range(max_rounds):
        theta_new = _theta_step(data, res.info["metrics"])
        model.set_theta(theta_new)
        new = model.solve(**kwargs)
        history.append(new.objective)
        if new.objective >= res.objective - rtol * max(1.0, abs(res.objective)):
            if new.objective < res.objective:
                res = new
            break
        res = new
    res.info["rounds"] = len(history) - 1
    res.info["history"] = history
    return res

"""Qwise vector model, fast: Algorithm 2 of Law, Thome and Cord (2016).

:class:`ProjectedNewton` solves the smoothed vector model of Appendix A
(Eq. 27-30, declared in :class:`~cvxmetric.qwise_vector.QwiseVectorModel`,
data and dual bound in :mod:`._problem`) by a projected Newton method,
certified by the relative duality gap of each iterate's own dual point.
Features far from unit scale are solved through the reduction
:class:`FeatureScaling`.  The answer travels back through the reductions as
the Eq. 8 solvers' :class:`~cvxmetric.qwise.fast.QwiseSolution`.
"""

import dataclasses
import warnings
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.linalg
from sklearn.utils._param_validation import StrOptions

from .._linesearch import backtracking
from .._reductions import Reduction
from .._solver import IterativeSolver
from ..qwise.fast import QwiseSolution, _as_solution
from ._problem import QwiseVectorData

__all__ = ["ProjectedNewton", "FeatureScaling"]


# ---------------------------------------------------------------------------
# Reductions: the units the iterations run in
# ---------------------------------------------------------------------------


class FeatureScaling(Reduction):
    """The vector model in units where every feature is of order one.

    :meth:`QwiseVectorData.scaled` by the powers of two ``sigma`` (one per
    feature, :meth:`QwiseVectorData.feature_scale`): a Jacobi scaling,
    ``w~ = sigma w``, with the same ``b``, losses and objective.  ``apply``
    gives the scaled problem and the warm start's ``w`` times ``sigma``;
    ``invert`` maps a :class:`QwiseSolution` ``omega~`` back to ``[w~ /
    sigma; b]`` (exact) and reports ``info["feature_scale"]``.  The
    certificate is computed afterwards on the problem given.  ``sigma`` is
    the reduction's parameter (built per run, from the data); the inverse
    data is ``sigma``.

    Parameters
    ----------
    sigma : ndarray of shape (n_features,)
    """

    name = "feature-scale"

    def __init__(self, sigma):
        self.sigma = np.asarray(sigma, dtype=float)

    def accepts(self, data):
        return (isinstance(data, QwiseVectorData)
                and self.sigma.shape == (data.n_features,))

    def apply(self, data, init):
        sigma = self.sigma
        if init is not None:
            init = dataclasses.replace(
                init, info=dict(init.info, w=np.asarray(init.info["w"]) * sigma))
        return data.scaled(sigma), init, sigma

    def invert(self, solution, sigma):
        omega = np.append(solution.x[:-1] / sigma, solution.x[-1])
        return solution._replace(x=omega, info={**(solution.info or {}),
                                                "feature_scale": sigma})


# ---------------------------------------------------------------------------
# Algorithm 2: projected Newton on the smoothed vector model (Appendix A)
# ---------------------------------------------------------------------------


def _solve_pd(H, g):
    """``H^{-1} g`` for the Newton system; when round-off makes ``H``
    singular (a regulariser of 2^-56 on features of order 1e4, no term in
    the quadratic band), a ridge of 1e-12 of its largest diagonal entry."""
    try:
        with warnings.catch_warnings():
            # ill-conditioning is expected there (curvature 2^-56 beside the
            # band's): the direction only has to descend, the line search
            # and the certificate judge the step
            warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
            return scipy.linalg.solve(H, g, assume_a="pos")
    except np.linalg.LinAlgError:
        ridge = 1e-12 * max(float(np.max(np.diag(H))), 1e-300)
        return scipy.linalg.solve(H + ridge * np.eye(len(g)), g, assume_a="pos")


class NewtonState(NamedTuple):
    iter_num: int
    error: float          # relative duality gap (of the stage's problem)
    s: np.ndarray         # (n_terms,) signed margins at omega
    grad: np.ndarray      # (e,) Eq. 31 at omega
    objective: float
    step_sq: float        # ||omega_t - omega_{t-1}||^2 (the paper's stop)
    eta: float            # the step size taken
    n_free: int
    n_quadratic: int
    h: float              # the smoothing of the current stage
    final: bool           # whether the stage is the problem's own h


@dataclass
class ProjectedNewton(IterativeSolver):
    """Algorithm 2 of Law et al. (2016): projected Newton on Eq. 27-30.

    Solves the smoothed vector model declared in
    :class:`~cvxmetric.qwise_vector.QwiseVectorModel` (``loss="huber"``)::

        omega_{t+1} = Pi_C(omega_t - eta_t H_t^{-1} grad_t)

    with the gradient Eq. 31 and the Hessian Eq. 32 (the identity plus the
    terms in the quadratic band of their loss).

    * ``line_search=False`` is the algorithm as printed: the full Newton
      step, projected, with the unit step size.  Newton's method on a
      piecewise quadratic is not globally convergent and this can cycle;
      the status then says so.
    * ``line_search=True`` (default): an Armijo backtracking search along
      the projection arc ``Pi_C(omega + eta d)`` (the paper points to
      Boyd and Vandenberghe, Sec. 9.5.2), and, for ``psi="squared"``
      (``omega >= 0``), the Newton system solved on the *free* variables
      only -- those not at zero with a gradient pushing outward, the rest
      take a projected gradient step (Bertsekas' projected Newton method,
      1982).  Projecting a full Newton step can increase the objective
      when a bound is active; with no bound active the step is the
      printed one.  For ``psi="linear"`` there is no projection.
    * ``continuation=True`` (default) first solves the problem with a
      larger smoothing, ``h_0 = 0.5`` (the paper's largest), then with
      ``h`` divided by 3 at each stage down to the problem's own ``h``,
      each stage warm-started from the last.  A larger ``h`` puts more
      terms in the quadratic band, where Newton's model is exact; on the
      benchmark at d = 1000 this took 138 -> 74 iterations.  Intermediate
      stages stop at a relative gap of :attr:`_STAGE_TOL`; only the last
      stage's gap counts.

    Certificate: every iterate has its own dual point (the slopes of the
    smoothed losses, :mod:`cvxmetric.qwise_vector._problem`), so each iteration's
    ``error`` is a relative duality gap; the run stops when the final
    stage's is at most ``tol`` (the paper's ``||omega_t -
    omega_{t-1}||^2 <= eps`` is kept in the state as ``step_sq``).  The
    objective is piecewise quadratic, so once the partition of the terms
    into zero / quadratic / linear parts is found the Newton step is exact
    and the gap drops to round-off.

    Features far from unit scale are solved in units where each is of order
    one (the reduction :class:`FeatureScaling`, a stage ``feature-scale`` of
    the trace); the point is mapped back exactly and certified on the
    problem given.

    Attributes
    ----------
    maxiter : int
        Iterations over all stages.
    tol : float
        Relative duality gap ``(P - D) / max(1, |P|)`` to stop at.
    line_search : bool
        Armijo backtracking with the free-variable Newton step (default),
        or the printed unit step.
    continuation : bool
        Solve a sequence of decreasing ``h`` (default) or the problem's
        ``h`` directly.
    start : {"zeros", "ones"}
        Starting point (the paper: "e.g. omega = 1"), projected onto the
        cone; a warm start ``init`` (a result of a vector-model solve)
        replaces it.
    """

    maxiter: int = 500
    tol: float = 1e-10
    line_search: bool = True
    continuation: bool = True
    start: str = "zeros"

    name = "newton"

    _parameter_constraints = {
        **IterativeSolver._parameter_constraints,
        "line_search": ["boolean"],
        "continuation": ["boolean"],
        "start": [StrOptions({"zeros", "ones"})],
    }

    #: Armijo's sufficient-decrease fraction and the most halvings per step
    #: (a Newton step where only the regulariser curves the objective can
    #: overshoot by 2^150 on features of order 1e4: digits' pixels x 1000)
    _ARMIJO = 1e-4
    _HALVINGS = 200
    #: Continuation: the first smoothing, the factor between stages and the
    #: relative gap at which an intermediate stage ends.
    _H0 = 0.5
    _H_FACTOR = 1.0 / 3.0
    _STAGE_TOL = 1e-4

    def blas_flops(self, data):
        # one thread: its calls are matrix-vector passes over the terms
        # (memory-bound) and Gram products of the few hundred terms in the
        # quadratic band.  Measured with forced_blas_threads on the benchmark
        # data: d = 1000, 10^4 terms 2.8 s on one thread, 7.1 s on two;
        # d = 100, 10^6 terms 9.6 s against 9.35 s
        return 0.0

    @staticmethod
    def _rel_gap(data, omega, s, grad, obj):
        """Relative duality gap at ``omega`` from its own dual point; the
        adjoint ``sum C beta y a`` is ``reg omega - grad`` (Eq. 31)."""
        beta = data.slopes(s)
        hh = data.smoothing
        bound = float(data.C @ (beta * data.c + hh * beta * (1.0 - beta))) \
            - data.conjugate_reg(data.reg * omega - grad)
        return max(obj - bound, 0.0) / max(1.0, abs(obj))

    def _stage(self, data, h):
        """The problem at smoothing ``h`` (the data itself at its own)."""
        return data if h == data.h else data.with_loss("huber", h)

    def reductions(self, data):
        """:class:`FeatureScaling` when the features of ``data`` are far
        from unit scale (:meth:`~cvxmetric.qwise_vector.QwiseVectorData.feature_scale`);
        the result is mapped back and certified on ``data`` itself."""
        sigma = data.feature_scale()
        return [] if np.all(sigma == 1.0) else [FeatureScaling(sigma)]

    def solution(self, omega, state):
        """The last iterate ``omega = [w; b]``."""
        return QwiseSolution(omega)

    def init_state(self, data, init=None):
        if data.loss != "huber":
            raise ValueError(
                "loss: the projected Newton method (Algorithm 2) solves the smoothed "
                "problem of Eq. 27-30; set loss='huber' (the hinge problem, Eq. 14, "
                "is solved by the exact path, solver='exact').")
        e = data.n_features + 1
        if init is not None:
            omega = np.append(np.asarray(init.info["w"], float), float(init.info["b"]))
            if omega.shape != (e,):
                raise ValueError(f"init: expected w of shape ({e - 1},), got "
                                 f"{omega.shape[0] - 1} entries.")
        else:
            omega = np.zeros(e) if self.start == "zeros" else np.ones(e)
        omega = data.project(omega)
        # a warm start is near the optimum already: no continuation
        h = max(data.h, self._H0) if self.continuation and init is None else data.h
        state = self._state(self._stage(data, h), omega, 0, np.inf, 1.0, e, 0, h,
                            h == data.h)
        return omega, state

    def converged(self, state):
        return state.final and state.error <= self.tol

    def _state(self, data, omega, it, step_sq, eta, n_free, n_quad, h, final, s=None):
        """The state at ``omega`` for ``data`` (already at smoothing ``h``)."""
        if s is None:
            s = data.margins(omega)
        grad = data.gradient(omega, s)
        obj = data.objective(omega, s)
        err = self._rel_gap(data, omega, s, grad, obj)
        return NewtonState(it, err, s, grad, obj, step_sq, eta, n_free, n_quad, h, final)

    def update(self, omega, state, data):
        stage = self._stage(data, state.h)
        if not state.final and state.error <= max(self.tol, self._STAGE_TOL):
            # next stage: the same point, a smaller h
            h = max(data.h, state.h * self._H_FACTOR)
            stage = self._stage(data, h)
            state = self._state(stage, omega, state.iter_num, state.step_sq, state.eta,
                                state.n_free, state.n_quadratic, h, h == data.h)
        g, s = state.grad, state.s
        e = omega.shape[0]
        if self.line_search and stage.nonneg:
            # Bertsekas' bound set: at zero with the gradient pointing out
            free = ~((omega <= 0) & (g > 0))
        else:
            free = np.ones(e, bool)
        F = np.flatnonzero(free)
        # bound variables: a gradient step, cut back to 0 by the projection
        direction = -g.copy()
        if F.size:
            direction[F] = -_solve_pd(stage.hessian(omega, s, F), g[F])
        f0 = state.objective

        def trial(eta):
            new = stage.project(omega + eta * direction)
            s_new = stage.margins(new)
            return new, s_new, stage.objective(new, s_new)

        search = backtracking(
            trial, lambda eta, v: not self.line_search
            or v[2] <= f0 + self._ARMIJO * float(g @ (v[0] - omega)),
            max_backtracks=self._HALVINGS - 1, deadline=self.deadline)
        eta = search.step
        if search.accepted:
            new, s_new, _ = search.value
        else:
            # no decrease found (the point is optimal to round-off), or the
            # budget is spent: no step
            new, s_new = omega, s
        step = new - omega
        n_quad = int(stage.quadratic_set(s).shape[0])
        return new, self._state(stage, new, state.iter_num + 1, float(step @ step), eta,
                                int(F.size), n_quad, state.h, state.final, s=s_new)

    def finalize(self, omega, state, data):
        """Certify :meth:`solution` (after the reductions: a
        :class:`QwiseSolution`; called on an iterate, that iterate) on
        ``data``."""
        sol = _as_solution(omega, state, self)
        omega = sol.x
        cert = data.certificate(omega, solver=self.name,
                                tolerances={"tol": self.tol,
                                            "line_search": self.line_search,
                                            "continuation": self.continuation})
        info = dict(data.point_info(omega), step_sq=state.step_sq, eta=state.eta,
                    n_free=state.n_free, n_quadratic=state.n_quadratic,
                    **data.backend_info())
        return data.matrix(omega), cert, sol.reported(info)

"""Qwise, fast: hand-written solvers of the problem in :mod:`.exact`.

Both solve Eq. 8 / Eq. 11 as declared in :class:`~cvxmetric.qwise.QwiseModel`
(canonical form and dual in :mod:`._problem`); neither builds a (d, d) matrix
per constraint.

:class:`ProjectedSubgradient`
    Algorithm 1 of the paper: ``M <- Pi_PSD(M - eta_t grad)`` with the
    subgradient of Eq. 15, the incremental update of ``h(N+)`` (Sec. 4.1) and
    the active-set strategy of Sec. 4.3 (a full re-check every
    ``recheck_every`` iterations, only the accumulated active list in
    between, and a final full check before stopping).  Stops on the paper's
    rule ``||M_t - M_{t-1}||_F^2 <= eps``.  It is faithful, and slow: a
    subgradient method converges like ``O(1/sqrt(t))``.

:class:`QwiseDualSolver` (the default fast solver)
    A proximal-point method whose subproblems are solved in the dual.  The
    subproblem ``min_M f(M) + ||M - M_k||_F^2 / (2 tau)`` has the smooth,
    box-constrained dual

        min_{0 <= alpha <= c}  ||Pi_+(B + S(alpha))||_F^2 / (2 mu') - delta^T alpha,

    ``mu' = mu + 1/tau``, ``B = M_k / tau - R``, with gradient
    ``D_M(far) - D_M(near) - delta`` at ``M = Pi_+(B + S(alpha)) / mu'``,
    solved by L-BFGS-B (SciPy) warm-started from the previous multipliers.
    ``tau`` grows geometrically, so few outer steps are needed; for the
    Frobenius regulariser (``mu = 1``) no proximal term is needed at all
    (``tau = inf``) and the dual above is the problem's own.  It stops on the
    relative duality gap of the *original* problem, the same certificate the
    exact path uses, so "converged" means "certified to ``tol``".
"""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.optimize

from .._linalg import eigh_psd, project_psd
from .._solver import IterativeSolver

__all__ = ["ProjectedSubgradient", "QwiseDualSolver"]


def _scale_estimate(data):
    """A scalar ``s`` such that ``M ~ s I`` puts distances at the margins' scale."""
    dist = data.op.sqdist(G=np.eye(data.n_features))
    far = dist[data.far_q]
    mean_far = float(np.mean(far[far > 0])) if np.any(far > 0) else 1.0
    delta = float(np.mean(np.abs(data.delta_q))) or 1.0
    return delta / mean_far


# ---------------------------------------------------------------------------
# Default fast solver: proximal point + L-BFGS-B on the dual
# ---------------------------------------------------------------------------


class DualState(NamedTuple):
    iter_num: int
    error: float
    alpha: np.ndarray
    tau: float
    n_evals: int


@dataclass
class QwiseDualSolver(IterativeSolver):
    """Proximal-point method with dual L-BFGS-B subproblems (default "fast").

    Attributes
    ----------
    maxiter : int
        Maximum number of proximal (outer) steps.
    tol : float
        Target relative duality gap of the original problem.
    inner_maxiter : int
        L-BFGS-B iterations per subproblem.
    tau0 : float, optional
        First proximal step; default from the data's scale.
    tau_growth : float
        ``tau_{k+1} = tau_growth * tau_k``.
    memory : int
        L-BFGS memory.
    """

    maxiter: int = 40
    tol: float = 1e-9
    inner_maxiter: int = 3000
    tau0: float = None
    tau_growth: float = 10.0
    memory: int = 20

    name = "fast"

    def init_state(self, data, init=None):
        d = data.n_features
        if init is not None:
            M = init.M
            alpha = init.info.get("alpha")
        else:
            M, alpha = np.zeros((d, d)), None
        if alpha is None:
            alpha = np.zeros(data.n_constraints)
        alpha = np.clip(alpha, 0.0, data.c_q)
        if data.mu > 0:
            tau = np.inf
        elif self.tau0 is not None:
            tau = float(self.tau0)
        else:
            s = _scale_estimate(data)
            tau = s * np.sqrt(d) / max(np.linalg.norm(data.R), 1e-300)
        return M, DualState(0, np.inf, alpha, tau, 0)

    def _inner(self, data, M_center, alpha0, tau):
        mu_p = data.mu + (0.0 if np.isinf(tau) else 1.0 / tau)
        B = -data.R if np.isinf(tau) else M_center / tau - data.R
        delta = data.delta_q
        near, far = data.near_q, data.far_q
        scale = max(1.0, float(np.max(np.abs(delta))))

        def fun(alpha):
            Z = B + data.op.gram(data.dual_pair_weights(alpha))
            w, V = eigh_psd(Z)
            pos = w > 0
            G = V[:, pos] * np.sqrt(w[pos] / mu_p)  # M = G G^T
            dist = data.op.sqdist(G=G)
            val = float(np.sum(w[pos] ** 2)) / (2 * mu_p) - float(delta @ alpha)
            grad = dist[far] - dist[near] - delta
            return val, grad

        res = scipy.optimize.minimize(
            fun, alpha0, jac=True, method="L-BFGS-B",
            bounds=scipy.optimize.Bounds(np.zeros_like(data.c_q), data.c_q),
            options={"maxiter": self.inner_maxiter, "maxcor": self.memory,
                     "gtol": 1e-12 * scale, "ftol": 1e-16, "maxls": 40},
        )
        alpha = np.clip(res.x, 0.0, data.c_q)
        Z = B + data.op.gram(data.dual_pair_weights(alpha))
        M = project_psd(Z) / mu_p
        return M, alpha, int(res.nfev)

    def update(self, M, state, data):
        M_new, alpha, nfev = self._inner(data, M, state.alpha, state.tau)
        gap = self._gap(data, M_new, alpha)
        tau = state.tau * self.tau_growth
        return M_new, DualState(state.iter_num + 1, gap, alpha, tau,
                                state.n_evals + nfev)

    @staticmethod
    def _gap(data, M, alpha):
        obj = data.objective(M)
        return abs(obj - data.dual_bound(alpha)) / max(1.0, abs(obj))

    def finalize(self, M, state, data):
        cert = data.certificate(
            M, state.alpha, solver=self.name,
            tolerances={"tol": self.tol, "inner_maxiter": self.inner_maxiter},
            tol_gap=max(self.tol, 1e-6),
        )
        info = {"alpha": state.alpha, "n_evals": state.n_evals, "tau": state.tau}
        return M, cert, info


# ---------------------------------------------------------------------------
# Algorithm 1: projected subgradient with active sets
# ---------------------------------------------------------------------------


class SubgradientState(NamedTuple):
    iter_num: int
    error: float
    h: np.ndarray  # (d, d) h(N+) = sum_{N+} c_q (C_near - C_far)
    violated: np.ndarray  # (n_constraints,) bool, the current N+
    active: np.ndarray  # (n_constraints,) bool, the accumulated active list
    full_check: bool  # whether N+ was computed over all constraints
    converged: bool
    best_M: np.ndarray
    best_obj: float
    alpha_sum: np.ndarray  # running sum of c_q 1[q in N+] (dual estimate)
    n_avg: int
    eta0: float


@dataclass
class ProjectedSubgradient(IterativeSolver):
    """Algorithm 1 of Law et al. (2016) with Sec. 4.1 / 4.3 speed-ups.

    Attributes
    ----------
    maxiter : int
    tol : float
        ``eps`` of the stopping rule ``||M_t - M_{t-1}||_F^2 <= eps``, taken
        relative to ``max(1, ||M_t||_F^2)``.
    eta0 : float, optional
        Initial step; default: the step that brings the mean distance of the
        far pairs to the mean margin after the first iteration.
    step : {"sqrt", "constant"}
        ``eta_t = eta0 / sqrt(t + 1)`` (converges) or ``eta_t = eta0``.
    recheck_every : int
        Full re-check period of the active-set strategy (the paper: 10-20).
    active_set : bool
        Use the active-set strategy; otherwise every iteration checks all.
    """

    maxiter: int = 20000
    tol: float = 1e-12
    eta0: float = None
    step: str = "sqrt"
    recheck_every: int = 10
    active_set: bool = True

    name = "subgradient"

    def _check(self, data, G, candidates):
        """Violation flags of ``candidates`` (bool mask) under ``M = G G^T``."""
        idx = np.flatnonzero(candidates)
        pairs = np.unique(np.concatenate([data.near_q[idx], data.far_q[idx]]))
        dist = np.zeros(data.op.n_pairs)
        dist[pairs] = data.op.sqdist(G=G, subset=pairs)
        arg = data.delta_q[idx] + dist[data.near_q[idx]] - dist[data.far_q[idx]]
        viol = np.zeros(data.n_constraints, dtype=bool)
        viol[idx] = arg > 0
        return viol, arg, idx

    def _h(self, data, mask):
        """``h(mask) = sum_mask c_q (C_near - C_far)`` as a (d, d) matrix."""
        return -data.op.gram(data.dual_pair_weights(np.where(mask, data.c_q, 0.0)))

    def init_state(self, data, init=None):
        d = data.n_features
        M = np.zeros((d, d)) if init is None else project_psd(init.M)
        G = project_psd(M, return_factor=True)[1]
        everything = np.ones(data.n_constraints, dtype=bool)
        viol, arg, _ = self._check(data, G, everything)
        h = self._h(data, viol)
        obj = data.regularizer_value(M) + float(data.c_q @ np.maximum(arg, 0))
        eta0 = self.eta0
        if eta0 is None:
            # scale the first step so that far-pair distances reach the margins
            grad = h + data.R + data.mu * M
            _, G1 = project_psd(-grad, return_factor=True)
            far = data.op.sqdist(G=G1)[data.far_q]
            eta0 = (float(np.mean(np.abs(data.delta_q))) / float(np.mean(far))
                    if np.any(far > 0) else 1.0 / max(np.linalg.norm(grad), 1e-300))
        state = SubgradientState(
            iter_num=0, error=np.inf, h=h, violated=viol, active=viol.copy(),
            full_check=True, converged=False, best_M=M, best_obj=obj,
            alpha_sum=np.zeros(data.n_constraints), n_avg=0, eta0=float(eta0),
        )
        return M, state

    def converged(self, state):
        return state.converged

    def update(self, M, state, data):
        t = state.iter_num
        eta = state.eta0 / np.sqrt(t + 1) if self.step == "sqrt" else state.eta0
        grad = state.h + data.R + data.mu * M  # Eq. 15
        M_new, G = project_psd(M - eta * grad, return_factor=True)
        err = float(np.sum((M_new - M) ** 2)) / max(1.0, float(np.sum(M_new ** 2)))
        small = err <= self.tol
        full = (not self.active_set or (t + 1) % self.recheck_every == 0
                or small or t + 1 >= self.maxiter)
        candidates = np.ones(data.n_constraints, bool) if full else state.active
        viol, arg, idx = self._check(data, G, candidates)
        # incremental h(N+): only the constraints that entered or left N+
        changed = viol != state.violated
        h = state.h
        if np.any(changed):
            added = changed & viol
            removed = changed & state.violated
            h = h + self._h(data, added) - self._h(data, removed)
        active = state.active | viol
        best_M, best_obj = state.best_M, state.best_obj
        new_outside = False
        if full:
            obj = data.regularizer_value(M_new) + float(
                data.c_q[idx] @ np.maximum(arg, 0))
            if obj < best_obj:
                best_M, best_obj = M_new, obj
            new_outside = bool(np.any(viol & ~state.active))
        # ergodic average of the subgradient multipliers, second half of the run
        alpha_sum, n_avg = state.alpha_sum, state.n_avg
        if t >= self.maxiter // 2 or small:
            alpha_sum = alpha_sum + np.where(viol, data.c_q, 0.0)
            n_avg += 1
        converged = small and full and not new_outside
        return M_new, SubgradientState(
            iter_num=t + 1, error=err, h=h, violated=viol, active=active,
            full_check=full, converged=converged, best_M=best_M,
            best_obj=best_obj, alpha_sum=alpha_sum, n_avg=n_avg, eta0=state.eta0,
        )

    def finalize(self, M, state, data):
        alpha = state.alpha_sum / max(state.n_avg, 1)
        M = state.best_M
        cert = data.certificate(
            M, alpha, solver=self.name,
            tolerances={"eps": self.tol, "eta0": state.eta0, "step": self.step},
            tol_gap=1.0,
        )
        info = {"alpha": alpha, "eta0": state.eta0,
                "n_active": int(state.active.sum())}
        return M, cert, info

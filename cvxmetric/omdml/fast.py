"""OMDML, online: Algorithms 1 and 2 of Wu, Hoi et al. (2016).

Both read the triplets of :class:`~cvxmetric.omdml.OMDMLData` as a stream,
in order, ``n_passes`` times, and combine the views with the Hedge weights
``theta`` (Eq. 6).  They are online learners of Eq. 3 (declared in
:class:`~cvxmetric.omdml.OMDMLModel`), not solvers of it: their point is
the mistake bound of Theorem 4.1, not the optimum.  So their result's
status is ``max_iter_reached`` (the passes are done) unless the
certificate of Eq. 3 at their final ``theta`` happens to pass, and the gap
to the exact optimum is reported (docs/omdml/formulation.md), never hidden.

A triplet is processed in ``O(sum_i n_i^2)`` (Algorithm 1, plus the
projection) or ``O(sum_i r n_i)`` (Algorithm 2): the loop over the stream
is the algorithm itself, so it is a Python loop over triplets, with all
per-view work vectorised.
"""

import logging
import math
from dataclasses import dataclass
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import scipy.linalg
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from .._linalg import project_psd
from .._settings import _DIVERGED
from .._solver import IterativeSolver
from ..result import SolverError
from ._problem import check_theta
from .exact import omdml_result

logger = logging.getLogger("cvxmetric")

__all__ = ["OMDMLOnline", "LowRankOMDML", "pa_step", "project_rank2",
           "mistake_bound", "StreamState"]


def pa_step(M, a, b, C):
    """The Passive-Aggressive step of Eq. 4-5 on one view.

    ``argmin_M' 0.5 ||M' - M||_F^2 + C xi`` subject to
    ``<M', V> + 1 <= xi``, ``xi >= 0``, with ``V = a a^T - b b^T``: the
    closed form ``M' = M - tau V``, ``tau = min(C, loss / ||V||_F^2)``,
    ``loss = max(0, <M, V> + 1)``.

    Parameters
    ----------
    M : ndarray (n, n)
    a, b : ndarray (n,)
        ``x_p - x_p+`` and ``x_p - x_p-``.
    C : float > 0

    Returns
    -------
    M_new : ndarray (n, n)
    tau : float
    loss : float
    """
    f = float(a @ M @ a - b @ M @ b)
    loss = max(0.0, f + 1.0)
    aa, bb, ab = float(a @ a), float(b @ b), float(a @ b)
    v2 = aa * aa + bb * bb - 2.0 * ab * ab  # ||a a^T - b b^T||_F^2
    if loss == 0.0 or v2 <= 0.0:
        return M, 0.0, loss
    tau = min(C, loss / v2)
    return M - tau * (np.outer(a, a) - np.outer(b, b)), tau, loss


def project_rank2(M):
    """PSD projection of ``M = P - tau a a^T + tau b b^T`` with ``P`` PSD.

    By Cauchy interlacing, ``P + tau b b^T`` is PSD and subtracting the
    rank-one ``tau a a^T`` moves at most one eigenvalue below zero; so the
    projection is ``M - mu v v^T`` for the smallest eigenpair ``(mu, v)``
    when ``mu < 0``, and ``M`` otherwise.  Only that eigenpair is computed
    (LAPACK's ``syevr`` on one index), not a full eigendecomposition.
    """
    mu, v = scipy.linalg.eigh(M, subset_by_index=[0, 0], driver="evr",
                              check_finite=False)
    mu = float(mu[0])
    if mu >= 0.0:
        return M
    v = v[:, 0]
    out = M - mu * np.outer(v, v)
    return 0.5 * (out + out.T)


def _outer_gradient(qa, qb, a, b):
    """``2 (q_a a^T - q_b b^T)`` with ``q = W a``: Eq. 7's gradient."""
    return 2.0 * (np.outer(qa, a) - np.outer(qb, b))


def check_ranks(rank, dims, *, cap):
    """The rank of each view from ``rank`` (one integer, or one per view).

    Parameters
    ----------
    rank : int >= 1 or sequence of int >= 1
    dims : sequence of int
        The views' dimensions.
    cap : bool
        Cap a rank above its view's dimension at that dimension (the
        estimator); otherwise refuse it.

    Returns
    -------
    tuple of int
    """
    def one(r, where):
        if isinstance(r, (bool, np.bool_)) or not isinstance(r, Integral):
            raise ValueError(f"rank: {where} must be an integer >= 1, got "
                             f"{type(r).__name__}.")
        if r < 1:
            raise ValueError(f"rank: {where} must be >= 1, got {int(r)}.")
        return int(r)

    m = len(dims)
    if isinstance(rank, (list, tuple, np.ndarray)):
        if np.ndim(rank) != 1 or len(rank) != m:
            raise ValueError(f"rank: one integer per view expected, got "
                             f"{np.shape(rank)} for {m} views.")
        ranks = [one(r, f"rank[{k}]") for k, r in enumerate(rank)]
    else:
        ranks = [one(rank, "rank")] * m
    out = []
    for k, (r, n) in enumerate(zip(ranks, dims)):
        if r > n:
            if not cap:
                raise ValueError(f"rank: {r} exceeds the dimension {n} of views[{k}].")
            r = int(n)
        out.append(r)
    return tuple(out)


def mistake_bound(beta, z_counts, m):
    """Theorem 4.1's first bound: ``2 ln(1/beta) / (1 - beta) min_i sum_t
    z_t^(i) + 2 ln m / (1 - beta)``."""
    return (2.0 * math.log(1.0 / beta) / (1.0 - beta) * float(np.min(z_counts))
            + 2.0 * math.log(m) / (1.0 - beta))


class StreamState(NamedTuple):
    iter_num: int          # passes done
    error: float           # never <= tol: an online learner does not converge
    mats: tuple            # M_i (Algorithm 1) or W_i (Algorithm 2)
    theta: np.ndarray      # (m,)
    t: int                 # triplets seen
    mistakes: int
    history: tuple         # cumulative mistakes after each triplet
    z_counts: np.ndarray   # (m,) sum_t z_t^(i) over the update rounds
    n_updates: int


@dataclass
class _Online(IterativeSolver):
    """Shared stream loop (one :meth:`update` = one pass over the triplets).

    A subclass states its model through ``_init_mats``, ``_open`` (the
    working form of the matrices), ``_scores`` (the ``f_t^(i)`` of a
    triplet), ``_learn`` (its step on an update round), ``_close`` and
    ``_metric``."""

    maxiter: int = 1  # passes over the stream
    tol: float = 1e-6
    C: float = 1.0
    beta: float = 0.5
    gamma: float = 1.0
    theta0: object = None

    _parameter_constraints = {
        **IterativeSolver._parameter_constraints,
        "C": [Interval(Real, 0, None, closed="neither")],
        "beta": [Interval(Real, 0, 1, closed="neither")],
        "gamma": [Interval(Real, 0, None, closed="left")],
        "theta0": ["array-like", None],
    }

    def converged(self, state):
        return False  # an online learner stops after its passes

    def _theta0(self, data):
        m = data.n_views
        return np.full(m, 1.0 / m) if self.theta0 is None else check_theta(
            self.theta0, m, "theta")

    def init_state(self, data, init=None):
        if isinstance(init, StreamState):  # partial_fit: continue the stream
            return init.mats, init._replace(iter_num=0)
        mats = self._init_mats(data)
        state = StreamState(0, math.inf, tuple(mats), self._theta0(data), 0, 0, (),
                            np.zeros(data.n_views), 0)
        return state.mats, state

    def update(self, mats, state, data):
        # the stream of Algorithms 1 and 2 (lines 3-17): predict, count the
        # mistake, and on f_t + gamma > 0 the Hedge update (Eq. 6) and the
        # subclass's own step on the views (_open/_scores/_learn/_close)
        model = self._open(mats, data)
        theta = state.theta.copy()
        z_counts = state.z_counts.copy()
        mistakes, n_updates = state.mistakes, state.n_updates
        history = list(state.history)
        beta, gamma = self.beta, self.gamma
        for p, pp, pm in data.triplets:
            f_i, ctx = self._scores(model, p, pp, pm)
            f = float(theta @ f_i)
            if f > 0:
                mistakes += 1
            history.append(mistakes)
            if f + gamma > 0:  # line 7
                n_updates += 1
                z = f_i > 0
                z_counts += z
                theta = theta * np.where(z, beta, 1.0)  # Eq. 6, then normalised
                theta /= theta.sum()
                self._learn(model, ctx, f_i, n_updates)
            if self.deadline.expired():
                break
        mats = self._close(model, data)
        state = StreamState(state.iter_num + 1, math.inf, mats, theta,
                            state.t + data.n_triplets, mistakes, tuple(history),
                            z_counts, n_updates)
        return mats, state

    def finalize(self, mats, state, data):
        Ms = [self._metric(X) for X in mats]
        cert = data.certificate(Ms, state.theta, solver=self.name,
                                tolerances={"C": self.C, "beta": self.beta,
                                            "gamma": self.gamma})
        info = {"state": state, "mistakes": state.mistakes,
                "mistake_history": np.array(state.history, dtype=int),
                "z_counts": state.z_counts, "n_updates": state.n_updates,
                "factors": [np.array(X) for X in mats]}
        res = omdml_result(Ms, state.theta, cert, status="", n_iter=state.iter_num,
                           method=self.name, info=info)
        return res.M, cert, res.info


@dataclass
class OMDMLOnline(_Online):
    """Algorithm 1 (OMDML): PA steps per view, PSD projection, Hedge.

    Attributes
    ----------
    maxiter : int
        Passes over the stream.
    C : float > 0
        PA aggressiveness (Eq. 4) -- the ``C`` of Eq. 3.
    beta : float in (0, 1)
        Hedge discount (Eq. 6); Theorem 4.1's corollary takes
        ``sqrt(T) / (sqrt(T) + sqrt(ln m))``.
    gamma : float >= 0
        An update happens when ``f_t + gamma > 0`` (line 7).
    project_every : int >= 1
        Project onto the PSD cone every ``k`` updates (Sec. 5 suggests
        projecting less often); 1 (default) is Algorithm 1 as printed.
    projection : {"rank2", "full"}
        ``"rank2"``: the exact projection of one PA step,
        :func:`project_rank2` (one eigenpair); ``"full"``: a full
        eigendecomposition.  With ``project_every > 1`` several steps
        accumulate and the projection is always full.
    theta0 : array_like, optional
        Starting weights (default uniform, as printed).
    """

    project_every: int = 1
    projection: str = "rank2"

    name = "omdml"

    _parameter_constraints = {
        **_Online._parameter_constraints,
        "project_every": [Interval(Integral, 1, None, closed="left")],
        "projection": [StrOptions({"rank2", "full"})],
    }

    def _init_mats(self, data):
        return [np.eye(n) for n in data.dims]  # M_1 = I (line 2)

    @staticmethod
    def _open(mats, data):
        return {"mats": list(mats), "views": data.views}

    @staticmethod
    def _scores(model, p, pp, pm):
        a = [X[p] - X[pp] for X in model["views"]]
        b = [X[p] - X[pm] for X in model["views"]]
        f_i = np.array([float(ai @ M @ ai - bi @ M @ bi)
                        for M, ai, bi in zip(model["mats"], a, b)])
        return f_i, (a, b)

    def _learn(self, model, ctx, f_i, k):
        mats = model["mats"]
        for i, (ai, bi) in enumerate(zip(*ctx)):
            mats[i] = self._step(mats[i], ai, bi, k)

    @staticmethod
    def _close(model, data):
        return tuple(model["mats"])

    def _step(self, M, a, b, k):
        M, tau, _ = pa_step(M, a, b, self.C)
        if tau == 0.0 or k % self.project_every:
            return M
        if self.project_every == 1 and self.projection == "rank2":
            return project_rank2(M)
        return project_psd(M)

    @staticmethod
    def _metric(M):
        # a last projection when the stream ended between projections
        return project_psd(M)  # symmetrises too


@dataclass
class LowRankOMDML(_Online):
    """Algorithm 2 (LOMDML): online gradient descent on ``W_i`` (r x n_i),
    ``M_i = W_i^T W_i``, Hedge; no projection.

    Attributes
    ----------
    rank : int >= 1, or sequence of int >= 1 (one per view)
        ``r`` (one for every view, or ``r_i`` per view); each at most its
        view's dimension (the estimator caps a larger one, this solver
        refuses it).
    eta : float > 0
        Learning rate of Eq. 7.
    random_state : int, RandomState instance or None
        The starting ``W_i``: ``r`` random orthonormal rows (the paper
        leaves ``W_1`` open; ``M_1`` is then a projection of rank ``r``).
    """

    rank: int = 10
    eta: float = 0.01
    random_state: object = None

    name = "lomdml"

    _parameter_constraints = {
        **_Online._parameter_constraints,
        # an int or one per view: each entry and the views' dimensions are
        # checked by ranks() once the views are known
        "rank": [Interval(Integral, 1, None, closed="left"), list, tuple],
        "eta": [Interval(Real, 0, None, closed="neither")],
        "random_state": ["random_state", None],
    }

    def ranks(self, dims):
        """The rank of each view: ``rank`` checked against the views'
        dimensions ``dims`` (``ValueError`` naming ``rank``)."""
        return check_ranks(self.rank, dims, cap=False)

    def _init_mats(self, data):
        rng = check_random_state(self.random_state)
        out = []
        for n, r in zip(data.dims, self.ranks(data.dims)):
            Q, _ = np.linalg.qr(rng.normal(size=(n, r)))
            out.append(Q.T.copy())  # (r, n) orthonormal rows
        return out

    def _open(self, mats, data):
        # every view at once: the W_i as one block-diagonal (sum_i r_i,
        # sum_i n_i) matrix, so a triplet costs a few small numpy calls, not
        # a few per view
        ranks = tuple(W.shape[0] for W in mats)
        if [W.shape[1] for W in mats] != list(data.dims) or ranks != self.ranks(data.dims):
            raise ValueError(
                f"rank: the stream's factors have ranks {list(ranks)} for views of "
                f"dimensions {[W.shape[1] for W in mats]}, but rank={self.rank!r} on "
                f"views of dimensions {list(data.dims)} asks for "
                f"{list(self.ranks(data.dims))}; start a new stream (fit) after "
                f"changing rank.")
        return {"X": np.hstack(data.views),  # (n, sum_i n_i)
                "W": scipy.linalg.block_diag(*mats),
                "mask": scipy.linalg.block_diag(*[np.ones((r, n))
                                                  for r, n in zip(ranks, data.dims)]),
                "row_view": np.repeat(np.arange(data.n_views), ranks),
                "ranks": ranks}

    @staticmethod
    def _scores(model, p, pp, pm):
        X, W = model["X"], model["W"]
        a, b = X[p] - X[pp], X[p] - X[pm]
        qa, qb = W @ a, W @ b
        f_i = np.bincount(model["row_view"], qa * qa - qb * qb,
                          minlength=int(model["row_view"][-1]) + 1)
        return f_i, (a, b, qa, qb)

    def _learn(self, model, ctx, f_i, k):
        act = (f_i + 1.0 > 0)[model["row_view"]]  # views with an active hinge
        if act.any():
            a, b, qa, qb = ctx
            # the gradient on the rows of the active views, from the scores'
            # own projections q = W a
            model["W"] -= self.eta * model["mask"] * _outer_gradient(
                qa * act, qb * act, a, b)

    def _close(self, model, data):
        W = model["W"]
        if not np.all(np.isfinite(W)) or float(np.max(np.abs(W))) > _DIVERGED:
            raise SolverError(
                f"eta: LOMDML diverged (|W| reached {float(np.max(np.abs(W))):.3g}) "
                f"with the constant learning rate eta={self.eta:g}; lower it, or "
                f"scale the features to [0, 1] as the paper does.")
        offs = np.cumsum((0,) + tuple(data.dims))
        rows = np.cumsum((0,) + model["ranks"])
        return tuple(W[rows[i]:rows[i + 1], offs[i]:offs[i + 1]].copy()
                     for i in range(data.n_views))

    @staticmethod
    def _gradient(W, a, b):
        """Eq. 7's gradient of ``max(0, d(p, p+) - d(p, p-) + 1)`` where the
        hinge is active: ``2 W a a^T - 2 W b b^T`` (the paper's three-term
        form, expanded)."""
        return _outer_gradient(W @ a, W @ b, a, b)

    @staticmethod
    def _metric(W):
        return W.T @ W

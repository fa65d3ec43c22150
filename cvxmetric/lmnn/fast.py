"""LMNN, fast: a certified working-set solver and the paper's subgradient
method, neither of which holds one entry per impostor triplet.

:class:`LMNNWorkingSet` (method ``fast``, certified)
    LMNN restricted to a working set of impostor triplets is Qwise's Eq. 8
    on the quadruplets ``(i, j, i, l)`` with the regulariser ``tr(M A_T)``,
    margin 1 and weight ``mu / (1 - mu)`` -- the exact path's reduction
    (:func:`cvxmetric.lmnn.exact._as_qwise`), solved here by Qwise's dual
    solver (:class:`~cvxmetric.qwise.QwiseDualSolver`).  The set starts
    from the triplets active or nearly so at a scaled Euclidean metric (at
    ``M0`` when the data has one); after each restricted solve one pass
    over *every* impostor, in blocks of anchors, finds the triplets outside
    the set that are violated or near their margin at the new ``M``, and
    they join the set.  While a pass finds more than a cap (``max_add``,
    doubled after each such pass), a uniform sample of them joins and the
    next restricted solve weighs the set by the number of triplets it
    stands for, as the first one does: the most violated alone (impostors
    nearer than their targets) would make ``M = 0`` the restricted optimum.
    When no outside triplet is violated, :meth:`LMNNData.certificate
    <cvxmetric.lmnn.LMNNData.certificate>` judges ``M`` over every triplet
    with the set's multipliers (all others at 0 where inactive): the
    certified gap accounts for every impostor.  A certificate that does not
    pass with nothing left to add tightens the restricted solve's
    tolerance.  This is the scheme of safe triplet screening and of the
    paper's own active set, with a certificate at the end.

:class:`LMNNSubgradient` (method ``subgradient``, reported)
    The paper's solver (Sec. 5 of Weinberger and Saul, "Distance metric
    learning for large margin nearest neighbor classification", JMLR 2009):
    projected subgradient descent on ``M``, ``M <- Pi_PSD(M - eta G)`` with
    ``G = (1 - mu) A_T + mu sum_{active} (C_ij - C_il)``; the active
    triplets are recomputed over all impostors every ``recheck_every``
    iterations (the paper: 10-20) and only the last list is checked in
    between; the step grows by 1 % after a step that lowered the objective
    and halves (the step rejected) after one that did not, as the paper and
    metric-learn adapt it.  Its result carries the certificate of its best
    iterate with the averaged multipliers of its second half; it rarely
    reaches the package's tolerance (``TOLERANCES["lmnn/subgradient"]``
    states what it reaches on the collection).

The blockwise screening pass (:func:`scan`) computes a block's distances
with one matrix product from the factor of ``M`` (the expansion ``|z_a|^2
+ |z_b|^2 - 2 z_a.z_b``, exact to round-off relative to the points' norms,
on centred data of order 1): it only selects triplets, with a band around
the margin; what is certified is recomputed by the certificate.

Both passes over every triplet -- the screening and the certificate's --
run where :class:`LMNNData <cvxmetric.lmnn.LMNNData>` holds its samples:
NumPy, the namespace of a PyTorch / CuPy / ``array-api-strict`` input, or
Dask tasks over the row chunks of a ``dask.array``
(:mod:`cvxmetric.lmnn._sweeps`).  The working set's restricted solves run
there too on an array-API device (Qwise's device data over the samples
already there; on the host for NumPy and Dask data, or with
``restricted_on="host"``); the subgradient method's steps over its active
list run on the host.
"""

import logging
import time
from dataclasses import dataclass
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from .._linalg import project_psd, span_basis
from .._settings import LMNN_HASH
from .._settings import LMNN_LOCATE_TOL as _LOCATE_TOL
from .._settings import LMNN_HOLD_BELOW as _HOLD_BELOW
from .._settings import LMNN_OMEGA0 as _OMEGA0
from .._solver import IterativeSolver
from .._validation import check_instance
from ..qwise.fast import QwiseDualSolver
from ..result import SolverResult, Status
from ._problem import LMNNData
from .exact import _as_qwise, _feature_scaled, _from_feature_units

logger = logging.getLogger("cvxmetric")

__all__ = ["LMNNWorkingSet", "LMNNSubgradient", "scan", "euclidean_start",
           "solve_fast", "solve_subgradient"]


# ---------------------------------------------------------------------------
# The blockwise pass over every impostor triplet
# ---------------------------------------------------------------------------


def _anchor_rows(data):
    """Anchors per block: ``k n`` hinge arguments each, about
    :data:`TRIPLET_BLOCK` per block."""
    return max(1, data.triplet_block // max(1, data.k * data.n_samples))


def _factor_n(data, M):
    """``Z`` (n, r) with ``D_M(a, b) = |Z_a - Z_b|^2`` for the PSD part of
    ``M`` (its negative eigenvalues dropped), on the centred data."""
    w, Zn = data._factor(M)
    keep = w > 0
    return Zn[:, keep] * np.sqrt(w[keep])


class Scan(NamedTuple):
    """What :func:`scan` found: the triplets ``ids`` (sorted, of
    :meth:`LMNNData.triplets`' numbering) whose hinge argument ``arg`` is
    above ``-band``, at most ``cap`` of them (the largest arguments); the
    sum of the hinges over every triplet; whether the deadline cut it
    short."""

    ids: np.ndarray
    arg: np.ndarray
    hinge: float
    n_found: int
    complete: bool


def _block_args(data, Z, sq, rows):
    """``(b, k, n)`` hinge arguments of the anchors ``rows`` (``-inf``
    where ``(i, s, l)`` is no triplet)."""
    D = sq[rows][:, None] + sq[None, :] - 2.0 * (Z[rows] @ Z.T)
    np.maximum(D, 0.0, out=D)
    t = data.targets[rows]
    near = 1.0 + np.take_along_axis(D, np.maximum(t, 0), axis=1)
    near[t < 0] = -np.inf
    # no triplet where l is of i's class: an infinite impostor distance
    D[data.codes[rows][:, None] == data.codes[None, :]] = np.inf
    return near[:, :, None] - D[:, None, :]  # one pass over the block


def scan(data, M, band=0.0, cap=None, *, spread=False, exclude=None, deadline=None,
         single=False):
    """One pass over every impostor triplet at ``M``, in blocks of anchors.

    Parameters
    ----------
    data : LMNNData
    M : ndarray of shape (d, d)
        Its PSD part is used.
    band : float >= 0
        Triplets whose hinge argument ``1 + D_M(i, j) - D_M(i, l)`` is above
        ``-band`` are returned.
    cap : int, optional
        At most this many, the largest arguments first (memory stays
        ``O(cap)`` whatever the number found).
    spread : bool
        Keep, instead of the ``cap`` largest arguments, ``cap`` triplets
        spread evenly over all those found (those of smallest hashed id: a
        deterministic, uniform choice).
    exclude : ndarray of int64, optional
        Sorted triplet ids left out (a working set).
    deadline : Deadline, optional
        Checked between blocks; a pass it cuts short has ``complete=False``.
    single : bool
        Distances and arguments in float32 (half the memory traffic of the
        pass; about 1e-7 relative error): a screening whose choices the
        certificate does not depend on.

    Returns
    -------
    Scan
    """
    n = data.n_samples
    step = _anchor_rows(data)
    if data._sweeps is not None:
        w, V = data._eig(M)
        keep = w > 0
        F = V[:, keep] * np.sqrt(w[keep])
        ids, args, hinge, found, complete = data._sweeps.scan(
            F, step, band, cap, spread, exclude, deadline, single)
    else:
        Z = _factor_n(data, M)
        if single:
            Z = Z.astype(np.float32)
        ids, args, hinge, found, complete = _scan_rows(data, Z, 0, n, step, band, cap,
                                                       spread, exclude, deadline)
    if cap is not None and ids.size > cap:
        ids, args = _top(ids, args, cap, spread)
    order = np.argsort(ids)
    return Scan(ids[order], args[order], hinge, found, complete)


def _scan_rows(ctx, Z, lo, hi, step, band, cap, spread, exclude, deadline):
    """:func:`scan`'s pass over the anchors ``lo:hi`` of ``ctx`` (an
    :class:`LMNNData`, or the samples' context inside a Dask task) with
    ``Z`` (n, r) the factor of ``M`` on the samples: ``(ids, args, hinge,
    n_found, complete)``, at most ``cap`` kept (the largest arguments or,
    with ``spread``, the smallest hashed ids)."""
    n, k = ctx.n_samples, ctx.k
    sq = np.einsum("nr,nr->n", Z, Z)
    ids, args, hinge, found = [], [], 0.0, 0
    kept = 0
    complete = True
    for start in range(lo, hi, step):
        if deadline is not None and start > lo and deadline.expired():
            complete = False
            break
        rows = np.arange(start, min(hi, start + step))
        arg = _block_args(ctx, Z, sq, rows).reshape(-1)
        local = np.flatnonzero(arg > -band)
        block_ids = start * k * n + local.astype(np.int64)
        vals = arg[local]
        # band >= 0: all the hinges
        hinge += float(np.sum(vals[vals > 0.0], dtype=np.float64))
        if exclude is not None and exclude.size and block_ids.size:
            pos = np.minimum(np.searchsorted(exclude, block_ids), exclude.size - 1)
            out = exclude[pos] != block_ids
            block_ids, vals = block_ids[out], vals[out]
        found += block_ids.size
        ids.append(block_ids)
        args.append(vals)
        kept += block_ids.size
        if cap is not None and kept > 4 * cap:
            ids, args = _top(np.concatenate(ids), np.concatenate(args), cap, spread)
            ids, args, kept = [ids], [args], ids.size
    ids = np.concatenate(ids) if ids else np.empty(0, np.int64)
    args = np.concatenate(args) if args else np.empty(0)
    if cap is not None and ids.size > cap:
        ids, args = _top(ids, args, cap, spread)
    return ids, args, hinge, found, complete


def _top(ids, args, cap, spread=False):
    """The ``cap`` entries of largest ``args`` (``spread``: of smallest
    hashed ``ids``, a uniform sample that does not depend on ``M``)."""
    if ids.size <= cap:
        return ids, args
    if spread:
        # Fibonacci hashing: multiplication modulo 2^64 scatters the ids
        key = (ids.astype(np.uint64) * np.uint64(LMNN_HASH)) >> np.uint64(11)
        top = np.argpartition(key.astype(float), cap - 1)[:cap]
    else:
        top = np.argpartition(-args, cap - 1)[:cap]
    return ids[top], args[top]


def euclidean_start(data):
    """The starting metric: ``M0`` when the data has one, else the
    Euclidean metric scaled so that the mean target distance is 1 (the
    margin's scale: the triplets it finds active are those whose impostor
    is within one mean target distance of the target)."""
    d = data.n_features
    if data.M0 is not None:
        return np.array(data.M0, dtype=float)
    n_targets = max(1, int(np.sum(data.targets >= 0)))
    mean = float(np.trace(data.A_T)) / n_targets
    return np.eye(d) / mean if mean > 0 and np.isfinite(mean) else np.eye(d)


def _merge(ids, values, new_ids, fill=0.0):
    """The sorted union of ``ids`` and ``new_ids`` (disjoint), with
    ``values`` on ``ids`` and ``fill`` on the new ones."""
    out_ids = np.concatenate([ids, new_ids])
    out = np.concatenate([values, np.full(new_ids.size, fill)])
    order = np.argsort(out_ids, kind="stable")
    return out_ids[order], out[order]


def _on(ids, values, where):
    """``values`` (on the sorted ``ids``) read at ``where`` (0 if absent)."""
    if ids.size == 0:
        return np.zeros(len(where))
    pos = np.minimum(np.searchsorted(ids, where), ids.size - 1)
    return np.where(ids[pos] == where, values[pos], 0.0)


# ---------------------------------------------------------------------------
# The certified default: a working set solved by Qwise's dual solver
# ---------------------------------------------------------------------------


class _OnLMNN:
    """What both solvers share: LMNN data only, the threading policy of
    the pass over every triplet, and a stop the state decides."""

    def check_data(self, data):
        check_instance(data, LMNNData, "data")

    def blas_flops(self, data):
        # the pass's largest product: a block's (b, r) @ (r, n) distances
        return 2.0 * _anchor_rows(data) * data.n_samples * data.n_features

    def converged(self, state):
        return state.done


class WSState(NamedTuple):
    iter_num: int  # rounds so far
    error: float  # certified relative gap of the last certificate (inf before)
    W: np.ndarray  # (m,) sorted triplet ids of the working set
    kept: np.ndarray  # the ids of W the Qwise problem keeps (informative)
    gamma: np.ndarray  # multipliers of ``kept`` in LMNN's units, [0, mu]
    inner_tol: float  # the restricted solve's tolerance
    certificate: object  # the last certificate (at M), or None
    done: bool  # a stop: certified, or nothing left to add or tighten
    inner_iter: int  # iterations of the restricted solves
    rounds: tuple  # per round: size, added, restricted gap, where it ran, seconds
    deadline: object
    add_cap: int  # additions per round: doubles while the pass finds more
    weight: float  # the first round's hinge weight factor (1 afterwards)


@dataclass
class LMNNWorkingSet(_OnLMNN, IterativeSolver):
    """LMNN's certified fast solver (module docstring).

    Attributes
    ----------
    maxiter : int
        Maximum number of rounds (restricted solves).
    tol : float
        Certified relative gap at which it stops (default: the package's
        certificate tolerance, so a stop passes).
    max_time : float, optional
        Wall-clock budget (the restricted solves and the passes check it);
        the result is certified whatever stopped it.
    max_add : int
        The first set holds at most this many triplets, spread evenly over
        those near or past their margin at the start; at most this many
        join the set per round (a uniform sample of those found, weighed as
        the module docstring says), a number that doubles after each round
        whose pass found more.
    band : float
        Triplets outside the set whose hinge argument is above ``-band``
        (near their margin, in the margin's units) are candidates; a round
        adds some only when at least one is violated.
    inner_tol : float
        Tolerance of the first restricted solves (QwiseDualSolver's
        certified gap on the restricted problem); divided by 10, down to
        ``min_inner_tol``, when a certificate fails with nothing to add.
    min_inner_tol : float
    restricted_on : {"data", "host"}
        Where the restricted solves run: ``"data"`` where the data's passes
        run (:meth:`LMNNData.qwise_here <cvxmetric.lmnn.LMNNData.qwise_here>`:
        the device of a PyTorch, CuPy or ``array-api-strict`` input, the
        host for NumPy and Dask data), or ``"host"`` always (on the host
        copy of the samples; on a CPU the NumPy kernels, which sum ``S``
        per pair and hold violated hinges, are faster than the generic
        ones).
    """

    _parameter_constraints = {
        **IterativeSolver._parameter_constraints,
        "max_add": [Interval(Integral, 1, None, closed="left")],
        "band": [Interval(Real, 0, None, closed="left")],
        "inner_tol": [Interval(Real, 0, None, closed="neither")],
        "min_inner_tol": [Interval(Real, 0, None, closed="neither")],
        "restricted_on": [StrOptions({"data", "host"})],
    }

    maxiter: int = 100
    tol: float = 1e-6
    max_time: float = None
    max_add: int = 20_000
    band: float = 0.1
    inner_tol: float = 1e-7
    min_inner_tol: float = 1e-11
    restricted_on: str = "data"

    name = "fast"

    def init_state(self, data, init=None):
        deadline = self.deadline
        M = euclidean_start(data) if init is None else project_psd(init.M)
        # the first set spreads evenly over the triplets near or past their
        # margin: the most violated alone (an impostor nearer than its
        # target) would make M = 0 the restricted optimum
        found = scan(data, M, self.band, self.max_add, spread=True, deadline=deadline,
                     single=True)
        W = found.ids
        if W.size == 0:
            # nothing active even within the band: start from the closest
            W = scan(data, M, np.inf, min(self.max_add, 1000)).ids
        gamma = np.zeros(0)
        kept = np.empty(0, np.int64)
        if init is not None and init.info.get("triplet_ids") is not None:
            # a warm start's multipliers on its own set
            old = np.asarray(init.info["triplet_ids"], dtype=np.int64)
            W = np.union1d(W, old)
            kept, gamma = old, np.asarray(init.info["gamma"], dtype=float)
        state = WSState(0, np.inf, W, kept, gamma, self.inner_tol, None, False, 0, (),
                        deadline, self.max_add, max(1.0, found.n_found / max(W.size, 1)))
        return M, state

    def update(self, M, state, data):
        """One round: the restricted solve, the pass over every impostor,
        and -- when nothing outside the set is violated -- the certificate."""
        t0 = time.perf_counter()
        deadline = state.deadline
        M, kept, gamma, res = self._restricted(data, M, state, deadline)
        # while the set is a sample (weight > 1), the pass samples too
        found = scan(data, M, self.band, state.add_cap, spread=state.weight > 1.0,
                     exclude=state.W, deadline=deadline, single=True)
        violated = found.ids[found.arg > 0.0]
        W, cert, done, inner_tol = state.W, None, False, state.inner_tol
        # far from the optimum each pass finds more than the cap: the cap
        # doubles, so the rounds grow the set geometrically
        capped = found.n_found > state.add_cap
        add_cap = state.add_cap * (2 if capped else 1)
        weight = 1.0
        if violated.size:
            W = np.union1d(W, found.ids)
            if capped:
                weight = (found.n_found + state.W.size) / W.size
        elif found.complete:
            cert = data.certificate(M, kept, gamma, solver=self.name)
            done = cert.rel_gap <= self.tol and cert.passed
            if not done:
                if inner_tol <= self.min_inner_tol:
                    done = True  # round-off: nothing to add or tighten
                inner_tol = max(self.min_inner_tol, inner_tol * 0.1)
        rounds = state.rounds + ({
            "size": int(state.W.size), "inner_iterations": int(res.n_iter),
            "restricted_gap": float(res.certificate.rel_gap),
            "violated_outside": int(violated.size), "added": int(W.size - state.W.size),
            "gap": None if cert is None else float(cert.rel_gap),
            "backend": res.info.get("backend", "numpy"),
            "seconds": time.perf_counter() - t0},)
        logger.info("%s round %d: working set %d, restricted gap %.2e, %d violated "
                    "outside%s", self.name, state.iter_num + 1, state.W.size,
                    res.certificate.rel_gap, violated.size,
                    "" if cert is None else f", certified gap {cert.rel_gap:.2e}")
        return M, state._replace(
            iter_num=state.iter_num + 1, W=W, kept=kept, gamma=gamma,
            error=state.error if cert is None else float(cert.rel_gap),
            inner_tol=inner_tol, certificate=cert, done=done, add_cap=add_cap,
            weight=weight,
            inner_iter=state.inner_iter + int(res.n_iter), rounds=rounds)

    def _restricted(self, data, M, state, deadline):
        """Qwise's dual solver on the working set, warm-started from the
        last round; ``(M, kept ids, gamma, result)``."""
        on = data
        if state.weight > 1.0:
            # the first set samples the triplets near their margin: weighed
            # by the number it stands for, its hinges balance the pull term
            # as all of them do (unweighted, a small sample makes M = 0 the
            # restricted optimum); the multipliers are clipped to [0, mu]
            C = data.C * state.weight
            on = data.with_mu(C / (1.0 + C))
        qdata, kept = _as_qwise(on, state.W)
        if self.restricted_on == "data":
            qdata = data.qwise_here(qdata)
        scale = 1.0 - data.mu
        alpha = _on(state.kept, state.gamma, kept) / scale
        init = None
        if state.iter_num or state.kept.size:
            init = SolverResult(M=M, status="", objective=np.nan, n_iter=0,
                                certificate=None, method="", info={"alpha": alpha})
        left = deadline.remaining()
        # the weighted first round only locates the set: a loose tolerance
        tol = state.inner_tol if state.weight == 1.0 else max(state.inner_tol, 1e-3)
        # the first Qwise rounds' tolerance, the primal weight and the hold
        # measured for LMNN (LMNN_LOCATE_TOL, LMNN_OMEGA0, LMNN_HOLD_BELOW)
        solver = QwiseDualSolver(tol=tol, locate_tol=_LOCATE_TOL, omega0=_OMEGA0,
                                 hold_below=_HOLD_BELOW,
                                 max_time=None if not np.isfinite(left) else max(left, 0.0))
        res = solver.run(qdata, init, warn=False)
        gamma = np.clip(scale * np.asarray(res.info["alpha"], dtype=float), 0.0, data.mu)
        return res.M, kept, gamma, res

    def finalize(self, M, state, data):
        """The certificate over every triplet at the last ``M`` (the one of
        the last round when it was computed there)."""
        cert = state.certificate
        if cert is None:
            cert = data.certificate(M, state.kept, state.gamma, solver=self.name)
        cert.tolerances = {"tol": self.tol, "max_add": self.max_add,
                           "band": self.band, "inner_tol": state.inner_tol}
        info = {"gamma": state.gamma, "triplet_ids": state.kept,
                "working_set": int(state.W.size), "working_set_rounds": list(state.rounds),
                "inner_iterations": state.inner_iter, **(data.backend_info() or {})}
        return M, cert, info


# ---------------------------------------------------------------------------
# The paper's solver: projected subgradient with the active set
# ---------------------------------------------------------------------------


class SGState(NamedTuple):
    iter_num: int
    error: float  # relative change of the full objective at the last check
    eta: float  # the step (adapted)
    f: float  # the objective at M over the active list (full at a check)
    ids: np.ndarray  # the active list: sorted triplet ids
    P: tuple  # (near, far): (m, d) differences of the list's pairs (Xn units)
    best: tuple  # (M, full objective) of the best check
    f_check: float  # full objective at the last check
    avg: tuple  # (ids, sums, count): averaged multipliers, second half
    done: bool


@dataclass
class LMNNSubgradient(_OnLMNN, IterativeSolver):
    """JMLR 2009's projected subgradient method (module docstring).

    Attributes
    ----------
    maxiter : int
    tol : float
        Stop when the full objective changes by at most ``tol`` (relative,
        ``max(1, |f|)``) between two checks (metric-learn's
        ``convergence_tol``).
    max_time : float, optional
    learn_rate : float, optional
        Initial step; default: a step of 10 % of the starting metric's
        norm along the first subgradient.
    recheck_every : int
        Iterations between passes over every impostor (the paper: 10-20).
    """

    _parameter_constraints = {
        **IterativeSolver._parameter_constraints,
        "learn_rate": [Interval(Real, 0, None, closed="neither"), None],
        "recheck_every": [Interval(Integral, 1, None, closed="left")],
    }

    maxiter: int = 1000
    tol: float = 1e-7
    max_time: float = None
    learn_rate: float = None
    recheck_every: int = 15

    name = "subgradient"

    # the iterations run on Mn = 2^(2e) M, the metric of the centred data
    # Xn = (X - mean) / 2^e that LMNNData computes its distances on

    def _to_n(self, data, M):
        return np.ldexp(np.asarray(M, dtype=float), 2 * data._e)

    def _check(self, data, Mn):
        """A pass over every impostor at ``Mn``: ``(full objective, active
        list, its differences)``."""
        M = np.ldexp(Mn, -2 * data._e)
        found = scan(data, M, 0.0, deadline=None)
        ijl = data.triplet_samples(found.ids)
        Xn = data._Xn
        P = (Xn[ijl[:, 0]] - Xn[ijl[:, 1]], Xn[ijl[:, 0]] - Xn[ijl[:, 2]])
        f = (1.0 - data.mu) * float(np.sum(data._A_n * Mn)) + data.mu * found.hinge
        return f, found.ids, P

    def _list_value(self, data, Mn, P):
        """``(objective over the list, active mask)`` at ``Mn``."""
        near, far = P
        arg = 1.0 + np.einsum("md,md->m", near @ Mn, near) \
            - np.einsum("md,md->m", far @ Mn, far)
        active = arg > 0.0
        f = (1.0 - data.mu) * float(np.sum(data._A_n * Mn)) \
            + data.mu * float(np.sum(arg[active]))
        return f, active

    def _grad(self, data, P, active):
        """``(1 - mu) A_T + mu sum_active (C_ij - C_il)`` (Xn units)."""
        near, far = P[0][active], P[1][active]
        return (1.0 - data.mu) * data._A_n + data.mu * (near.T @ near - far.T @ far)

    def init_state(self, data, init=None):
        M = euclidean_start(data) if init is None else project_psd(init.M)
        Mn = self._to_n(data, M)
        f, ids, P = self._check(data, Mn)
        eta = self.learn_rate
        if eta is None:
            G = self._grad(data, P, np.ones(ids.size, bool))
            eta = 0.1 * np.linalg.norm(Mn) / max(np.linalg.norm(G), 1e-300)
        else:
            eta = float(np.ldexp(eta, 2 * data._e))
        avg = (np.empty(0, np.int64), np.zeros(0), 0)
        return Mn, SGState(0, np.inf, float(eta), f, ids, P, (Mn, f), f, avg, False)

    def update(self, Mn, state, data):
        t = state.iter_num + 1
        _, active = self._list_value(data, Mn, state.P)
        G = self._grad(data, state.P, active)
        cand = project_psd(Mn - state.eta * G)
        f_new, active_new = self._list_value(data, cand, state.P)
        if f_new <= state.f:
            Mn, f, eta = cand, f_new, state.eta * 1.01
        else:
            f, eta, active_new = state.f, state.eta * 0.5, active
        avg = state.avg
        if t > self.maxiter // 2:
            avg = self._average(data, avg, state.ids, active_new)
        if t % self.recheck_every and t < self.maxiter:
            return Mn, state._replace(iter_num=t, eta=eta, f=f, avg=avg)
        f_full, ids, P = self._check(data, Mn)
        error = abs(state.f_check - f_full) / max(1.0, abs(f_full))
        best = (Mn, f_full) if f_full < state.best[1] else state.best
        return Mn, SGState(t, error, eta, f_full, ids, P, best, f_full, avg,
                           error <= self.tol)

    @staticmethod
    def _average(data, avg, ids, active):
        """Add ``mu`` on the list's active triplets to the running sums."""
        a_ids, sums, count = avg
        new = np.setdiff1d(ids, a_ids, assume_unique=True)
        if new.size:
            a_ids, sums = _merge(a_ids, sums, new)
        sums = sums + data.mu * _on(ids, active.astype(float), a_ids)
        return a_ids, sums, count + 1

    def finalize(self, Mn, state, data):
        """The certificate of the best checked iterate, with the averaged
        multipliers of the second half (sign multipliers off the list)."""
        M = np.ldexp(state.best[0], -2 * data._e)
        ids, sums, count = state.avg
        gamma = sums / max(count, 1)
        cert = data.certificate(M, ids if count else None, gamma if count else None,
                                solver=self.name)
        cert.tolerances = {"tol": self.tol, "recheck_every": self.recheck_every,
                           "learn_rate": float(np.ldexp(state.eta, -2 * data._e))}
        info = {"gamma": gamma, "triplet_ids": ids, "n_active": int(state.ids.size),
                **(data.backend_info() or {})}
        return M, cert, info


# ---------------------------------------------------------------------------
# The collection's solves (the registry's Method.collection)
# ---------------------------------------------------------------------------


def solve_fast(data):
    """:class:`LMNNWorkingSet` at its defaults, in per-feature units
    (:func:`run_in_feature_units`)."""
    return run_in_feature_units(LMNNWorkingSet(), data)


def _in_data_span(data):
    """The same problem in the span of the centred samples: ``(reduced, B)``
    with ``reduced`` over ``X B`` (``B`` of shape (d, r), orthonormal, ``r``
    the numerical rank of ``X - mean``) and the same target neighbours, or
    ``(data, None)`` when that span is all of ``R^d``.  The objective sees
    ``M`` only through differences of samples, which lie in the span, so
    ``M = B M_r B^T`` has the optimum's value; a direction no difference
    spans (blank pixels, histogram bins summing to one) leaves the dual
    solver a face of optima it drifts on."""
    B = span_basis(data.X)
    if B.shape[1] in (0, data.n_features):
        return data, None
    return data._like(data.X @ B, data.targets, transform=lambda X, put: X @ put(B)), B


def run_in_feature_units(solver, data, **run_options):
    """``solver.run`` on the problem reduced to the span of the samples
    (:func:`_in_data_span`, when they span fewer than ``d`` directions) and
    in per-feature units (the exact path's reduction,
    :func:`cvxmetric.lmnn.exact._feature_scaled`: features spread over more
    than :data:`FEATURE_SCALE_SPREAD` powers of two are divided by powers of
    two), its ``M`` mapped back and certified on ``data``.  A first-order
    method on raw features spread over 2^13 (raw wine) ends far from the
    optimum, and the working set's dual solver on raw digit pixels (spreads
    over 2^8, blank pixels) takes 10 times the iterations; reduced, both
    reach their usual accuracy at their usual cost."""
    spanned, B = _in_data_span(data)
    scaled, e = _feature_scaled(spanned)
    if e is None and B is None:
        return solver.run(data, **run_options)
    res = solver.run(scaled, **run_options)
    M = res.M if e is None else _from_feature_units(res.M, e)
    if B is not None:
        M = B @ M @ B.T
        M = 0.5 * (M + M.T)
    cert = data.certificate(M, res.info.get("triplet_ids"), res.info.get("gamma"),
                            solver=res.certificate.solver,
                            tolerances=res.certificate.tolerances)
    status = (Status.OPTIMAL if cert.passed else Status.OPTIMAL_INACCURATE
              if res.status == Status.OPTIMAL else res.status)
    info = {**res.info, "feature_exponents": e,
            "span": None if B is None else B.shape[1], **(data.backend_info() or {})}
    return SolverResult(M=M, status=status, objective=cert.objective, n_iter=res.n_iter,
                        certificate=cert, method=res.method, info=info, time=res.time,
                        raw_status=res.raw_status, trace=res.trace)


def solve_subgradient(data):
    """:class:`LMNNSubgradient` at its defaults, in per-feature units
    (:func:`run_in_feature_units`)."""
    return run_in_feature_units(LMNNSubgradient(), data, warn=False)

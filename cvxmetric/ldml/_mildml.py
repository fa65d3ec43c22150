"""MildML: multiple-instance LDML (Guillaumin, Verbeek, Schmid 2010, Sec. 2.2).

Bags ``X_d`` of instances with caption label sets ``Y_d``; a pair of bags is
positive (``t_de = 1``) when the captions share a label.  The bag distance is
the smallest instance distance (Eq. 7) and the objective is LDML's over bag
pairs (Eq. 8), minimised here as a negative log-likelihood::

    F(L, b) = sum_{d < e} g(s_de (min_{x in X_d, x' in X_e} ||L (x - x')||^2 - b))
              + lam R(L^T L)

with ``s_de = 2 t_de - 1`` and ``g(u) = log(1 + e^u)``.  The optimisation
alternates, as the paper does, (i) the pair selection by the min operator
for the current metric and (ii) one line search along the negative gradient
of the LDML objective of the selected instance pairs (Eq. 6, through
:class:`~cvxmetric.ldml.fast.PairSet`).  The line search accepts a step only
when Eq. 8 itself -- with the selection redone at the trial point -- falls
by Armijo's amount, so ``F`` never increases.  For a fixed selection the
inner problem is LDML on the selected pairs (:func:`~cvxmetric.ldml.solve_exact`);
with singleton bags the selection is fixed and MildML minimises LDML's
objective over all pairs.

Cost of a selection: one pass over all instance pairs, ``O(N^2 d)`` flops in
blocks of bags of one size (no N x N array, no padding).  An iteration costs
one selection and one pass over the selected pairs per trial step: the
accepted trial's selection and distances serve the next gradient.
"""

import math
import time
from dataclasses import dataclass
from numbers import Integral
from typing import NamedTuple

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval

from .._backend import check_host_input
from .._data import Samples
from .._linesearch import backtracking
from .._settings import _BLOCK_ENTRIES, _RUNNING_MIN, FINISH_ROUNDS
from .._solver import IterativeSolver
from .._validation import check_finite
from ..result import Certificate, NotAttainedError, SolverResult, Status
from ._budget import budget, expired, remaining
from .fast import PairSet, _random_start

__all__ = ["BagPairs", "MildMLSolver", "check_bags", "fit_mildml"]


def _block_min(Dm):
    """The smallest entry of each ``Dm[r, :, c, :]`` (``Dm`` of shape
    ``(R, s1, C, s2)``) and its position ``(ka, kc)``: the first in
    row-major order of ``(s1, s2)`` among equal values."""
    R, s1, C, s2 = Dm.shape
    if s1 * s2 <= _RUNNING_MIN:
        dmin = Dm[:, 0, :, 0].copy()
        k = np.zeros(dmin.shape, dtype=np.intp)
        better = np.empty(dmin.shape, dtype=bool)
        for u in range(s1):
            for v in range(s2):
                if u == v == 0:
                    continue
                cand = Dm[:, u, :, v]
                np.less(cand, dmin, out=better)
                np.copyto(dmin, cand, where=better)
                np.copyto(k, u * s2 + v, where=better)
        return dmin, k // s2, k % s2
    flat = Dm.transpose(0, 2, 1, 3).reshape(R, C, s1 * s2)
    k = np.argmin(flat, axis=2)
    dmin = np.take_along_axis(flat, k[..., None], axis=2)[..., 0]
    return dmin, k // s2, k % s2


def _small(idx):
    """Indices as int32 when they fit (else as they are)."""
    return idx.astype(np.int32) if idx.size == 0 or idx.max() < 2 ** 31 - 1 else idx


def _check_bag_list(bags, n_instances):
    """The bags as a list of ``intp`` index arrays, or a ``ValueError``
    naming ``bags`` (or the bad ``bags[k]``)."""
    if isinstance(bags, np.ndarray) and bags.ndim == 2:
        bags = list(bags)
    if not hasattr(bags, "__len__") or len(bags) < 2:
        raise ValueError("bags: expected a sequence of at least two bags.")
    return [_check_one_bag(B, k, n_instances) for k, B in enumerate(bags)]


def _check_one_bag(B, k, n_instances):
    """Bag ``k``: a non-empty 1-d array of distinct instance indices."""
    B = np.asarray(B)
    if B.ndim != 1:
        raise ValueError(f"bags[{k}]: expected a 1-d array of instance indices, "
                         f"got {B.ndim} dimensions.")
    if B.size == 0:
        raise ValueError(f"bags[{k}]: the bag is empty.")
    if not np.issubdtype(B.dtype, np.integer):
        raise ValueError(f"bags[{k}]: expected integer indices, got dtype {B.dtype}.")
    if B.min() < 0 or B.max() >= n_instances:
        bad = int(B.min()) if B.min() < 0 else int(B.max())
        raise ValueError(f"bags[{k}]: index {bad} is out of range for "
                         f"{n_instances} instances.")
    if np.unique(B).size != B.size:
        raise ValueError(f"bags[{k}]: an instance is listed twice.")
    return B.astype(np.intp)


def _label_set_arrays(bag_labels, n_bags, labels_name):
    """One flat array per bag from ``bag_labels`` (a scalar is a set of
    one), checking that there is one label set per bag."""
    if bag_labels is None or not hasattr(bag_labels, "__len__") \
            or isinstance(bag_labels, str) or len(bag_labels) != n_bags:
        n = None if bag_labels is None or not hasattr(bag_labels, "__len__") \
            else len(bag_labels)
        raise ValueError(f"{labels_name}: expected one label set per bag ({n_bags}), "
                         f"got {n}.")
    sets = []
    for k, s in enumerate(bag_labels):
        if np.isscalar(s):
            s = [s]
        try:
            s = np.asarray(list(s))
        except TypeError:
            raise ValueError(f"{labels_name}[{k}]: expected a set of labels.") from None
        if s.ndim != 1:
            raise ValueError(f"{labels_name}[{k}]: expected a flat set of labels.")
        sets.append(s)
    return sets


def _all_labels(sets, labels_name):
    """The labels of every set, concatenated, after refusing a None or NaN
    label, a mix of numbers and other labels, and sets that are all empty."""
    for k, s in enumerate(sets):
        if s.dtype == object and any(v is None or (isinstance(v, float) and v != v)
                                     for v in s):
            raise ValueError(f"{labels_name}[{k}]: a label is None or NaN; a caption "
                             f"lists names (an empty set for none).")
    kinds = {("number" if s.dtype.kind in "biuf" else s.dtype.kind) for s in sets if s.size}
    if len(kinds) > 1:
        raise ValueError(f"{labels_name}: the label sets mix numbers and other "
                         f"labels (dtype kinds {sorted(kinds)}); use one type (e.g. "
                         f"all int or all str), so that 1 and '1' are not merged.")
    everything = np.concatenate([s for s in sets if s.size] or [np.array([], dtype=int)])
    if everything.size == 0:
        raise ValueError(f"{labels_name}: every label set is empty; the labels "
                         f"refer to nothing.")
    if everything.dtype.kind == "f" and not np.all(np.isfinite(everything)):
        raise ValueError(f"{labels_name}: labels must be finite.")
    return everything


def _code_label_sets(sets, labels_name):
    """``(coded, classes)``: each set as sorted distinct indices into the
    sorted distinct labels ``classes``."""
    everything = _all_labels(sets, labels_name)
    try:
        classes, inv = np.unique(everything, return_inverse=True)
    except TypeError:
        types = sorted({type(v).__name__ for v in everything})
        raise ValueError(f"{labels_name}: labels of types {types} cannot be ordered "
                         f"together; use one type (e.g. all int or all str).") from None
    coded, start = [], 0
    for s in sets:
        coded.append(np.unique(inv[start:start + s.size]).astype(np.intp))
        start += s.size
    return coded, classes


def check_bags(bags, bag_labels, n_instances, *, labels_name="bag_labels"):
    """Validated bags (list of int arrays) and label sets (list of int arrays).

    Raises
    ------
    ValueError
        Naming the argument: an empty bag, an index out of range, a label
        set count that does not match, labels that are not integers or
        hashable, a label set no other bag shares nothing with (fine) --
        and label sets that name nothing at all.
    """
    out = _check_bag_list(bags, n_instances)
    sets = _label_set_arrays(bag_labels, len(out), labels_name)
    coded, classes = _code_label_sets(sets, labels_name)
    return out, coded, classes


class BagPairs(Samples):
    """Every pair of bags ``d < e`` with its label ``t_de`` (Eq. 7-8).

    Parameters
    ----------
    X : array_like (N, D)
    bags : sequence of array_like of int
        Instance indices of each bag (1-d, non-empty).
    bag_labels : sequence of sequence
        The caption label set of each bag (any hashable labels).
    lam, regularizer, gram : as in :class:`~cvxmetric.ldml.fast.AllPairs`
    """

    def __init__(self, X, bags, bag_labels, *, lam=0.0, regularizer="trace", gram=None):
        check_host_input(X, "X", "MildML")
        X = check_finite(X, "X", ndim=2)
        self.bags, self.captions, self.classes = check_bags(bags, bag_labels, X.shape[0])
        nb = len(self.bags)
        self.sizes = np.array([B.size for B in self.bags])
        # (size, bag ids, (n_bags, size) instance ids) of the bags of each size
        self._groups = []
        for size in np.unique(self.sizes):
            ids = np.flatnonzero(self.sizes == size)
            self._groups.append((int(size), ids, np.stack([self.bags[k] for k in ids])))
        # caption overlap of every bag pair: t = [Y_d . Y_e >= 1]
        Y = np.zeros((nb, len(self.classes)), dtype=np.float32)
        for k, s in enumerate(self.captions):
            Y[k, s] = 1.0
        d, e = np.triu_indices(nb, 1)
        self.d, self.e = d, e
        self.s = np.where(np.einsum("pc,pc->p", Y[d], Y[e]) >= 1, 1.0, -1.0)
        if np.all(self.s > 0) or np.all(self.s < 0):
            raise ValueError("bag_labels: the bag pairs must include both pairs that "
                             "share a label and pairs that do not.")
        self.loss = PairSet(X, np.zeros((1, 2), dtype=np.intp), [1.0], lam=lam,
                            regularizer=regularizer, gram=gram)
        self.X = self.loss.X
        self._plan = self._block_plan()

    @property
    def n_pairs(self):
        return len(self.s)

    def _block_plan(self):
        """The blocks of :meth:`select`, fixed by the bags alone: for each,
        ``(g1, rows, g2, lo, sel, p, rslot, cslot, swap)`` -- the row bags
        ``rows`` (a slice) of size group ``g1`` against the bags of group
        ``g2`` from position ``lo`` on; ``sel`` the block's flat entries
        that are bag pairs to keep (``None``: all), ``p`` their bag pair
        indices, ``rslot`` / ``cslot`` the offsets ``r s1`` / ``c s2`` of
        their row / column bag in the block's instance lists, and ``swap``
        where the row bag is the pair's ``e`` (``None``: nowhere)."""
        plan = []
        n_cols = int(self.sizes.sum())
        for g1, (s1, bg1, _) in enumerate(self._groups):
            step = max(1, _BLOCK_ENTRIES // (s1 * n_cols))  # bags per block
            for a in range(0, len(bg1), step):
                rb = bg1[a:a + step]
                for g2 in range(g1, len(self._groups)):
                    s2, bg2, _ = self._groups[g2]
                    lo = a if g2 == g1 else 0  # within a group: columns from the block on
                    cb = bg2[lo:]
                    if g2 == g1:  # the pairs above the diagonal
                        sel = np.flatnonzero((np.arange(len(rb))[:, None]
                                              < np.arange(len(cb))[None, :]).ravel())
                        rr, cc = np.divmod(sel, len(cb))
                    else:
                        sel = None
                        rr, cc = np.divmod(np.arange(len(rb) * len(cb)), len(cb))
                    d_, e_ = rb[rr], cb[cc]
                    swap = d_ > e_
                    p = self._pair_index(np.minimum(d_, e_), np.maximum(d_, e_))
                    # (32-bit where they fit: the plan holds a few indices
                    # per bag pair)
                    plan.append((g1, slice(a, a + step), g2, lo,
                                 None if sel is None else _small(sel), _small(p),
                                 _small(rr * s1), _small(cc * s2),
                                 swap if swap.any() else None))
        return plan

    def select(self, Z):
        """Eq. 7 for every bag pair at the coordinates ``Z = X L^T``.

        Returns
        -------
        pairs : ndarray of int, shape (n_bag_pairs, 2)
            The closest instance pair of each bag pair (in the order of
            ``(self.d, self.e)``; the first instance from bag ``d``).
        dist : ndarray of shape (n_bag_pairs,)
            Its squared distance, from the Gram form (``q_i + q_j - 2 z_i .
            z_j``, clipped at 0); :meth:`objective` recomputes the selected
            pairs' distances from their differences.
        """
        q = np.einsum("nd,nd->n", Z, Z)
        best = np.empty(len(self.s))
        arg = np.empty((len(self.s), 2), dtype=np.intp)
        # bags grouped by size: a block of bag pairs of sizes (s1, s2) is a
        # (r s1, n2 s2) distance array viewed as (r, s1, n2, s2), with no
        # padding; each unordered bag pair is computed once (pairs within
        # a group: the blocks on and above its diagonal).  The distances
        # q_i + q_j - 2 z_i . z_j are one product of [Z, q, 1] and
        # [-2 Z, 1, q] (no further passes over the block).
        ones = np.ones((Z.shape[0], 1))
        rows_aug = np.hstack([Z, q[:, None], ones])
        cols_aug = np.hstack([-2.0 * Z, ones, q[:, None]])
        cols = [cols_aug[I.ravel()] for _, _, I in self._groups]
        for g1, rows, g2, lo, sel, p, rslot, cslot, swap in self._plan:
            s1, _, I1 = self._groups[g1]
            s2, _, I2 = self._groups[g2]
            Ir, Ic = I1[rows].ravel(), I2[lo:].ravel()
            nr, nc = len(Ir) // s1, len(Ic) // s2
            Dm = (rows_aug[Ir] @ cols[g2][lo * s2:].T).reshape(nr, s1, nc, s2)
            dmin, ka, kc = _block_min(Dm)
            if sel is not None:
                dmin, ka, kc = dmin.ravel()[sel], ka.ravel()[sel], kc.ravel()[sel]
            best[p] = dmin.ravel()
            i_, j_ = Ir[rslot + ka.ravel()], Ic[cslot + kc.ravel()]
            if swap is not None:
                i_, j_ = np.where(swap, j_, i_), np.where(swap, i_, j_)
            arg[p, 0], arg[p, 1] = i_, j_
        return arg, np.maximum(best, 0.0)

    def _pair_index(self, d, e):
        """The index of bag pair ``(d, e)``, ``d < e``, in ``(self.d, self.e)``
        (row-major upper triangle)."""
        nb = len(self.bags)
        return d * (2 * nb - d - 1) // 2 + (e - d - 1)

    def objective(self, L, b):
        """Eq. 8 (negated, with the regulariser) at ``(L, b)``."""
        return self._evaluate(L, b)[0]

    def _evaluate(self, L, b):
        """``(F, pairs, dist)``: Eq. 8 at ``(L, b)``, the selection it used
        (``self.loss`` then holds those pairs) and their squared distances,
        from the differences."""
        Z = self.X @ L.T
        pairs, _ = self.select(Z)
        self.loss.set_pairs(pairs, self.s)
        dist = self.loss._distances(Z)
        return self.loss.value_grad(L, b, grad=False, dist=dist), pairs, dist


class MildState(NamedTuple):
    iter_num: int
    error: float        # relative decrease of F in the last iteration
    b: float
    f: float
    step: float
    n_changed: int      # bag pairs whose selection changed
    pairs: np.ndarray = None  # the selection at the iterate (its evaluation's)
    dist: np.ndarray = None   # the selected pairs' squared distances there


@dataclass
class MildMLSolver(IterativeSolver):
    """The paper's schedule: select pairs, one line search, repeat.

    Attributes
    ----------
    rank : int
        Rows of ``L``.
    maxiter, tol, max_time : see :class:`~cvxmetric._solver.IterativeSolver`
        ``error`` is the relative decrease ``(F_prev - F) / max(1, |F|)`` of
        the last iteration.
    """

    rank: int = 1
    maxiter: int = 300
    tol: float = 1e-7

    name = "mildml"
    _parameter_constraints = {
        **IterativeSolver._parameter_constraints,
        "rank": [Interval(Integral, 1, None, closed="left")],
    }

    def init_state(self, data, init=None):
        if not isinstance(data, BagPairs):
            raise TypeError(f"data: expected BagPairs, got {type(data).__name__}.")
        L, b = np.array(init[0], dtype=float), float(init[1])
        if L.shape != (self.rank, data.n_features):
            raise ValueError(f"init: L0 must have shape ({self.rank}, "
                             f"{data.n_features}), got {L.shape}.")
        f, pairs, dist = data._evaluate(L, b)
        return L, MildState(0, math.inf, b, f, 1.0, 0, pairs, dist)

    def update(self, L, state, data):
        # (i) the selection at the current metric: that of the point's own
        # evaluation (init_state's, or the accepted trial of the last line
        # search), kept with its distances rather than recomputed
        pairs = state.pairs
        data.loss.set_pairs(pairs, data.s)
        f, gL, gb = data.loss.value_grad(L, state.b, dist=state.dist)
        gnorm2 = float(np.sum(gL * gL)) + gb * gb
        if state.iter_num == 0:
            step = max(1.0, float(np.linalg.norm(L))) / max(math.sqrt(gnorm2), 1e-300)
        else:
            step = 2.0 * state.step

        # (ii) one line search on Eq. 8 itself (selection redone at each trial)
        def trial(t):
            L_new, b_new = L - t * gL, state.b - t * gb
            return (L_new, b_new, *data._evaluate(L_new, b_new))

        search = backtracking(
            trial, lambda t, v: v[2] <= f - 1e-4 * t * gnorm2, step=step,
            # below this step the move is under the round-off of L
            min_step=(1e-14 * (1.0 + float(np.linalg.norm(L))) / math.sqrt(gnorm2)
                      if gnorm2 > 0 else math.inf),
            deadline=self.deadline)
        if not search.accepted:
            if self.deadline.expired():
                # past max_time: stay, not converged (the run ends on the
                # deadline with time_limit_reached)
                return L, state._replace(iter_num=state.iter_num + 1, n_changed=0)
            # no decrease left at this selection: stay
            return L, state._replace(iter_num=state.iter_num + 1, error=0.0,
                                     n_changed=0)
        step = search.step
        L_new, b_new, f_new, new, dist = search.value
        changed = int(np.sum(np.any(new != pairs, axis=1)))
        if data.loss.lam == 0 and data.loss.worst_margin < 0:
            # Eq. 7 scales with M: every bag pair on its side of b now stays
            # so, each term falling, as (M, b) grows
            raise NotAttainedError(
                f"bag_labels: the metric reached at iteration {state.iter_num + 1} "
                f"puts every bag pair on its side of b (largest s (d - b) = "
                f"{data.loss.worst_margin:.3g} < 0): scaling it up lowers every "
                f"term of Eq. 8 forever, so without a regulariser the likelihood "
                f"has no maximiser. Set lam > 0.")
        err = (state.f - f_new) / max(1.0, abs(f_new))
        return L_new, MildState(state.iter_num + 1, err, b_new, f_new, step, changed,
                                new, dist)

    def finalize(self, L, state, data):
        # a non-convex, non-smooth problem: no lower bound is known
        cert = Certificate.from_bound(state.f, -math.inf, max_violation=0.0, min_eig=0.0,
                                      solver=self.name, tolerances={"tol": self.tol})
        # the selection at L: that of its last evaluation
        return L.T @ L, cert, {"L": L, "b": state.b, "selected": state.pairs,
                               "stationarity": state.error, "n_changed": state.n_changed}


def _finish(data, res, rank, maxiter):
    """Finish a MildML run: L-BFGS on LDML over the selected instance pairs
    (:class:`~cvxmetric.ldml.LowRankLDML`, the selection held), then the
    selection redone, while Eq. 8 itself falls (a round that does not lower
    it is dropped).  The paper's single line search per selection stops
    about 0.3 % above the optimum with singleton bags (a fixed selection:
    plain gradient descent on LDML); a held selection is a smooth problem
    that L-BFGS solves to stationarity.  Runs only when the paper's
    schedule stopped on its own rule, within what is left of ``maxiter``
    (which counts these iterations too) and of the time budget.  Returns
    the finished result (``res`` when no round helps)."""
    from .fast import LowRankLDML

    L, b, f = res.info["L"], float(res.info["b"]), float(res.objective)
    loss0 = data.loss
    if res.raw_status != Status.OPTIMAL or res.n_iter >= maxiter:
        return res  # stopped by max_iter / max_time: the budget is spent
    done = False
    n_iter = res.n_iter
    for _ in range(FINISH_ROUNDS):
        if expired():
            break
        pairs, _ = data.select(data.X @ L.T)
        loss = PairSet(data.X, pairs, data.s, lam=loss0.lam,
                       regularizer=loss0.regularizer, gram=loss0.gram)
        left = remaining()
        if n_iter >= maxiter:
            break  # max_iter counts the finish's iterations too
        run = LowRankLDML(rank=int(rank), maxiter=maxiter - n_iter, tol=1e-10,
                          certify=False,
                          max_time=None if math.isinf(left) else max(left, 1e-9))
        r = run.run(loss, (L, b), warn=False)
        n_iter += r.n_iter
        L2, b2 = r.info["L"], float(r.info["b"])
        f2 = data.objective(L2, b2)
        if not f2 < f:
            break
        L, b, f = L2, b2, f2
        new, _ = data.select(data.X @ L.T)
        if np.array_equal(new, pairs):
            # the selection is a fixed point and L-BFGS stopped on its own
            # rule: a stationary point of Eq. 8 (no certificate: not convex)
            done = r.raw_status == Status.OPTIMAL
            break
    if f >= res.objective:
        return res
    pairs, _ = data.select(data.X @ L.T)
    status = Status.OPTIMAL_INACCURATE if done else res.raw_status
    cert = Certificate.from_bound(f, -math.inf, max_violation=0.0, min_eig=0.0,
                                  solver="mildml", tolerances=res.certificate.tolerances)
    info = {**res.info, "L": L, "b": b, "selected": pairs, "finish": True}
    return SolverResult(M=L.T @ L, status=status, objective=f, n_iter=n_iter,
                        certificate=cert, method=res.method, info=info,
                        raw_status=status)


def fit_mildml(data, rank, *, n_init=1, random_state=None, maxiter=300, tol=1e-7,
               max_time=None, init=None, finish=True):
    """MildML from ``n_init`` random starts (or ``init=(L0, b0)``); the lowest
    Eq. 8 value is kept.  Returns a :class:`~cvxmetric.result.SolverResult`
    with ``info["L"]``, ``info["b"]``, ``info["selected"]`` (the closest
    instance pair of each bag pair) and ``info["objectives"]``.  ``finish``:
    then L-BFGS at the held selection while Eq. 8 falls (:func:`_finish`;
    ``info["finish"]``)."""
    if isinstance(rank, bool) or not isinstance(rank, Integral) or rank < 1:
        raise ValueError(f"rank: expected an integer >= 1, got {rank!r}.")
    if rank > data.n_features:
        raise ValueError(f"rank: {rank} exceeds the {data.n_features} input dimensions.")
    if isinstance(n_init, bool) or not isinstance(n_init, Integral) or n_init < 1:
        raise ValueError(f"n_init: expected an integer >= 1, got {n_init!r}.")
    rng = check_random_state(random_state)
    gen = np.random.default_rng(rng.randint(2 ** 31 - 1))
    t0 = time.perf_counter()
    best, objectives = None, []
    for k in range(int(n_init)):
        left = None if max_time is None else max(0.0, max_time - (time.perf_counter() - t0))
        start = init if (init is not None and k == 0) else _random_start(data.loss, rank, gen)
        res = MildMLSolver(rank=int(rank), maxiter=maxiter, tol=tol,
                           max_time=left).run(data, start, warn=False)
        objectives.append(res.objective)
        if best is None or res.objective < best.objective:
            best = res
    if finish:
        with budget(None if max_time is None
                    else max(0.0, max_time - (time.perf_counter() - t0))):
            best = _finish(data, best, rank, maxiter)
    best.info["objectives"] = objectives
    best.time = time.perf_counter() - t0
    return best


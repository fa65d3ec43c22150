"""Bounds on the variables of a conic problem, derived from its own data.

A dual vector ``y`` in ``K*`` gives the lower bound
``d - 1/2 x0^T P x0 - b^T y + inf_x r^T x`` with the residual
``r = P x0 + c + A^T y`` (:mod:`cvxmetric.certify`); the infimum is finite
only over a bounded set of ``x``.  This module finds such a box, for every
feasible ``x`` whose objective is at most a level ``U``, by interval
propagation (feasibility-based bound tightening, as MIP solvers presolve)
over linear inequalities that every such ``x`` satisfies:

- the rows of ``A x + s = b`` with the linear consequences of each cone
  (:func:`cvxmetric._conic.cone_rows`), and any bounds CVXPY passes apart;
- the level set: ``c^T x <= U - d`` (``x^T P x >= 0``), and, where ``P`` is
  definite on its support, the ball ``1/2 lam |x_S|^2 + c_S^T x_S <= ...``;
- for a PSD block ``S`` and a row whose part on the block's columns is
  ``<W, S>`` with ``W`` positive definite: ``tr S <= (...) / lam_min(W)``
  (a trace constraint, or a trace regulariser in the level set).

Nothing is assumed of the formulation: a variable the data do not bound
keeps an infinite bound, and the certificate then says so.
"""

import numpy as np
import scipy.sparse as sp

from ._conic import cone_rows, diagonal_rows, smat
from ._settings import BOUND_DENSE_MAX, BOUND_PROBES, BOUND_ROUNDS, BOUND_TRACE_ROWS

__all__ = ["BoundSystem"]


class BoundSystem:
    """The inequalities ``G x <= h`` of one conic form, ready to propagate.

    Parameters
    ----------
    form : cvxmetric._conic.ConicForm
    """

    def __init__(self, form):
        self.form = form
        Gs, hs = cone_rows(form)
        # G s <= h with s = b - A x:  -G A x <= h - G b
        G = -(Gs @ form.A).tocsr()
        h = hs - Gs @ form.b
        G2, h2 = _paired_rows(G, h)
        G = sp.vstack([G, G2, sp.csr_array(form.c[None, :])]).tocsr()
        self.G = G
        self.h = np.concatenate([h, h2, [np.inf]])
        self.level_row = G.shape[0] - 1
        self.traces = _trace_rules(form, G)
        self.quad = _quad_rule(form)

    def box(self, U, lower=None, upper=None, witness=None):
        """``(lo, hi)``: bounds on ``x`` over the feasible points with objective
        at most ``U`` (in the conic form's units), starting from the
        bounds ``lower`` / ``upper`` (arrays, ``+-inf`` where none).

        Coordinates that propagation leaves unbounded (a cycle of rows, as
        CVXPY's second-order forms of powers make) are probed when a
        ``witness`` point is given (:meth:`_probe`)."""
        n = self.form.n
        lo = np.full(n, -np.inf) if lower is None else np.array(lower, dtype=float)
        hi = np.full(n, np.inf) if upper is None else np.array(upper, dtype=float)
        if self.form.lower is not None:
            np.maximum(lo, self.form.lower, out=lo)
        if self.form.upper is not None:
            np.minimum(hi, self.form.upper, out=hi)
        h = self.h.copy()
        h[self.level_row] = U - self.form.offset
        rows, cols, vals = _with_trace_rows(self.G, self.traces)
        h = np.concatenate([h, np.full(len(self.traces), np.inf)])
        for _ in range(BOUND_ROUNDS):
            for k, rule in enumerate(self.traces):
                h[self.G.shape[0] + k] = rule.rhs(h, lo, hi)
            if self.quad is not None:
                self.quad.tighten(U, lo, hi)
            if not _propagate(rows, cols, vals, h, lo, hi):
                break
        if witness is not None and not (np.isfinite(lo).all() and np.isfinite(hi).all()):
            lo, hi = self._probe(h[:self.G.shape[0]], lo, hi, np.asarray(witness, float),
                                 U)
        # a margin for the rounding of the propagation's own arithmetic
        pad = 1e-9 * (1.0 + np.abs(lo)), 1e-9 * (1.0 + np.abs(hi))
        return lo - pad[0], hi + pad[1]

    def _probe(self, h, lo, hi, witness, U):
        """Bound the coordinates ``S`` left infinite, by contraction.

        Let ``C`` be the rows ``G x <= h`` relaxed by the witness's own
        violations, intersected with the box found so far (widened to hold
        the witness): a convex set holding every feasible point of the
        level set, and the witness (with the objective's level raised to
        the witness's value where that is higher).  Give ``S`` the artificial bounds
        ``+-B`` and propagate; if every artificial bound comes back strictly
        inside, ``C`` lies inside the result: were a point of ``C`` outside,
        the segment from the witness to it (in ``C``) would cross the shell
        between the result and ``+-B``, where propagation proved ``C`` has
        no point.  Coordinates that do not contract are left unbounded.
        """
        coo = self.G.tocoo()
        rows, cols, vals = coo.row, coo.col, coo.data
        finite = np.isfinite(h)
        resid = np.where(finite, self.G @ witness - np.where(finite, h, 0.0), 0.0)
        h = h + np.maximum(resid, 0.0) * (1 + 1e-9) + 1e-12 * (1 + np.abs(h))
        lo = np.minimum(lo, witness)
        hi = np.maximum(hi, witness)
        if self.quad is not None:
            form = self.form
            value = 0.5 * witness @ (form.P @ witness) + form.c @ witness + form.offset
            U = max(U, value) + 1e-12 * (1 + abs(value))
        span = np.concatenate([[1.0], np.abs(witness), np.abs(lo[np.isfinite(lo)]),
                               np.abs(hi[np.isfinite(hi)])]).max()
        free_lo, free_hi = ~np.isfinite(lo), ~np.isfinite(hi)
        for power in BOUND_PROBES:
            B = span * 2.0 ** power
            trial_lo, trial_hi = free_lo.copy(), free_hi.copy()
            while trial_lo.any() or trial_hi.any():
                plo = np.where(trial_lo, -B, lo)
                phi = np.where(trial_hi, B, hi)
                for _ in range(BOUND_ROUNDS):
                    if self.quad is not None:
                        self.quad.tighten(U, plo, phi)
                    if not _propagate(rows, cols, vals, h, plo, phi):
                        break
                stuck_lo = trial_lo & (plo <= -0.5 * B)
                stuck_hi = trial_hi & (phi >= 0.5 * B)
                if not (stuck_lo.any() or stuck_hi.any()):
                    return plo, phi
                trial_lo &= ~stuck_lo
                trial_hi &= ~stuck_hi
        return lo, hi


def _paired_rows(G, h, max_entries=8):
    """The sums of pairs of short rows on the same columns that cancel on all
    but one: ``t - v <= 0`` and ``-t - v <= 0`` give ``-2 t <= 0`` (an
    absolute value's epigraph, ``t >= |v|``: ``t >= 0`` whatever ``v``),
    which propagation cannot see one row at a time."""
    G = G.tocsr()
    G.sort_indices()
    counts = np.diff(G.indptr)
    groups = {}
    for row in np.flatnonzero((counts >= 2) & (counts <= max_entries) & np.isfinite(h)):
        cols = G.indices[G.indptr[row]:G.indptr[row + 1]]
        groups.setdefault(cols.tobytes(), []).append(row)
    rows, cols, vals, rhs = [], [], [], []
    for members in groups.values():
        for a_i, a in enumerate(members[:4]):
            for b in members[a_i + 1:4]:
                total = (G.data[G.indptr[a]:G.indptr[a + 1]]
                         + G.data[G.indptr[b]:G.indptr[b + 1]])
                scale = np.abs(G.data[G.indptr[a]:G.indptr[a + 1]]).max()
                keep = np.abs(total) > 1e-12 * scale
                if keep.sum() == 1:
                    rows.append(len(rhs))
                    cols.append(G.indices[G.indptr[a]:G.indptr[a + 1]][keep][0])
                    vals.append(total[keep][0])
                    rhs.append(h[a] + h[b])
    G2 = sp.csr_array((vals, (rows, cols)), shape=(len(rhs), G.shape[1]))
    return G2, np.asarray(rhs, dtype=float)


def _with_trace_rows(G, traces):
    if traces:
        G = sp.vstack([G] + [sp.csr_array(t.row[None, :]) for t in traces]).tocsr()
    coo = G.tocoo()
    return coo.row, coo.col, coo.data


def min_activity(rows, cols, vals, lo, hi, n_rows):
    """Per row: the least value of ``g^T x`` over the box (finite part) and
    how many of its terms are ``-inf``; and each entry's own term."""
    with np.errstate(invalid="ignore"):
        term = np.where(vals > 0, vals * lo[cols], vals * hi[cols])
    finite = np.isfinite(term)
    fin = np.bincount(rows, weights=np.where(finite, term, 0.0), minlength=n_rows)
    n_inf = np.bincount(rows, weights=~finite, minlength=n_rows)
    return fin, n_inf, term, finite


def _propagate(rows, cols, vals, h, lo, hi):
    """One round of interval propagation over ``G x <= h`` (in place).
    Returns whether a bound moved by more than a relative 1e-9."""
    n_rows = h.size
    fin, n_inf, term, finite = min_activity(rows, cols, vals, lo, hi, n_rows)
    rest = fin[rows] - np.where(finite, term, 0.0)
    ok = ((n_inf[rows] - ~finite) == 0) & np.isfinite(h[rows]) & (vals != 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = (h[rows] - rest) / vals
    new_hi = np.full(lo.size, np.inf)
    new_lo = np.full(lo.size, -np.inf)
    up = ok & (vals > 0)
    down = ok & (vals < 0)
    np.minimum.at(new_hi, cols[up], bound[up])
    np.maximum.at(new_lo, cols[down], bound[down])
    with np.errstate(invalid="ignore"):
        slack_hi = np.where(np.isfinite(hi), 1e-9 * (1.0 + np.abs(hi)), 0.0)
        slack_lo = np.where(np.isfinite(lo), 1e-9 * (1.0 + np.abs(lo)), 0.0)
    moved = (new_hi < hi - slack_hi).any() or (new_lo > lo + slack_lo).any()
    np.minimum(hi, new_hi, out=hi)
    np.maximum(lo, new_lo, out=lo)
    return bool(moved)


class _TraceRule:
    """``tr S_k <= (h_g + w^T b_k - min g_o^T x) / lam_min(W)`` from a row
    ``g`` whose part on block ``k``'s columns is ``<W, S_k>`` (``W > 0``)."""

    def __init__(self, g_index, g_other, wb, lam, row, trace_const):
        self.g_index = g_index            # the row of G it comes from
        self.g_other = g_other            # (cols, vals) of g off the block
        self.wb = wb                      # w^T b_k
        self.lam = lam
        self.row = row                    # the trace, in x: -(sum of diag rows of A)
        self.trace_const = trace_const    # sum of the diagonal entries of b_k

    def rhs(self, h, lo, hi):
        cols, vals = self.g_other
        with np.errstate(invalid="ignore"):
            terms = np.where(vals > 0, vals * lo[cols], vals * hi[cols])
        least = terms.sum() if terms.size else 0.0
        tau = h[self.g_index] + self.wb - least
        if not np.isfinite(tau):
            return np.inf
        return max(tau, 0.0) / self.lam - self.trace_const


def _trace_rules(form, G):
    """The trace rules of every PSD block (see :class:`_TraceRule`)."""
    rules = []
    A = form.A.tocsr()
    for blk in form.blocks:
        if blk.kind == "psd":
            rules += _block_trace_rules(form, G, A, blk)
    return rules


def _block_trace_rules(form, G, A, blk):
    order = int(blk.param)
    Ak = A[blk.start:blk.stop]
    cols = np.unique(Ak.indices)
    if cols.size == 0 or cols.size > BOUND_DENSE_MAX:
        return []
    B = Ak[:, cols].toarray()                                 # (m_k, n_cols)
    Gc = G[:, cols]
    overlap = np.diff((Gc != 0).astype(np.int8).tocsr().indptr)
    candidates = np.flatnonzero(overlap >= order)
    # the level set's row first (a trace regulariser), then the densest rows
    key = np.where(candidates == G.shape[0] - 1, np.inf, overlap[candidates])
    candidates = candidates[np.argsort(-key, kind="stable")][:BOUND_TRACE_ROWS]
    if candidates.size == 0:
        return []
    rhs = -Gc[candidates].toarray().T                         # (n_cols, n_cand)
    try:                                                      # B^T w = -g_c
        W = np.linalg.solve(B.T, rhs) if B.shape[0] == B.shape[1] else None
    except np.linalg.LinAlgError:
        W = None
    if W is None:
        W = np.linalg.lstsq(B.T, rhs, rcond=None)[0]
    resid = np.linalg.norm(B.T @ W - rhs, axis=0)
    scale = np.linalg.norm(rhs, axis=0)
    diag_pos = diagonal_rows(blk, form.solver)
    trace_row = -np.asarray(A[diag_pos].sum(axis=0)).ravel()
    trace_const = float(form.b[diag_pos].sum())
    b_k = form.b[blk.start:blk.stop]
    in_block = np.zeros(form.n, dtype=bool)
    in_block[cols] = True
    rules = []
    for k, g in enumerate(candidates):
        if resid[k] > 1e-10 * max(scale[k], 1e-300):
            continue                      # the row is not <W, S> on this block
        lam = np.linalg.eigvalsh(smat(W[:, k], order, form.solver))[0]
        if lam <= 0:
            continue
        row = G[[g]]
        other = ~in_block[row.indices]
        rules.append(_TraceRule(int(g), (row.indices[other], row.data[other]),
                                float(W[:, k] @ b_k), float(lam), trace_row,
                                trace_const))
    return rules


class _QuadRule:
    """``1/2 lam |x_S|^2 + c_S^T x_S <= U - d - min c_O^T x_O`` on the support
    ``S`` of ``P`` (``lam`` its least eigenvalue there, > 0): a ball."""

    def __init__(self, form, support, lam):
        self.form = form
        self.support = support
        self.lam = lam
        other = np.ones(form.n, dtype=bool)
        other[support] = False
        self.other = np.flatnonzero(other & (form.c != 0))

    def tighten(self, U, lo, hi):
        c = self.form.c
        co = c[self.other]
        with np.errstate(invalid="ignore"):
            least = np.where(co > 0, co * lo[self.other], co * hi[self.other]).sum()
        tau = U - self.form.offset - least
        if not np.isfinite(tau):
            return
        centre = -c[self.support] / self.lam
        rho2 = 2.0 * tau / self.lam + centre @ centre
        if rho2 < 0:
            return                        # the level set is empty at U
        rho = np.sqrt(rho2)
        hi[self.support] = np.minimum(hi[self.support], centre + rho)
        lo[self.support] = np.maximum(lo[self.support], centre - rho)


def _quad_rule(form):
    if form.P is None:
        return None
    P = sp.csr_array(form.P)
    support = np.flatnonzero(np.diff(P.indptr) > 0)
    if support.size == 0:
        return None
    block = P[support][:, support]
    if block.nnz == support.size:
        lam = float(block.diagonal().min())       # a diagonal P (sums of squares)
    elif support.size <= BOUND_DENSE_MAX:
        lam = np.linalg.eigvalsh(block.toarray())[0]
    else:
        # Gershgorin: a lower bound on the least eigenvalue (exact for a
        # diagonal P, the usual sum of squares)
        diag = block.diagonal()
        lam = float(np.min(2 * diag - abs(block).sum(axis=1)))
    if lam <= 0:
        return None
    return _QuadRule(form, support, float(lam))

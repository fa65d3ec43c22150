"""OMDML data: views, triplets, Eq. 3 at a fixed combination, its dual bound.

Notation of Wu, Hoi et al., *Online multi-modal distance metric learning*
(TKDE 2016).  ``m`` views (modalities) of the same ``n`` items, view ``i``
with ``n_i`` features; a triplet ``t = (p, p+, p-)`` asks that ``p`` be
closer to ``p+`` than to ``p-``.  With ``a_ti = x_p - x_p+`` and
``b_ti = x_p - x_p-`` in view ``i``, ``V_ti = a a^T - b b^T`` and

    f_ti(M_i) = d_i(p, p+) - d_i(p, p-) = <M_i, V_ti>,

Eq. 3 at a fixed ``theta`` in the simplex is

    F(M; theta) = 0.5 sum_i ||M_i||_F^2 + C sum_t max(0, sum_i theta_i f_ti + 1)

over ``M_i`` PSD: convex in the ``M_i``.  Its Lagrangian dual, for hinge
multipliers ``0 <= alpha_t <= C``, is

    D(alpha) = sum_t alpha_t - 0.5 sum_i ||Pi_+(-theta_i S_i(alpha))||_F^2,
    S_i(alpha) = sum_t alpha_t V_ti = A_i^T diag(alpha) A_i - B_i^T diag(alpha) B_i,

a lower bound on the optimum at that ``theta`` for every such ``alpha``
(the minimiser over ``M_i`` PSD of ``0.5 ||M_i||^2 + theta_i <M_i, S_i>`` is
``Pi_+(-theta_i S_i)``).
"""

from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

from .._linalg import pow2_rms_exponents, project_psd
from .._settings import _OMDML_BLOCK as _BLOCK
from .._settings import _SPAN_TOL, MAX_SQ_DIST
from .._tolerances import certificate_tolerance
from .._validation import check_finite, check_indices, check_scalar
from ..result import Certificate

__all__ = ["OMDMLData", "check_views", "check_theta"]


def _schur_penalty(T, r):
    """``0.5 ||Pi_+(-(T_22 - T_21 T_11^-1 T_12))||_F^2`` for the leading
    ``r x r`` block ``T_11`` of ``T``, or ``inf`` when ``T_11`` is not
    positive definite by a margin above round-off (see
    :meth:`OMDMLData.dual_bound`)."""
    T = 0.5 * (T + T.T)
    T11 = T[:r, :r]
    lam = np.linalg.eigvalsh(T11)
    if not lam[0] > 1e-12 * abs(lam[-1]):
        return np.inf
    if r == T.shape[0]:
        return 0.0
    T12 = T[:r, r:]
    schur = T[r:, r:] - T12.T @ scipy.linalg.solve(T11, T12, assume_a="pos")
    P = project_psd(-schur)
    return 0.5 * float(np.sum(P * P))


def check_views(views, name="views"):
    """``views`` as a list of finite float arrays (n, n_i), the same ``n``."""
    if isinstance(views, np.ndarray) or not isinstance(views, (list, tuple)):
        raise ValueError(f"{name}: expected a list of arrays, one (n_samples, "
                         f"n_features_i) array per modality.")
    if len(views) == 0:
        raise ValueError(f"{name}: no modality given.")
    out = []
    for k, V in enumerate(views):
        V = check_finite(V, f"{name}[{k}]", ndim=2)
        if V.shape[1] == 0:
            raise ValueError(f"{name}[{k}]: the view is empty (0 features).")
        if V.shape[0] == 0:
            raise ValueError(f"{name}[{k}]: no samples.")
        if out and V.shape[0] != out[0].shape[0]:
            raise ValueError(f"{name}[{k}]: has {V.shape[0]} samples, {name}[0] has "
                             f"{out[0].shape[0]}; every view describes the same items.")
        out.append(V)
    return out


def check_theta(theta, m, name="theta"):
    """``theta`` as a point of the simplex with ``m`` entries."""
    theta = check_finite(theta, name, shape=(m,))
    if np.any(theta < 0) or abs(float(theta.sum()) - 1.0) > 1e-9:
        raise ValueError(f"{name}: must lie in the simplex (entries >= 0 summing to "
                         f"1), got entries summing to {float(theta.sum()):.6g} with "
                         f"minimum {float(theta.min()):.3g}.")
    return theta / theta.sum()


@dataclass(eq=False)
class OMDMLData:
    """Views, triplets and ``C`` of Eq. 3 (build with :meth:`from_views`).

    Attributes
    ----------
    views : list of ndarray (n, n_i)
    triplets : ndarray of int, shape (T, 3)
    C : float
    A, B : list of ndarray (T, n_i)
        ``x_p - x_p+`` and ``x_p - x_p-`` per view (built on first use).
    """

    views: list
    triplets: np.ndarray
    C: float
    _diff: dict = field(repr=False, default_factory=dict)

    def __repr__(self):
        return (f"OMDMLData(n_views={self.n_views}, dims={self.dims}, "
                f"n_triplets={self.n_triplets}, C={self.C:g})")

    @classmethod
    def from_views(cls, views, triplets, *, C=1.0):
        """Validate and build.

        Parameters
        ----------
        views : list of array_like (n, n_i)
        triplets : array_like of int, shape (T, 3)
            ``(p, p+, p-)``: ``p`` closer to ``p+`` than to ``p-``.
        C : float > 0
        """
        views = check_views(views)
        t = check_indices(triplets, "triplets", views[0].shape[0], width=3)
        C = check_scalar(C, "C", low=0.0, low_inclusive=False)
        data = cls(views=views, triplets=t, C=C)
        data._check_triplets()
        return data

    def _check_triplets(self):
        """Refuse triplets that carry no information, and views whose squared
        distances the solvers cannot represent.

        A triplet's term depends on the metrics only through
        ``V_ti = a a^T - b b^T`` (``a = x_p - x_p+``, ``b = x_p - x_p-``),
        which is 0 exactly when ``a = +-b``: then ``d_i(p, p+) - d_i(p, p-)
        = 0`` for every metric (``(p, q, q)``, ``(p, p, p)``).  When that
        holds in every view for every triplet, Eq. 3 does not depend on the
        data (its optimum is ``M = 0`` whatever the views) and the online
        learners update on noise: refused, naming ``triplets``.

        Eq. 3 is not scale invariant (the unit margin fixes a scale), and
        Algorithm 1 starts from ``M = I``, so its scores are squared
        distances and its Passive-Aggressive step divides by their squares
        (``||V||_F^2``, up to ``(|a|^2 + |b|^2)^2``).  A view whose squared
        difference lengths exceed :data:`MAX_SQ_DIST` (``1e150``) would take
        those squares past the float64 range (the objective became NaN at
        features of 1e100); refused, naming the view.
        """
        informative = np.zeros(self.n_triplets, dtype=bool)
        for rows, diffs in self._blocks():
            for k, (A, B) in enumerate(diffs):
                informative[rows] |= ~(np.all(A == B, axis=1) | np.all(A == -B, axis=1))
                with np.errstate(over="ignore"):  # inf is refused just below
                    top = max(float(np.max(np.einsum("ij,ij->i", A, A), initial=0.0)),
                              float(np.max(np.einsum("ij,ij->i", B, B), initial=0.0)))
                if not top <= MAX_SQ_DIST:
                    raise ValueError(
                        f"views[{k}]: squared distances between the triplets' items "
                        f"reach {top:.3g}; Eq. 3 compares them with a unit margin "
                        f"and the online learners square them again (above "
                        f"{MAX_SQ_DIST:.0e} that leaves the floating-point range). "
                        f"Rescale the view (the paper scales every feature to "
                        f"[0, 1]); the optimum is not scale invariant.")
        if self.n_triplets and not np.any(informative):
            raise ValueError(
                "triplets: none carries information: in every triplet (p, p+, p-) "
                "and every view, x_p - x_p+ = +-(x_p - x_p-) (e.g. p+ = p-, or "
                "p = p+ = p-), so d(p, p+) - d(p, p-) = 0 under every metric and "
                "Eq. 3 does not depend on the data. Pass triplets whose items "
                "differ.")

    def with_C(self, C):
        """The same data with another ``C``."""
        C = check_scalar(C, "C", low=0.0, low_inclusive=False)
        return OMDMLData(views=self.views, triplets=self.triplets, C=C,
                         _diff=self._diff)

    # the (T, n_i) differences, built on first use: the online solvers read
    # the views row by row and never need them (at 10^5 triplets of 809
    # features they would hold 1.3 GB)
    @property
    def A(self):
        """``x_p - x_p+`` per view, list of (T, n_i)."""
        if "A" not in self._diff:
            t = self.triplets
            self._diff["A"] = [V[t[:, 0]] - V[t[:, 1]] for V in self.views]
        return self._diff["A"]

    @property
    def B(self):
        """``x_p - x_p-`` per view, list of (T, n_i)."""
        if "B" not in self._diff:
            t = self.triplets
            self._diff["B"] = [V[t[:, 0]] - V[t[:, 2]] for V in self.views]
        return self._diff["B"]

    def active_features(self):
        """Per view, the boolean mask of features that differ within some
        triplet (the others enter no difference ``a``, ``b``)."""
        if "active" not in self._diff:
            act = [np.zeros(n, dtype=bool) for n in self.dims]
            for _, diffs in self._blocks():
                for on, (A, B) in zip(act, diffs):
                    on |= np.any(A != 0, axis=0) | np.any(B != 0, axis=0)
            self._diff["active"] = act
        return self._diff["active"]

    @property
    def n_views(self):
        return len(self.views)

    @property
    def dims(self):
        return tuple(int(V.shape[1]) for V in self.views)

    @property
    def n_triplets(self):
        return int(self.triplets.shape[0])

    # -- Eq. 3 ---------------------------------------------------------------

    def _blocks(self):
        """``(rows, A_i, B_i)`` for blocks of triplets, every view: the
        differences built block by block (peak memory one block)."""
        t = self.triplets
        for s in range(0, len(t), _BLOCK):
            b = t[s:s + _BLOCK]
            yield slice(s, s + len(b)), [
                (V[b[:, 0]] - V[b[:, 1]], V[b[:, 0]] - V[b[:, 2]]) for V in self.views]

    def view_scores(self, Ms):
        """``f_ti = d_i(p, p+) - d_i(p, p-)`` for every triplet, (T, m)."""
        out = np.empty((self.n_triplets, self.n_views))
        for rows, diffs in self._blocks():
            for i, ((A, B), M) in enumerate(zip(diffs, Ms)):
                # BLAS products, not einsum: (T, n_i) @ (n_i, n_i)
                out[rows, i] = np.sum((A @ M) * A, axis=1) - np.sum((B @ M) * B, axis=1)
        return out

    def objective(self, Ms, theta):
        """Eq. 3 at fixed ``theta``."""
        return self._objective(Ms, self.view_scores(Ms) @ theta + 1.0)

    def _objective(self, Ms, arg):
        """Eq. 3 from the hinges' arguments ``sum_i theta_i f_ti + 1``."""
        reg = 0.5 * sum(float(np.sum(M * M)) for M in Ms)
        return reg + self.C * float(np.sum(np.maximum(arg, 0.0)))

    def dual_bound(self, alpha, theta):
        """``D(alpha)`` of the module docstring (``alpha`` clipped to [0, C]).

        Each ``S_i`` is built in the basis of :meth:`view_bases` (the same
        bound: ``Pi_+`` and the Frobenius norm are invariant under a change
        of orthonormal basis), over the features that vary within some
        triplet.  When ``theta_i S_i`` is positive definite on the span of
        the differences (block ``T_11``), the penalty is also bounded by
        that of the Schur complement ``T_22 - T_21 T_11^-1 T_12``: with
        ``T = T_Q + E``, ``T_Q = [[T_11, T_12], [T_21, T_21 T_11^-1 T_12]]``
        PSD and ``E`` that Schur complement in its corner,
        ``<N, T> >= <N, E>`` for every PSD ``N``.  The Schur complement is
        of the order of the differences' components outside the span
        squared, where the full ``Pi_+`` carries the eigensolver's
        round-off of ``||S_i||`` (which a large data scale multiplies); the
        smaller penalty is kept.
        """
        alpha = np.clip(alpha, 0.0, self.C)
        bases = self.view_bases()
        active = self.active_features()
        S = [np.zeros((U.shape[1],) * 2) for U, _ in bases]
        for rows, diffs in self._blocks():
            al = alpha[rows]
            for Si, (A, B), (U, _), on in zip(S, diffs, bases, active):
                # features constant over the triplets are exactly 0 in S_i
                # and in Pi_+: left out, so that no round-off lands there
                Ar, Br = A[:, on] @ U, B[:, on] @ U
                Si += (Ar.T * al) @ Ar - (Br.T * al) @ Br
        out = float(alpha.sum())
        with np.errstate(over="ignore", invalid="ignore"):  # huge scales: no bound
            for Si, th, (_, r) in zip(S, theta, bases):
                P = project_psd(-th * Si)
                pen = 0.5 * float(np.sum(P * P))
                if pen > 0 and th > 0 and r > 0:
                    pen = min(pen, _schur_penalty(th * Si, r))
                out -= pen
        return out if np.isfinite(out) else -np.inf

    def view_bases(self):
        """Per view ``(U, r)``: an orthonormal basis ``U`` of the features
        that vary within some triplet (:meth:`active_features`), its first
        ``r`` columns spanning the triplets' differences (singular values
        above ``1e-6`` of the largest), the others the directions in which
        they barely vary (features normalised to a fixed sum, a feature
        that is a combination of others)."""
        if "bases" not in self._diff:
            act = self.active_features()
            exps = self.view_exponents()
            G = [np.zeros((int(on.sum()),) * 2) for on in act]
            for _, diffs in self._blocks():
                for Gi, (A, B), on, k in zip(G, diffs, act, exps):
                    # in the view's own units: no overflow at any scale
                    An, Bn = np.ldexp(A[:, on], -k), np.ldexp(B[:, on], -k)
                    Gi += An.T @ An + Bn.T @ Bn
            out = []
            for Gi in G:
                if Gi.shape[0] == 0:
                    out.append((np.zeros((0, 0)), 0))
                    continue
                ev, U = np.linalg.eigh(0.5 * (Gi + Gi.T))
                ev, U = ev[::-1], U[:, ::-1]
                r = int(np.sum(ev > _SPAN_TOL ** 2 * max(ev[0], np.finfo(float).tiny)))
                out.append((U, r))
            self._diff["bases"] = out
        return self._diff["bases"]

    def feature_exponents(self):
        """``k_ij >= 0`` per feature ``j`` of each view ``i``: ``2^k_ij`` the
        power of two nearest to the root mean square of feature ``j``'s
        differences over the triplets (computed without overflow), 0 below
        about 1 or for a feature constant over the triplets.  The exact
        model solves each feature in these units (:class:`OMDMLModel`).

        Returns
        -------
        list of ndarray of int, shape (n_i,)
        """
        out = []
        for Ai, Bi in zip(self.A, self.B):
            step = max(1, Ai.shape[0] // 20000)
            k, _ = pow2_rms_exponents(np.concatenate([Ai[::step], Bi[::step]]))
            out.append(np.maximum(k, 0))
        return out

    def view_exponents(self):
        """``k_i >= 0`` with ``2^k_i`` the scale of view ``i``'s differences.

        ``2^k_i`` is the power of two nearest to the root mean square length
        of the triplets' differences ``x_p - x_p+``, ``x_p - x_p-`` in view
        ``i`` (computed without overflow), and 0 when that length is below
        about 1.  With ``x = 2^k y`` and ``M_i = 2^(-2k) N_i`` Eq. 3 reads

            0.5 sum_i 2^(-4 k_i) ||N_i||_F^2 + C sum_t max(0, sum_i theta_i
            <N_i, V_ti(y)> + 1),

        the same objective value (the substitution is exact in floating
        point), over data of unit scale: the certificate's strictly
        feasible multipliers and the refusal of degenerate large views
        work in these units (the exact model itself is solved in each
        feature's units, :meth:`feature_exponents`).  Views shorter than 1
        keep ``k_i = 0``: there the regulariser dominates and the optimum is
        near ``M = 0`` already.
        """
        out = []
        for V in self.views:
            top = float(np.max(np.abs(V)))
            if top == 0.0:
                out.append(0)
                continue
            ka = int(np.frexp(top)[1])
            W = np.ldexp(V, -ka)  # |W| <= 1: the squares below cannot overflow
            t = self.triplets[:: max(1, self.n_triplets // 20000)]
            D = np.concatenate([W[t[:, 0]] - W[t[:, 1]], W[t[:, 0]] - W[t[:, 2]]])
            rms = float(np.sqrt(np.mean(np.einsum("ij,ij->i", D, D))))
            # a view constant over the triplets has no scale to normalise
            out.append(max(0, ka + int(np.round(np.log2(rms)))) if rms > 0 else 0)
        return tuple(out)

    def certificate(self, Ms, theta, alpha=None, *, solver, solver_version="",
                    tolerances=None, times=None):
        """Certificate of ``Ms`` for Eq. 3 at ``theta``.

        ``alpha`` defaults to the multipliers consistent with ``Ms``
        (``C`` on active hinges, 0 elsewhere); the largest bound is kept
        when ``alpha`` is given (one vector, or a list of candidate
        vectors: every one gives a valid bound).
        """
        f = self.view_scores(Ms) @ theta + 1.0
        obj = self._objective(Ms, f)  # f also fixes the default multipliers
        bound = self.dual_bound(np.where(f > 0, self.C, 0.0), theta)
        if alpha is not None:
            cands = alpha if isinstance(alpha, (list, tuple)) else [alpha]
            for a in cands:
                bound = max(bound, self.dual_bound(np.asarray(a, dtype=float), theta))
        eigs = [float(np.linalg.eigvalsh(0.5 * (M + M.T))[0]) for M in Ms]
        min_eig = min(eigs)
        tol_gap, tol_feas = certificate_tolerance("omdml")
        return Certificate.from_bound(
            obj, bound, max_violation=max(0.0, -min_eig), min_eig=min_eig,
            solver=solver, solver_version=solver_version, tolerances=tolerances,
            times=times, tol_gap=tol_gap, tol_feas=tol_feas)

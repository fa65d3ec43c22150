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

from .._linalg import project_psd
from .._tolerances import certificate_tolerance
from .._validation import check_finite, check_indices, check_scalar
from ..result import Certificate

__all__ = ["OMDMLData", "check_views", "check_theta"]

_BLOCK = 8192  # triplets per block of the certificate's passes

#: Largest squared difference length of a view accepted (see
#: :meth:`OMDMLData._check_triplets`).
MAX_SQ_DIST = 1e150


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
        """``D(alpha)`` of the module docstring (``alpha`` clipped to [0, C])."""
        alpha = np.clip(alpha, 0.0, self.C)
        S = [np.zeros((n, n)) for n in self.dims]
        for rows, diffs in self._blocks():
            al = alpha[rows]
            for Si, (A, B) in zip(S, diffs):
                Si += (A.T * al) @ A - (B.T * al) @ B
        out = float(alpha.sum())
        for Si, th, on in zip(S, theta, self.active_features()):
            # rows and columns of features constant over the triplets are
            # exactly 0 in S_i, and so in Pi_+: left out, so that round-off
            # of the eigensolver cannot put a spurious penalty there (which
            # a large data scale would multiply)
            P = project_psd(-th * Si[np.ix_(on, on)])
            with np.errstate(over="ignore"):  # at huge scales: -inf, no bound
                out -= 0.5 * float(np.sum(P * P))
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
        point), over data of unit scale: the exact model is solved in these
        units.  Views shorter than 1 are solved as given: there the
        regulariser dominates and the optimum is near ``M = 0`` already.
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
            k = ka + (int(np.round(np.log2(rms))) if rms > 0 else 0)
            out.append(max(0, k))
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

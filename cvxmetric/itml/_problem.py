"""ITML in canonical form: labelled pairs, the bounds, the prior, the
objective, its Lagrangian dual and the certificate.

Information-theoretic metric learning (Davis, Kulis, Jain, Sra, Dhillon,
"Information-theoretic metric learning", ICML 2007, Sec. 3-4) is the convex
problem::

    minimise_{M PD, xi > 0}  D_ld(M, M0) + gamma D_ld(diag xi, diag xi0)
    subject to               D_M(p) <= xi_p   (similar pairs, s_p = +1)
                             D_M(p) >= xi_p   (dissimilar pairs, s_p = -1)

with ``D_ld(A, B) = tr(A B^-1) - log det(A B^-1) - d``, ``D_M(p) = phi_p^T
M phi_p`` the squared Mahalanobis distance of pair ``p`` (``phi_p`` the
difference of its points), the prior ``M0`` (positive definite) and the
slacks' targets ``xi0_p = u`` on similar pairs, ``l`` on dissimilar ones
(``bounds = (u, l)``).  With ``t_p = xi_p / xi0_p`` the slack term is
``gamma sum_p (t_p - log t_p - 1)``.

**The objective in M.**  For a fixed ``M`` the best slack of a similar pair
is ``max(D_M(p), u)`` and of a dissimilar one ``min(D_M(p), l)``, so the
optimum is that of ::

    F(M) = tr(M M0^-1) - log det(M M0^-1) - d + gamma sum_p psi(D_M(p) / xi0_p)

with ``psi(t) = t - log t - 1`` counted only on the violated side (``t >
1`` on a similar pair, ``t < 1`` on a dissimilar one).  ``F`` is what
:meth:`ITMLData.objective` returns: the declared problem's value at ``M``
with its best slacks.

**The dual bound.**  With one multiplier ``alpha_p >= 0`` per constraint
``s_p (D_M(p) - xi_p) <= 0`` and ``G(alpha) = sum_p alpha_p s_p phi_p
phi_p^T``, the Lagrangian separates: ``min_M tr(M (M0^-1 + G)) - log det M``
is ``d + log det(M0^-1 + G)``, at ``M = (M0^-1 + G)^-1``, when ``M0^-1 + G``
is positive definite (``-inf`` otherwise), and ``min_xi gamma xi / xi0 -
gamma log xi - alpha s xi`` is attained at ``xi_p = xi0_p / c_p`` with ``c_p
= 1 - s_p alpha_p xi0_p / gamma`` when ``c_p > 0``.  Collecting the
constants, every ``alpha >= 0`` with ``M0^-1 + G(alpha)`` positive definite
and every ``c_p > 0`` gives ::

    g(alpha) = log det(M0^-1 + G(alpha)) + log det M0 + gamma sum_p log c_p  <=  F(M*)

a rigorous lower bound on the optimum, whatever produced ``alpha``.  ``g``
is concave and smooth on that set, with gradient ``s_p (D_{M(alpha)}(p) -
xi_p(alpha))``; at its maximiser ``M(alpha) = (M0^-1 + G)^-1`` is the optimal
metric and ``F(M(alpha)) = g(alpha)`` (strong duality: the problem is
strictly feasible).  The multipliers are the ``lambda_ij`` that the paper's
Algorithm 1 accumulates: each of its Bregman projections maximises ``g``
exactly along one coordinate.  :meth:`ITMLData.certificate` evaluates ``g``
at the multipliers it is given, clipped at 0 and, when ``M0^-1 + G`` is not
positive definite or some ``c_p <= 0`` (a solver's inexact multipliers),
shrunk towards ``alpha = 0`` (where ``g = 0``) until they are admissible.

**Degenerate pairs.**  A pair of identical points has ``D_M = 0`` for
every ``M``: a similar one is satisfied by every metric (its slack stays at
``u``, its multiplier at 0); a dissimilar one asks ``0 >= xi > 0``, so no
point is feasible, and :class:`ITMLData` refuses it naming ``pairs``.

**Bounds.**  Given, ``bounds = (u, l)`` are two finite positive numbers.
Not given, they are metric-learn's: the 5th and 95th percentiles of the
Euclidean (not squared) distance matrix of the distinct points the pairs
join (its zero diagonal included, as metric-learn computes them), a bound
that comes out 0 set to ``1e-9``.  They are compared with
squared Mahalanobis distances, as in metric-learn.
"""

from numbers import Real

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.spatial.distance import pdist

from .._settings import ITML_SHRINK_STEPS as _SHRINK_STEPS
from .._tolerances import certificate_tolerance
from .._validation import check_finite, check_indices, check_pair_labels, check_samples
from ..result import Certificate

__all__ = ["ITMLData", "default_bounds", "check_gamma", "check_bounds"]

def check_gamma(gamma, name="gamma"):
    """``gamma`` as a finite float > 0, or a ValueError naming ``name``."""
    if isinstance(gamma, bool) or not isinstance(gamma, (Real, np.integer, np.floating)) \
            or not np.isfinite(gamma) or gamma <= 0:
        raise ValueError(f"{name}: the slacks' weight must be a finite number > 0, "
                         f"got {gamma!r}.")
    return float(gamma)


def check_bounds(bounds, name="bounds"):
    """``bounds = (u, l)`` as a float array of two finite numbers > 0."""
    try:
        b = np.asarray(bounds, dtype=float).ravel()
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected two numbers (u, l), got "
                         f"{type(bounds).__name__}.") from None
    if b.size != 2:
        raise ValueError(f"{name}: expected two numbers (u, l), got {b.size}.")
    if not np.all(np.isfinite(b)) or np.any(b <= 0):
        raise ValueError(f"{name}: u and l must be finite and > 0 (they are the "
                         f"slacks' targets, inside a logarithm), got "
                         f"({b[0]:.3g}, {b[1]:.3g}).")
    return b


def default_bounds(X, pairs):
    """metric-learn's bounds: the 5th and 95th percentiles of the Euclidean
    distance matrix of the distinct points of ``pairs`` -- the full ``m x
    m`` matrix, its zero diagonal and both triangles included, as
    ``np.percentile(pairwise_distances(points), (5, 95))`` -- a 0 set to
    1e-9.  Computed from the ``m (m - 1) / 2`` distinct distances (sorted:
    the full matrix's sorted entries are ``m`` zeros, then each distance
    twice).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    pairs : ndarray of int, shape (n_pairs, 2)

    Returns
    -------
    ndarray of shape (2,)
    """
    points = np.unique(X[np.unique(pairs)], axis=0)
    m = points.shape[0]
    if m < 2:
        return np.array([1e-9, 1e-9])
    dist = np.sort(pdist(points))

    def entry(k):  # the k-th smallest entry of the full matrix
        return np.where(k < m, 0.0, dist[np.maximum(k - m, 0) // 2])

    out = []
    for q in (5.0, 95.0):
        pos = q / 100.0 * (m * m - 1)  # numpy's linear interpolation
        lo = int(np.floor(pos))
        hi = min(lo + 1, m * m - 1)
        out.append(float(entry(lo) + (pos - lo) * (entry(hi) - entry(lo))))
    b = np.array(out)
    b[b == 0] = 1e-9
    return b


def _logdet_chol(A):
    """``(log det A, Cholesky factor)`` of a symmetric ``A``, or ``None``
    when ``A`` is not (numerically) positive definite."""
    try:
        c = cho_factor(A, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        return None
    diag = np.diag(c[0])
    if not np.all(diag > 0):
        return None
    return 2.0 * float(np.sum(np.log(diag))), c


def signed_gram(Phi, w):
    """``sum_p w_p phi_p phi_p^T`` as two symmetric rank-k products (one
    for the positive weights, one for the negative): far cheaper than a
    general product with a scaled copy."""
    pos, neg = w > 0, w < 0
    out = np.zeros((Phi.shape[1],) * 2)
    if np.any(pos):
        Pp = Phi[pos] * np.sqrt(w[pos])[:, None]
        out += Pp.T @ Pp
    if np.any(neg):
        Pn = Phi[neg] * np.sqrt(-w[neg])[:, None]
        out -= Pn.T @ Pn
    return out


class ITMLData:
    """ITML's data: points, labelled pairs, bounds, ``gamma`` and the prior.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
        Finite.
    pairs : array_like of int, shape (n_pairs, 2)
        Indices into ``X``; at least one pair.
    labels : array_like of shape (n_pairs,)
        +1 (similar) or -1 (dissimilar).
    gamma : float > 0, default=1.0
        Weight of the slacks' LogDet divergence.
    bounds : array_like of two floats > 0, optional
        ``(u, l)``; default :func:`default_bounds` (module docstring).
    M0 : array_like of shape (n_features, n_features), optional
        The prior, symmetric positive definite; default the identity.

    Attributes
    ----------
    X, pairs, labels, gamma, bounds, M0
    Phi : ndarray of shape (n_pairs, n_features)
        ``x_i - x_j`` per pair.
    s : ndarray of shape (n_pairs,)
        The labels as floats.
    xi0 : ndarray of shape (n_pairs,)
        ``u`` on similar pairs, ``l`` on dissimilar ones.
    M0_inv : ndarray
    logdet_M0 : float
    """

    def __init__(self, X, pairs, labels, gamma=1.0, bounds=None, M0=None):
        X = check_samples(X, "X")
        n, d = X.shape
        pairs = check_indices(pairs, "pairs", n, width=2)
        labels = check_pair_labels(labels, pairs.shape[0], "labels")
        self.gamma = check_gamma(gamma)
        self.X, self.pairs, self.labels = X, pairs, labels
        self.Phi = X[pairs[:, 0]] - X[pairs[:, 1]]
        if not np.all(np.isfinite(self.Phi)):
            raise ValueError("X: the pairs' differences overflow; rescale X.")
        self.s = labels.astype(float)
        zero = ~np.any(self.Phi != 0, axis=1)
        bad = np.flatnonzero(zero & (labels == -1))
        if bad.size:
            raise ValueError(
                f"pairs: dissimilar pair {int(bad[0])} joins two identical points "
                f"({bad.size} such pairs); its distance is 0 under every metric, so "
                f"no slack xi > 0 satisfies D_M <= ... >= xi and ITML's problem is "
                f"infeasible. Remove it.")
        self.degenerate = zero
        self.bounds = (default_bounds(X, pairs) if bounds is None
                       else check_bounds(bounds))
        self.xi0 = np.where(labels == 1, self.bounds[0], self.bounds[1])
        self._set_prior(M0, d)

    def _set_prior(self, M0, d):
        if M0 is None:
            M0 = np.eye(d)
        else:
            M0 = check_finite(M0, "M0", shape=(d, d))
            scale = max(1.0, float(np.max(np.abs(M0))))
            if np.max(np.abs(M0 - M0.T)) > 1e-10 * scale:
                raise ValueError("M0: the prior is not symmetric.")
            M0 = 0.5 * (M0 + M0.T)
        chol = _logdet_chol(M0)
        w = np.linalg.eigvalsh(M0)
        if chol is None or w[0] <= 1e-12 * max(abs(w[-1]), 1e-300):
            raise ValueError(f"M0: the prior must be positive definite (D_ld(M, M0) "
                             f"needs its inverse); smallest eigenvalue {w[0]:.3g}.")
        self.M0 = M0
        self.logdet_M0 = chol[0]
        inv = cho_solve(chol[1], np.eye(d), check_finite=False)
        self.M0_inv = 0.5 * (inv + inv.T)

    @property
    def n_pairs(self):
        return self.pairs.shape[0]

    @property
    def n_features(self):
        return self.X.shape[1]

    def with_gamma(self, gamma):
        """The same data with another ``gamma`` (nothing recomputed)."""
        out = object.__new__(ITMLData)
        out.__dict__.update(self.__dict__)
        out.gamma = check_gamma(gamma)
        return out

    # -- the primal --------------------------------------------------------------

    def distances(self, M):
        """``D_M(p) = phi_p^T M phi_p`` for every pair, shape (n_pairs,)."""
        return np.einsum("pi,pi->p", self.Phi @ M, self.Phi)

    def slacks(self, M):
        """The best slacks at ``M``: ``max(D, u)`` on similar pairs,
        ``min(D, l)`` on dissimilar ones."""
        D = self.distances(M)
        return np.where(self.s > 0, np.maximum(D, self.xi0), np.minimum(D, self.xi0))

    def objective(self, M):
        """``F(M)`` (module docstring); ``inf`` where ``M`` is not positive
        definite or a dissimilar distance is 0."""
        M = 0.5 * (np.asarray(M, dtype=float) + np.asarray(M, dtype=float).T)
        chol = _logdet_chol(M)
        if chol is None:
            return np.inf
        d = self.n_features
        f = float(np.sum(M * self.M0_inv)) - (chol[0] - self.logdet_M0) - d
        t = self.slacks(M) / self.xi0
        if np.any(t <= 0):
            return np.inf
        return f + self.gamma * float(np.sum(t - np.log(t) - 1.0))

    def gradient(self, M):
        """``grad F(M) = M0^-1 - M^-1 + gamma sum_p psi'(D_p / xi0_p) phi_p
        phi_p^T / xi0_p`` (``psi'(t) = 1 - 1 / t`` on the violated side)."""
        D = self.distances(M)
        t = D / self.xi0
        active = self.s * (D - self.xi0) > 0
        w = np.where(active, (1.0 - 1.0 / np.where(active, t, 1.0)) / self.xi0, 0.0)
        return self.M0_inv - np.linalg.inv(M) + self.gamma * signed_gram(self.Phi, w)

    # -- the dual ----------------------------------------------------------------

    def _dual_parts(self, alpha):
        """``(g, Cholesky of M0^-1 + G, c)`` at ``alpha``, or ``None`` off
        the dual's domain."""
        c = 1.0 - self.s * alpha * self.xi0 / self.gamma
        if np.any(c <= 0):
            return None
        chol = _logdet_chol(self.M0_inv + signed_gram(self.Phi, alpha * self.s))
        if chol is None:
            return None
        g = chol[0] + self.logdet_M0 + self.gamma * float(np.sum(np.log(c)))
        return g, chol[1], c

    def dual_value(self, alpha):
        """``g(alpha)``, ``-inf`` off its domain (module docstring)."""
        parts = self._dual_parts(np.asarray(alpha, dtype=float))
        return -np.inf if parts is None else parts[0]

    def dual_metric(self, alpha):
        """``M(alpha) = (M0^-1 + G(alpha))^-1`` (``None`` off the domain)."""
        parts = self._dual_parts(np.asarray(alpha, dtype=float))
        if parts is None:
            return None
        M = cho_solve(parts[1], np.eye(self.n_features), check_finite=False)
        return 0.5 * (M + M.T)

    def dual_gradient(self, alpha):
        """``(g, grad g, M(alpha))``: ``grad_p = s_p (D_{M(alpha)}(p) -
        xi0_p / c_p)``; ``None`` off the domain."""
        alpha = np.asarray(alpha, dtype=float)
        parts = self._dual_parts(alpha)
        if parts is None:
            return None
        g, chol, c = parts
        M = cho_solve(chol, np.eye(self.n_features), check_finite=False)
        M = 0.5 * (M + M.T)
        return g, self.s * (self.distances(M) - self.xi0 / c), M

    def dual_bound(self, alpha):
        """``g`` at ``alpha`` clipped at 0 and, off the domain, shrunk
        towards 0 by halving until admissible (``g(0) = 0``): a valid lower
        bound on the optimum for any ``alpha``."""
        alpha = np.maximum(np.asarray(alpha, dtype=float).ravel(), 0.0)
        if alpha.shape != (self.n_pairs,) or not np.all(np.isfinite(alpha)):
            raise ValueError(f"alpha: expected {self.n_pairs} finite multipliers, got "
                             f"shape {alpha.shape}.")
        t = 1.0
        for _ in range(_SHRINK_STEPS):
            g = self.dual_value(t * alpha)
            if np.isfinite(g):
                return g
            t *= 0.5
        return 0.0

    def certificate(self, M, alpha=None, solver="", **about):
        """Objective ``F(M)``, the dual bound ``g`` at ``alpha`` (``-inf``
        without multipliers) and the PSD violation of ``M``, judged at the
        package's tolerance (gap relative to ``max(1, |F|)``).

        Parameters
        ----------
        M : array_like of shape (d, d)
        alpha : array_like of shape (n_pairs,), optional
            Multipliers of the pair constraints.
        solver : str
        **about
            ``solver_version``, ``tolerances``, ``times``.

        Returns
        -------
        Certificate
        """
        tol_gap, tol_feas = certificate_tolerance("itml")
        M = np.asarray(M, dtype=float)
        M = 0.5 * (M + M.T)
        bound = -np.inf if alpha is None else self.dual_bound(alpha)
        min_eig = float(np.linalg.eigvalsh(M)[0])
        return Certificate.from_bound(
            self.objective(M), bound, max_violation=max(0.0, -min_eig),
            min_eig=min_eig, tol_gap=tol_gap, tol_feas=tol_feas, solver=solver,
            **about)

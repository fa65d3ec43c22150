"""GMML in canonical form: the two scatter matrices, the objective, the
closed form and the certificate.

Geometric mean metric learning (Zadeh, Hosseini, Sra, "Geometric mean
metric learning", ICML 2016) learns ``M`` from similar pairs ``S`` and
dissimilar pairs ``D`` as (Eq. 13, the regularised problem)::

    minimise_{M PD}  F(M) = tr(M A_S) + tr(M^{-1} A_D) + lam D_sld(M, M0)
    D_sld(M, M0) = tr(M M0^{-1}) + tr(M^{-1} M0) - 2d

with ``A_S = sum_S phi phi^T``, ``A_D = sum_D phi phi^T`` and ``M0`` a prior
(positive definite; identity by default).  With ``A = A_S + lam M0^{-1}``
and ``B = A_D + lam M0``, ``F(M) = tr(M A) + tr(M^{-1} B) - 2 lam d``,
convex in ``M``, minimised by the geometric mean ``M* = A^{-1} # B``
(``M A M = B``).  The weighted version replaces it by the point
``M_t = A^{-1} #_t B`` of the geodesic from ``A^{-1}`` to ``B``, the
minimiser of the geodesically convex ``G_t(M) = (1 - t) delta_R^2(M,
A^{-1}) + t delta_R^2(M, B)`` (``delta_R`` the Riemannian distance of PD
matrices); ``t = 1/2`` gives ``M*`` again.

**The lower bounds (the certificate).**  For ``t = 1/2`` (``F``): with
``C = A^{1/2} M A^{1/2}`` and ``G = (A^{1/2} B A^{1/2})^{1/2}``, every PD
``M`` has

    tr(M A) + tr(M^{-1} B) - 2 tr(G) = ||C^{1/2} - C^{-1/2} G||_F^2 >= 0,

so ``2 tr(G) - 2 lam d`` (``tr(G) = sum_i sqrt(mu_i)``, ``mu`` the
eigenvalues of ``A B``) bounds ``F`` below, with equality at ``C = G``,
i.e. at ``M*``.  For ``t != 1/2`` (``G_t``): by the triangle inequality
``delta(M, A^{-1}) + delta(M, B) >= L = delta(A^{-1}, B)`` for every ``M``,
and ``min (1 - t) a^2 + t b^2`` over ``a + b >= L`` is ``t (1 - t) L^2``:
a lower bound on ``G_t``, attained on the geodesic.  Both bounds need no
dual variable and hold for any ``M``.

**When there is no minimum.**  A direction ``v`` with ``A v = 0`` (no
similar pair varies along it and ``lam = 0``) lets ``M = I + s v v^T``
lower ``tr(M^{-1} B)`` as ``s`` grows with ``tr(M A)`` fixed; ``B v = 0``
lets ``M`` shrink along ``v``: the infimum is not attained
(:class:`~cvxmetric.result.NotAttainedError`).  ``lam > 0`` rules both out.
"""

from numbers import Real

import numpy as np
from scipy.linalg import pinvh

from .._tolerances import certificate_tolerance
from .._validation import check_finite, check_indices, check_pair_labels, check_samples
from ..result import Certificate
from ..sdml._problem import check_prior

__all__ = ["GMMLData", "geometric_mean"]


def _pd_sqrt(A):
    """``(A^{1/2}, A^{-1/2})`` of a symmetric positive definite ``A``."""
    w, V = np.linalg.eigh(0.5 * (A + A.T))
    s = np.sqrt(w)
    return (V * s) @ V.T, (V / s) @ V.T


def geometric_mean(A, B, t=0.5):
    """``A^{-1} #_t B = A^{-1/2} (A^{1/2} B A^{1/2})^t A^{-1/2}`` of positive
    definite ``A``, ``B``: the point at ``t`` of the geodesic from
    ``A^{-1}`` to ``B``."""
    Ah, Aih = _pd_sqrt(A)
    w, V = np.linalg.eigh(Ah @ B @ Ah)
    inner = (V * np.maximum(w, 0.0) ** t) @ V.T
    M = Aih @ inner @ Aih
    return 0.5 * (M + M.T)


def _check(value, name, low, high=np.inf, meaning=""):
    if isinstance(value, bool) or not isinstance(value, Real) or not np.isfinite(value) \
            or not low <= value <= high:
        raise ValueError(f"{name}: {meaning} must be a finite number in [{low:g}, "
                         f"{high:g}], got {value!r}.")
    return float(value)


def _gen_eigs(X, Y):
    """Eigenvalues of ``X^{-1} Y`` (``X``, ``Y`` symmetric PD), ``None``
    when ``X`` is not PD."""
    try:
        L = np.linalg.cholesky(0.5 * (X + X.T))
    except np.linalg.LinAlgError:
        return None
    Li = np.linalg.inv(L)
    return np.linalg.eigvalsh(Li @ (0.5 * (Y + Y.T)) @ Li.T)


class GMMLData:
    """GMML's data: the scatter matrices and the hyperparameters.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    pairs : array_like of int, shape (n_pairs, 2)
    labels : array_like of shape (n_pairs,)
        +1 (similar, ``S``) or -1 (dissimilar, ``D``).
    lam : float >= 0, default=0.1
        Weight of the regulariser ``D_sld(M, M0)``.
    t : float in [0, 1], default=0.5
        Position on the geodesic (the weighted mean); ``1/2`` is the convex Eq. 13.
    M0 : array_like of shape (n_features, n_features), optional
        Prior metric, positive definite (default: identity).

    Attributes
    ----------
    A_S, A_D : ndarray (d, d)
    A, B : ndarray (d, d)
        ``A_S + lam M0^{-1}`` and ``A_D + lam M0``.
    """

    def __init__(self, X, pairs, labels, lam=0.1, t=0.5, M0=None):
        X = check_samples(X, "X")
        pairs = check_indices(pairs, "pairs", X.shape[0], width=2)
        y = check_pair_labels(labels, pairs.shape[0], "labels")
        d = X.shape[1]
        self.lam = _check(lam, "lam", 0.0, meaning="the regulariser's weight")
        self.t = _check(t, "t", 0.0, 1.0, meaning="the geodesic's position")
        self.M0 = np.eye(d) if M0 is None else check_prior(M0, d, "M0")
        self.M0_inv = np.eye(d) if M0 is None else pinvh(self.M0)
        phi = X[pairs[:, 0]] - X[pairs[:, 1]]
        with np.errstate(over="ignore", invalid="ignore"):
            self.A_S = phi[y == 1].T @ phi[y == 1]
            self.A_D = phi[y == -1].T @ phi[y == -1]
        if not (np.all(np.isfinite(self.A_S)) and np.all(np.isfinite(self.A_D))):
            raise ValueError("X: the pairs' scatter matrices overflow; rescale X.")
        self.n_features, self.n_pairs = d, int(pairs.shape[0])

    def with_params(self, lam=None, t=None):
        out = self.__class__.__new__(self.__class__)
        out.__dict__.update(self.__dict__)
        if lam is not None:
            out.lam = _check(lam, "lam", 0.0, meaning="the regulariser's weight")
        if t is not None:
            out.t = _check(t, "t", 0.0, 1.0, meaning="the geodesic's position")
        return out

    @property
    def A(self):
        return self.A_S + self.lam * self.M0_inv

    @property
    def B(self):
        return self.A_D + self.lam * self.M0

    def attained(self):
        """``None`` when ``A`` and ``B`` are positive definite (the minimum
        is attained), else why not (naming the argument)."""
        for name, mat, kind in (("A", self.A, "similar"), ("B", self.B, "dissimilar")):
            w = np.linalg.eigvalsh(mat)
            if w[0] <= 1e-12 * max(1.0, w[-1]):
                return (f"pairs: the {kind} pairs' scatter matrix (plus lam times the "
                        f"prior) is singular (smallest eigenvalue {w[0]:.3g}): along "
                        f"its null space GMML's objective decreases without a "
                        f"minimiser. Use lam > 0 (here {self.lam:g}) or {kind} pairs "
                        f"spanning every feature.")
        return None

    def closed_form(self):
        """``A^{-1} #_t B``: the minimiser (Eq. 13 at ``t = 1/2``, the weighted mean otherwise)."""
        return geometric_mean(self.A, self.B, self.t)

    # -- objectives ----------------------------------------------------------------

    def objective(self, M):
        """Eq. 13's ``F(M)`` at ``t = 1/2``, the geodesic objective ``G_t(M)``
        otherwise; ``inf`` unless ``M`` is positive definite."""
        d = self.n_features
        M = check_finite(M, "M", shape=(d, d))
        M = 0.5 * (M + M.T)
        if self.t == 0.5:
            try:
                L = np.linalg.cholesky(M)
            except np.linalg.LinAlgError:
                return np.inf
            Li = np.linalg.inv(L)
            inv_term = float(np.sum(Li * (Li @ self.B)))  # tr(M^{-1} B)
            return float(np.sum(M * self.A) + inv_term - 2.0 * self.lam * d)
        ea = _gen_eigs(M, np.linalg.inv(self.A))
        eb = _gen_eigs(M, self.B)
        if ea is None or eb is None or ea[0] <= 0 or eb[0] <= 0:
            return np.inf
        return float((1 - self.t) * np.sum(np.log(ea) ** 2)
                     + self.t * np.sum(np.log(eb) ** 2))

    def lower_bound(self):
        """The lower bound of the module docstring (the optimal value)."""
        if self.t == 0.5:
            mu = _gen_eigs(np.linalg.inv(self.A), self.B)
            return float(2.0 * np.sum(np.sqrt(np.maximum(mu, 0.0)))
                         - 2.0 * self.lam * self.n_features)
        e = _gen_eigs(np.linalg.inv(self.A), self.B)
        return float(self.t * (1 - self.t) * np.sum(np.log(e) ** 2))

    def stationarity(self, M):
        """``||M A M - B||_F / ||B||_F``: the first-order condition of
        ``t = 1/2`` (reported, not judged)."""
        return float(np.linalg.norm(M @ self.A @ M - self.B) / np.linalg.norm(self.B))

    def certificate(self, M, *, solver, solver_version="", tolerances=None, times=None):
        """Objective, the lower bound, PD violation; judged at
        ``certificate_tolerance("gmml")``."""
        d = self.n_features
        M = 0.5 * (check_finite(M, "M", shape=(d, d)) + check_finite(M, "M").T)
        tol_gap, tol_feas = certificate_tolerance("gmml")
        min_eig = float(np.linalg.eigvalsh(M)[0])
        obj = self.objective(M)
        bound = self.lower_bound() if np.isfinite(obj) else -np.inf
        return Certificate.from_bound(
            obj, bound, max_violation=max(0.0, -min_eig), min_eig=min_eig,
            solver=solver, solver_version=solver_version, tolerances=tolerances,
            times=times, tol_gap=tol_gap, tol_feas=tol_feas)

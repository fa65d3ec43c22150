"""SDML in canonical form: the graphical-lasso matrix, the objective and its
certificate.

Sparse distance metric learning (Qi, Tang, Zha, Chua, Zhang, "An efficient
sparse metric learning in high-dimensional space via l1-penalized
log-determinant regularization", ICML 2009) learns ``M`` from labelled pairs
as the convex problem (in metric-learn's form)::

    minimise_{M PD}  F(M) = tr(M P) - log det M + lam ||M||_{1,off}
    P = M0^{-1} + eta sum_p y_p phi_p phi_p^T

with ``phi_p`` the difference of pair ``p``, ``y_p = +1`` (similar) or
``-1`` (dissimilar), ``M0`` the prior metric (positive definite),
``eta >= 0`` (``balance_param``), ``lam >= 0`` (``sparsity_param``) and
``||M||_{1,off} = sum_{i != j} |M_ij|``.  ``sum_p y_p phi_p phi_p^T`` is the
paper's ``X^T L X`` with ``L`` the Laplacian of the pairs' graph.  It is
the graphical lasso of the "covariance" ``P``.

**The dual bound.**  Write ``lam |M_ij| = max_{|Z_ij| <= lam} Z_ij M_ij``
(``i != j``; ``Z_ii = 0``).  For any such symmetric ``Z`` with ``W = P + Z``
positive definite, every PD ``M`` has

    F(M) >= tr(M W) - log det M >= d + log det W,

the second inequality being the minimum over ``M`` (at ``M = W^{-1}``).
So ``d + log det W`` bounds the optimum below for every ``W`` PD with
``W_ii = P_ii`` and ``|W_ij - P_ij| <= lam`` -- the graphical lasso's dual,
``max log det W + d`` over that box.  At the optimum ``W = M*^{-1}``
(stationarity: ``M*^{-1} - P`` is a subgradient of the penalty), so the
bound is tight.  The certificate takes ``M^{-1}`` (and any other candidate
a solver gives, e.g. the glasso's covariance iterate), clips it into the
box, and when the clipped matrix is not PD shrinks its step from ``P``
towards it until it is (possible when ``P`` itself is PD).

**When the problem has no minimum.**  The bound above makes ``F`` bounded
below exactly when the box holds a PD ``W`` (by Slater's condition at
``M = I``, strong duality holds); when it holds one with ``|W_ij - P_ij| <
lam`` strictly, the minimum is attained.  A diagonal entry ``P_ii <= 0``
leaves the box without a PD matrix, and ``F(I + t e_i e_i^T) -> -inf``:
:meth:`SDMLData.unbounded_direction` finds such rays (also ``v`` with
``v^T P v + lam (||v||_1^2 - ||v||_2^2) <= 0`` along the least eigenvector
of ``P``), and the solvers raise :class:`~cvxmetric.result.UnboundedError`
with it.  With metric-learn's default ``balance_param = 0.5`` and its
``20 C^2`` pairs on standardised data this is the usual case: the
dissimilar pairs' term dominates ``P``'s diagonal.
"""

from numbers import Real

import numpy as np
import scipy.linalg
from scipy.linalg import pinvh

from .._settings import SDML_AUTO_CAP, SDML_AUTO_FRACTION
from .._tolerances import certificate_tolerance
from .._validation import check_finite, check_indices, check_pair_labels, check_samples
from ..result import Certificate

__all__ = ["SDMLData", "auto_balance"]


def _check_param(value, name, meaning):
    """A finite real ``>= 0``, as a float, or a ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, Real) or not np.isfinite(value) \
            or value < 0:
        raise ValueError(f"{name}: {meaning} must be a finite number >= 0, got "
                         f"{value!r}.")
    return float(value)


def auto_balance(P0, K):
    """``balance_param="auto"``: a weight ``eta`` that keeps ``P`` definite.

    ``eta_max = sup {eta : P0 + eta K PD} = -1 / lambda_min(K, P0)`` (the
    least generalised eigenvalue; infinite when ``K`` is PSD).  Returns
    ``min(SDML_AUTO_CAP, SDML_AUTO_FRACTION * eta_max)``: then ``P >=
    (1 - SDML_AUTO_FRACTION) P0``, so ``tr(M P) - log det M`` has its
    minimum and the L1 term only adds to it -- the problem is bounded on
    data of any scale, sorted or not.  At metric-learn's ``0.5`` on
    standardised data the dissimilar pairs make ``P`` indefinite and the
    problem unbounded.

    Parameters
    ----------
    P0, K : ndarray of shape (d, d)
        ``prior^-1`` (positive definite) and ``sum_p y_p phi_p phi_p^T``.
    """
    P0 = 0.5 * (P0 + P0.T)
    scale = max(float(np.max(np.abs(K))), np.finfo(float).tiny)
    # the pencil (K / scale, P0): the same eigenvectors, eigenvalues / scale
    mu = float(scipy.linalg.eigh(K / scale, P0, eigvals_only=True,
                                 subset_by_index=[0, 0])[0])
    if mu >= 0:
        return SDML_AUTO_CAP
    return min(SDML_AUTO_CAP, SDML_AUTO_FRACTION / (-mu * scale))


def _logdet_pd(A):
    """``log det A`` of a symmetric ``A``, ``-inf`` unless it is positive
    definite (a Cholesky factorisation decides)."""
    try:
        L = np.linalg.cholesky(0.5 * (A + A.T))
    except np.linalg.LinAlgError:
        return -np.inf
    return 2.0 * float(np.sum(np.log(np.diag(L))))


def check_prior(M0, d, name="prior"):
    """A symmetric positive definite ``(d, d)`` prior metric, or ValueError
    naming ``name`` (SDML uses its inverse)."""
    M0 = check_finite(M0, name, shape=(d, d))
    scale = max(1.0, float(np.max(np.abs(M0))))
    if np.max(np.abs(M0 - M0.T)) > 1e-10 * scale:
        raise ValueError(f"{name}: matrix is not symmetric.")
    M0 = 0.5 * (M0 + M0.T)
    w = np.linalg.eigvalsh(M0)
    if w[0] <= 1e-12 * max(1.0, w[-1]):
        raise ValueError(f"{name}: SDML's prior must be positive definite (its inverse "
                         f"enters P); smallest eigenvalue {w[0]:.3g}.")
    return M0


class SDMLData:
    """SDML's data: the matrices of ``P`` and the two hyperparameters.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
        Finite samples.
    pairs : array_like of int, shape (n_pairs, 2)
        Indices into ``X``; at least one pair.
    labels : array_like of shape (n_pairs,)
        +1 (similar) or -1 (dissimilar).
    balance_param : float >= 0 or "auto", default=0.5
        ``eta``, the weight of the pairs' term in ``P``; ``"auto"``:
        :func:`auto_balance` (``P`` stays definite).
    sparsity_param : float >= 0, default=0.01
        ``lam``, the weight of the off-diagonal L1 penalty.
    prior : array_like of shape (n_features, n_features), optional
        The prior metric ``M0``, positive definite (default: identity).

    Attributes
    ----------
    P0 : ndarray (d, d)
        ``M0^{-1}``.
    K : ndarray (d, d)
        ``sum_p y_p phi_p phi_p^T``.
    P : ndarray (d, d)
        ``P0 + eta K``.
    balance_param, sparsity_param, n_features, n_pairs
    """

    def __init__(self, X, pairs, labels, balance_param=0.5, sparsity_param=0.01,
                 prior=None):
        X = check_samples(X, "X")
        pairs = check_indices(pairs, "pairs", X.shape[0], width=2)
        y = check_pair_labels(labels, pairs.shape[0], "labels").astype(float)
        d = X.shape[1]
        if not (isinstance(balance_param, str) and balance_param == "auto"):
            self.balance_param = _check_param(balance_param, "balance_param",
                                              "the weight of the pairs' term")
        self.sparsity_param = _check_param(sparsity_param, "sparsity_param",
                                           "the L1 penalty's weight")
        self.prior = np.eye(d) if prior is None else check_prior(prior, d)
        self.P0 = np.eye(d) if prior is None else pinvh(self.prior)
        phi = X[pairs[:, 0]] - X[pairs[:, 1]]
        with np.errstate(over="ignore", invalid="ignore"):
            K = (phi * y[:, None]).T @ phi
        if not np.all(np.isfinite(K)):
            raise ValueError("X: the pairs' term sum_p y_p phi_p phi_p^T overflows; "
                             "rescale X.")
        self.K = 0.5 * (K + K.T)
        if isinstance(balance_param, str) and balance_param == "auto":
            self.balance_param = auto_balance(self.P0, self.K)
        self.n_pairs = int(pairs.shape[0])
        self.n_features = d

    @classmethod
    def from_matrices(cls, P0, K, balance_param=0.5, sparsity_param=0.01):
        """The data of ``P = P0 + eta K`` given directly (both symmetric)."""
        self = cls.__new__(cls)
        self.P0 = check_finite(P0, "P0", ndim=2)
        d = self.P0.shape[0]
        self.K = check_finite(K, "K", shape=(d, d))
        self.prior = pinvh(self.P0)
        self.balance_param = _check_param(balance_param, "balance_param",
                                          "the weight of the pairs' term")
        self.sparsity_param = _check_param(sparsity_param, "sparsity_param",
                                           "the L1 penalty's weight")
        self.n_pairs, self.n_features = 0, d
        return self

    def with_params(self, balance_param=None, sparsity_param=None):
        """The same pairs at other hyperparameters."""
        out = self.__class__.__new__(self.__class__)
        out.__dict__.update(self.__dict__)
        if balance_param is not None:
            out.balance_param = _check_param(balance_param, "balance_param",
                                             "the weight of the pairs' term")
        if sparsity_param is not None:
            out.sparsity_param = _check_param(sparsity_param, "sparsity_param",
                                              "the L1 penalty's weight")
        return out

    @property
    def P(self):
        return self.P0 + self.balance_param * self.K

    # -- objective -------------------------------------------------------------

    def objective(self, M):
        """``tr(M P) - log det M + lam ||M||_{1,off}``; ``inf`` unless ``M``
        is positive definite."""
        d = self.n_features
        M = check_finite(M, "M", shape=(d, d))
        M = 0.5 * (M + M.T)
        logdet = _logdet_pd(M)
        if not np.isfinite(logdet):
            return np.inf
        off = np.sum(np.abs(M)) - np.sum(np.abs(np.diag(M)))
        return float(np.sum(M * self.P) - logdet + self.sparsity_param * off)

    # -- unboundedness -----------------------------------------------------------

    def ray_slope(self, v):
        """``lim F(I + t v v^T) / t = v^T P v + lam (||v||_1^2 - ||v||_2^2)``:
        a slope ``<= 0`` makes ``F`` unbounded below along the ray (``-log
        det`` decreases like ``-log t``)."""
        v = np.asarray(v, dtype=float)
        return float(v @ self.P @ v
                     + self.sparsity_param * (np.sum(np.abs(v)) ** 2 - v @ v))

    def unbounded_direction(self):
        """A unit ``v`` along which ``F(I + t v v^T) -> -inf``, or None.

        Tries each coordinate axis (``P_ii <= 0``) and the least
        eigenvector of ``P``; None means none of these is such a ray (the
        problem may still be unbounded: the exact path decides).
        """
        P = self.P
        i = int(np.argmin(np.diag(P)))
        if P[i, i] <= 0:
            v = np.zeros(self.n_features)
            v[i] = 1.0
            return v
        w, V = np.linalg.eigh(P)
        v = V[:, 0]
        if w[0] <= 0 and self.ray_slope(v) <= 0:
            return v
        return None

    def unbounded_message(self, v):
        """Why the problem has no minimum, naming the hyperparameters."""
        axis = np.flatnonzero(np.abs(v) == 1.0)
        where = (f"feature {int(axis[0])} (P_ii = {self.P[axis[0], axis[0]]:.3g} <= 0)"
                 if axis.size == 1 else
                 f"the least eigenvector of P (slope {self.ray_slope(v):.3g} <= 0)")
        return (f"balance_param: SDML's objective tr(M P) - log det M + lam "
                f"||M||_1,off is unbounded below along M = I + t v v^T, v = {where}: "
                f"the dissimilar pairs' term dominates P = prior^-1 + balance_param "
                f"* sum_p y_p phi_p phi_p^T. Decrease balance_param (here "
                f"{self.balance_param:g}) or increase sparsity_param.")

    # -- the certificate ---------------------------------------------------------

    def _in_box(self, W):
        """``W`` clipped into the dual box around ``P`` (diagonal ``P_ii``)."""
        P, lam = self.P, self.sparsity_param
        W = 0.5 * (W + W.T)
        Z = np.clip(W - P, -lam, lam)
        np.fill_diagonal(Z, 0.0)
        return P, Z

    def dual_value(self, W):
        """``d + log det W'`` for ``W'`` the dual-feasible point made from
        ``W`` (module docstring): clipped into the box and, when that is not
        PD, ``P + s (W' - P)`` for the largest ``s`` in ``{1, 1/2, ...}``
        found PD; ``-inf`` when none is."""
        P, Z = self._in_box(W)
        best = -np.inf
        s = 1.0
        for _ in range(30):
            logdet = _logdet_pd(P + s * Z)
            if np.isfinite(logdet):
                best = logdet
                break
            s *= 0.5
        if not np.isfinite(best):
            best = _logdet_pd(P)
        return self.n_features + best if np.isfinite(best) else -np.inf

    def dual_bound(self, M, W=None):
        """A lower bound on SDML's optimum from ``M^{-1}`` and, when given,
        the dual candidate ``W`` (the larger of the two); valid for any
        inputs, ``-inf`` when neither yields a PD point of the box."""
        bounds = [-np.inf]
        if W is not None:
            bounds.append(self.dual_value(check_finite(W, "W", shape=M.shape)))
        try:
            Minv = np.linalg.inv(0.5 * (M + M.T))
        except np.linalg.LinAlgError:
            Minv = None
        if Minv is not None and np.all(np.isfinite(Minv)):
            bounds.append(self.dual_value(Minv))
        return max(bounds)

    def certificate(self, M, W=None, *, solver, solver_version="", tolerances=None,
                    times=None):
        """The certificate of ``M``: the objective, the dual bound of
        :meth:`dual_bound` and the violation of ``M PD`` (``-min eig`` when
        it is not); judged at ``certificate_tolerance("sdml")``, the gap
        relative to ``max(1, |objective|)``."""
        d = self.n_features
        M = check_finite(M, "M", shape=(d, d))
        M = 0.5 * (M + M.T)
        tol_gap, tol_feas = certificate_tolerance("sdml")
        min_eig = float(np.linalg.eigvalsh(M)[0])
        obj = self.objective(M)
        bound = self.dual_bound(M, W) if np.isfinite(obj) else -np.inf
        return Certificate.from_bound(
            obj, bound, max_violation=max(0.0, -min_eig), min_eig=min_eig,
            solver=solver, solver_version=solver_version, tolerances=tolerances,
            times=times, tol_gap=tol_gap, tol_feas=tol_feas)

"""The Qwise vector model (Eq. 12-14) and its smoothed primal (Appendix A).

Notation of the paper's Appendix A.  ``omega = [w; b]`` (``e = d + 1``
entries), ``Psi_ij = Phi_ij o Phi_ij`` (``psi="squared"``: a diagonal PSD
metric, ``w, b >= 0``) or ``Psi_ij = Phi_ij`` (``psi="linear"``: one row of
``L`` per relative attribute, ``w`` and ``b`` free).  Every constraint of
Eq. 14 is one *term* ``r`` with a vector ``a_r``, a sign ``y_r``, an offset
``c_r`` and a weight ``C_r``:

=============================  ======================  =====  ============  ====
term                           ``a_r``                 y_r    c_r           C_r
=============================  ======================  =====  ============  ====
quadruplet ``q = (i,j,k,l)``   ``[Psi_kl - Psi_ij; 0]``  +1   ``delta_q``   C_q
pair ``(i, j)`` in S / D       ``[Psi_ij; -1]``        -1/+1  1             C_p
=============================  ======================  =====  ============  ====

(``y = +1`` for a dissimilar pair, as in Eq. 27.)  With the signed margin
``s_r = y_r a_r^T omega`` the hinge problem (Eq. 14 = Eq. 27 with hinges) is
``min 0.5 ||omega||^2 + sum_r C_r max(0, c_r - s_r)`` over ``omega`` in
``K`` (``R^e_+`` or ``R^e``), and the smoothed problem (Eq. 27 with the
losses Eq. 29-30) replaces the hinge by ``phi_h(c_r - s_r)`` with::

    phi_h(v) = 0                    v < -h
               (v + h)^2 / (4 h)    |v| <= h
               v                    v > h

and offsets ``c_r = 1`` for ``L_1^h`` (pairs and margin-1 quadruplets) and
``c_r = -h`` for ``L_0^h`` (margin-0 quadruplets): Eq. 29 is
``L_1^h(y, t) = phi_h(1 - y t)`` and Eq. 30 is ``L_0^h(y, t) = phi_h(-h - y t)``.

Dual bound (both losses).  For ``beta`` in ``[0, 1]^n`` (``beta_r`` is the
loss's slope, the multiplier divided by ``C_r``),

    D(beta) = sum_r C_r (beta_r c_r + h beta_r (1 - beta_r))
              - 0.5 || Pi_K( sum_r C_r beta_r y_r a_r ) ||^2

is a lower bound on the optimum (Fenchel duality; the ``h`` term is the
conjugate of ``phi_h`` and is absent for the hinge, ``h = 0``), with
equality at the optimal ``beta``; for the smoothed problem that is the slope
``phi_h'`` at the optimal ``omega``, so any ``omega`` yields its own bound.
"""

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from .._backend import device_of, is_dask
from .._settings import (
    _MAX_SCALE_EXP,
    _MIN_SCALE_EXP,
    H_RANGE,
)
from .._settings import (
    _QWISE_VECTOR_CHUNK as _CHUNK,
)
from .._tolerances import certificate_tolerance
from .._validation import check_finite, check_option, check_scalar
from ..result import Certificate

__all__ = ["QwiseVectorData", "PSI", "LOSSES", "psi_features"]

#: Readings of Eq. 13: the feature map and the cone of ``(w, b)``.
PSI = ("squared", "linear")

#: Losses of Eq. 27: the hinge (Eq. 14 exactly) or the smoothed
#: ``L_1^h`` / ``L_0^h`` of Eq. 29-30.
LOSSES = ("hinge", "huber")


def psi_features(X, i, j, psi):
    """``Psi_ij`` for index arrays ``i``, ``j`` (rows), shape (len(i), d).

    Raises a ValueError naming ``X`` when a feature overflows float64."""
    with np.errstate(over="ignore", invalid="ignore"):
        diff = X[i] - X[j]
        if psi == "squared":
            np.multiply(diff, diff, out=diff)
    if not np.all(np.isfinite(diff)):
        raise ValueError(
            f"X: the feature differences{' squared' if psi == 'squared' else ''} "
            f"(Psi, Eq. 13) overflow float64; the vector model is not invariant to "
            f"scaling X: standardise X.")
    return diff


def _quad_features(X, idx, psi):
    """``Psi_kl - Psi_ij`` of every quadruplet, built in blocks (peak memory
    a few blocks, not four (N, d) temporaries)."""
    Z = np.empty((idx.shape[0], X.shape[1]))
    for s in range(0, idx.shape[0], _CHUNK):
        b = idx[s:s + _CHUNK]
        Z[s:s + _CHUNK] = psi_features(X, b[:, 2], b[:, 3], psi)
        Z[s:s + _CHUNK] -= psi_features(X, b[:, 0], b[:, 1], psi)
    return Z


def phi_h(v, h, xp=np):
    """The smoothed hinge ``phi_h`` (module docstring), elementwise, in
    ``v``'s namespace ``xp``."""
    return xp.where(v > h, v, xp.where(v < -h, xp.zeros_like(v), (v + h) ** 2 / (4.0 * h)))


@dataclass(eq=False)
class QwiseVectorData:
    """Eq. 14 / Eq. 27 data: the terms of the module docstring.

    Build with :meth:`from_sets` (quadruplets and pairs over ``X``) or
    :meth:`from_features` (feature differences given directly).

    Attributes
    ----------
    psi : {"squared", "linear"}
    loss : {"hinge", "huber"}
    h : float
        Smoothing of the ``"huber"`` losses (Eq. 29-30).
    C_q, C_p : float
    Z : ndarray of shape (n_quadruplets, d)
        ``Psi_kl - Psi_ij`` per quadruplet.
    delta : ndarray of shape (n_quadruplets,)
        Margins (0 or 1 with ``loss="huber"``).
    P : ndarray of shape (n_pairs, d)
        ``Psi_ij`` per labelled pair (``n_pairs`` may be 0).
    y : ndarray of shape (n_pairs,)
        +1 dissimilar (set D), -1 similar (set S): Eq. 27's sign.

    A problem built by :meth:`from_sets` also keeps its samples and index
    sets (private), from which :meth:`on_device` builds the features on
    another array namespace.
    """

    psi: str
    loss: str
    h: float
    C_q: float
    C_p: float
    Z: np.ndarray
    delta: np.ndarray
    P: np.ndarray
    y: np.ndarray
    w_weight: object = 1.0  # a scalar, or one weight per feature (scaled twin)
    # (X, quadruplet indices, pair indices) of from_sets, for on_device;
    # None for features given directly and for the scaled twin
    _source: tuple = field(default=None, repr=False)

    def __post_init__(self):
        check_option(self.psi, "psi", PSI)
        check_option(self.loss, "loss", LOSSES)
        self.h = check_scalar(self.h, "h", low=H_RANGE[0], high=H_RANGE[1])
        self.C_q = check_scalar(self.C_q, "C_q", low=0.0)
        self.C_p = check_scalar(self.C_p, "C_p", low=0.0)
        self.Z = check_finite(self.Z, "quadruplets", ndim=2)
        d = self.Z.shape[1]
        self.delta = check_finite(self.delta, "delta", shape=(self.Z.shape[0],))
        self.P = check_finite(self.P, "pairs", shape=(None, d))
        self.y = check_finite(self.y, "pair_labels", shape=(self.P.shape[0],))
        if not np.all(np.isin(self.y, (-1.0, 1.0))):
            raise ValueError("pair_labels: must be +1 or -1.")
        if self.Z.shape[0] + self.P.shape[0] == 0:
            raise ValueError("quadruplets: no constraints (no quadruplets and no pairs).")
        if self.loss == "huber" and not np.all(np.isin(self.delta, (0.0, 1.0))):
            bad = sorted(set(self.delta[~np.isin(self.delta, (0.0, 1.0))].tolist()))[:3]
            raise ValueError(
                f"delta: the smoothed losses L_1^h and L_0^h (Eq. 29-30) are defined "
                f"for margins 0 and 1 only, got {bad}; use loss='hinge' for other "
                f"margins.")
        if self.psi == "squared" and np.any(self.delta < 0):
            raise ValueError("delta: margins of the squared (diagonal PSD) model must be "
                             ">= 0 (a negative margin is met by w = 0).")
        # offsets and weights of the terms (quadruplets first, then pairs)
        if self.loss == "huber":
            c_q = np.where(self.delta == 1.0, 1.0, -self.h)
        else:
            c_q = self.delta
        self.c = np.concatenate([c_q, np.ones(self.P.shape[0])])
        self.C = np.concatenate([np.full(self.Z.shape[0], self.C_q),
                                 np.full(self.P.shape[0], self.C_p)])
        # the regulariser 0.5 sum_j reg_j omega_j^2: 1 everywhere as printed;
        # the scaled twin (scaled()) weighs w_j by 1 / sigma_j^2
        self.reg = np.append(np.broadcast_to(np.asarray(self.w_weight, dtype=float),
                                             (self.Z.shape[1],)), 1.0)

    def __repr__(self):
        # sizes, never the arrays
        return (f"QwiseVectorData(psi={self.psi!r}, loss={self.loss!r}, h={self.h:g}, "
                f"C_q={self.C_q:g}, C_p={self.C_p:g}, n_features={self.n_features}, "
                f"n_quadruplets={self.n_quadruplets}, n_pairs={self.n_pairs})")

    # -- construction ----------------------------------------------------------

    @classmethod
    def from_sets(cls, quadruplets, pairs=None, *, psi="squared", loss="hinge",
                  h=0.05, C_q=1.0, C_p=1.0):
        """Build from :class:`~cvxmetric.Quadruplets` and optional
        :class:`~cvxmetric.LabeledPairs` over the same ``X``.

        Pair labels are the package's (+1 similar, -1 dissimilar); they are
        stored with Eq. 27's sign (``y = -label``).
        """
        check_option(psi, "psi", PSI)
        X = quadruplets.X
        Z = _quad_features(X, quadruplets.indices, psi)
        if pairs is None:
            P, y = np.zeros((0, X.shape[1])), np.zeros(0)
        else:
            if pairs.X is not X and not np.array_equal(pairs.X, X):
                raise ValueError("pairs: refer to a different X than quadruplets.")
            P = psi_features(X, pairs.indices[:, 0], pairs.indices[:, 1], psi)
            y = -pairs.labels.astype(float)
        source = (X, quadruplets.indices,
                  np.zeros((0, 2), int) if pairs is None else pairs.indices)
        return cls(psi=psi, loss=loss, h=h, C_q=C_q, C_p=C_p, Z=Z,
                   delta=quadruplets.delta, P=P, y=y, _source=source)

    @classmethod
    def from_features(cls, Z, delta=1.0, P=None, y=None, *, psi="squared",
                      loss="hinge", h=0.05, C_q=1.0, C_p=1.0):
        """Build from feature differences: ``Z`` (n_quadruplets, d) holds
        ``Psi_kl - Psi_ij``, ``P`` (n_pairs, d) ``Psi_ij`` and ``y`` the pair
        signs of Eq. 27 (+1 dissimilar); ``delta`` a scalar or one margin per
        row of ``Z``."""
        Z = check_finite(Z, "quadruplets", ndim=2)
        if (P is None) != (y is None):
            raise ValueError("pair_labels: P and y must be given together.")
        if P is None:
            P, y = np.zeros((0, Z.shape[1])), np.zeros(0)
        if np.ndim(delta) == 0:
            delta = np.full(Z.shape[0], check_scalar(delta, "delta"))
        return cls(psi=psi, loss=loss, h=h, C_q=C_q, C_p=C_p, Z=Z, delta=delta, P=P, y=y)

    def with_loss(self, loss, h=None):
        """The same terms under another loss (and smoothing)."""
        return dataclasses.replace(self, loss=loss, h=self.h if h is None else h)

    def feature_scale(self):
        """Per-feature powers of two ``sigma_j = 2^k_j``, ``2^k_j`` nearest
        the largest ``|Psi_j|`` of feature ``j`` (1 for a feature within a
        factor 4 of 1, or all zero).  Solvers lose the optimum on features
        far from unit scale (digits' pixels times 100: ``Psi`` up to 2.6e6;
        raw wine, whose features span 0.1 to 1 700: Clarabel stopped at a
        gap of 1.8 after 210 s); :meth:`scaled` gives the same problem in
        units where every feature is of order 1 (a Jacobi scaling).

        ``k_j`` is at least ``-64`` (tinier features leave ``w_j`` no effect
        on the margins above round-off; the twin's weight ``2^-2k_j`` stays
        finite).  A feature above ``2^64`` raises a ValueError naming
        ``X``: there the regulariser of ``w`` is below the objective's
        round-off (:data:`_MAX_SCALE_EXP`).

        Returns
        -------
        ndarray of shape (n_features,)
        """
        top = np.maximum(np.max(np.abs(self.Z), axis=0, initial=0.0),
                         np.max(np.abs(self.P), axis=0, initial=0.0))
        return self._scale_of(top)

    @staticmethod
    def _scale_of(top):
        """:meth:`feature_scale` from the largest ``|Psi_j|`` per feature."""
        k = np.zeros(top.shape, dtype=int)
        pos = top > 0.0
        k[pos] = np.round(np.log2(top[pos])).astype(int)
        if np.any(k > _MAX_SCALE_EXP):
            worst = float(top.max())
            raise ValueError(
                f"X: the features Psi (Eq. 13) reach {worst:.3g}, above 2^{_MAX_SCALE_EXP} "
                f"= {2.0 ** _MAX_SCALE_EXP:.3g}. The vector model is not invariant to "
                f"scaling X: its optimal w is of order 1 / |Psi| and the regulariser "
                f"0.5 ||w||^2 sits below 2^-{2 * _MAX_SCALE_EXP} of the losses, far "
                f"below their round-off, so round-off rather than the data decides "
                f"the solution; standardise X.")
        k = np.maximum(k, _MIN_SCALE_EXP)
        k[np.abs(k) <= 2] = 0
        return np.ldexp(1.0, k)

    def scaled(self, sigma):
        """The same problem over ``Psi_j / sigma_j`` and ``w~_j = sigma_j w_j``
        (``||w||^2 = sum_j w~_j^2 / sigma_j^2``): its optimum maps back by
        ``w = w~ / sigma``, with the same ``b``, losses and objective.
        ``sigma`` (a scalar or one per feature) of powers of two keeps the
        rescaling exact (``2^-64 <= sigma <= 2^64``: :meth:`feature_scale`)."""
        sigma = np.broadcast_to(np.asarray(sigma, dtype=float), (self.n_features,))
        return dataclasses.replace(self, Z=self.Z / sigma, P=self.P / sigma,
                                   w_weight=self.w_weight / sigma / sigma, _source=None)

    # -- where the arrays live (NumPy here; a device in QwiseVectorXPData) -----

    #: The namespace of the arrays (see :meth:`on_device`).
    xp = np

    def on_device(self, X, host_copy=None):
        """This problem with Algorithm 2's passes on the namespace and device
        of ``X`` (a PyTorch, CuPy or ``array-api-strict`` array holding the
        samples this problem was built from by :meth:`from_sets`, of any
        floating type: cast to float64 there); the features ``Psi`` are
        built there.  See :mod:`cvxmetric.qwise_vector._xp`.
        ``host_copy``: a NumPy copy of ``X`` the caller already made, used
        for the check that ``X`` holds the samples instead of a second copy
        (:func:`~cvxmetric.qwise._xp.device_samples`).

        Returns
        -------
        QwiseVectorXPData

        Raises
        ------
        ValueError
            When this problem was not built by :meth:`from_sets` (features
            given directly, or a scaled twin), or ``X`` is not its samples.
        TypeError
            For a ``dask.array`` (the vector model has no Dask back end).
        """
        if is_dask(X):
            raise TypeError("X: the Qwise vector model has no Dask back end; give a "
                            "NumPy array or an array of an array-API library (PyTorch, "
                            "CuPy), which ProjectedNewton keeps on its device "
                            "(docs/backends.md).")
        from ._xp import QwiseVectorXPData

        return QwiseVectorXPData.from_host(self, X, host_copy)

    def backend_info(self):
        """What a result reports of the back end: nothing for NumPy."""
        return {}

    def dev(self, a):
        """A host array where the terms are: ``a`` itself here."""
        return a

    def to_host(self, x):
        """An array of the terms' namespace on the host: ``x`` itself here."""
        return x

    # -- sizes -----------------------------------------------------------------

    @property
    def n_features(self):
        return int(self.Z.shape[1])

    @property
    def n_quadruplets(self):
        return int(self.Z.shape[0])

    @property
    def n_pairs(self):
        return int(self.P.shape[0])

    @property
    def nonneg(self):
        """Whether ``omega`` lives in ``R^e_+`` (``psi="squared"``)."""
        return self.psi == "squared"

    @property
    def smoothing(self):
        """``h`` of the loss in use (0 for the hinge)."""
        return self.h if self.loss == "huber" else 0.0

    # -- the operator of the terms ---------------------------------------------

    def margins(self, omega):
        """Signed margins ``s_r = y_r a_r^T omega`` of every term, where the
        terms are (``omega`` moved there: ``d + 1`` floats)."""
        omega = self.dev(omega)
        w, b = omega[:-1], omega[-1]
        return self.xp.concat([self.Z @ w, self.y * (self.P @ w - b)])

    def adjoint(self, v):
        """``sum_r v_r y_r a_r`` (shape (e,)): the adjoint of :meth:`margins`."""
        nq = self.n_quadruplets
        vq, vp = v[:nq], v[nq:] * self.y
        out = np.empty(self.n_features + 1)
        out[:-1] = self.Z.T @ vq + self.P.T @ vp
        out[-1] = -np.sum(vp)
        return out

    def rows(self, index):
        """The vectors ``y_r a_r`` of terms ``index`` (sorted), (len, e)."""
        nq = self.n_quadruplets
        iq, ip = index[index < nq], index[index >= nq] - nq
        out = np.zeros((len(iq) + len(ip), self.n_features + 1))
        out[:len(iq), :-1] = self.Z[iq]
        out[len(iq):, :-1] = self.P[ip] * self.y[ip, None]
        out[len(iq):, -1] = -self.y[ip]
        return out

    def project(self, omega):
        """Projection onto ``K`` (``R^e_+`` or ``R^e``)."""
        return np.maximum(omega, 0.0) if self.nonneg else omega

    # -- losses ----------------------------------------------------------------

    # the elementwise passes below are written in the terms' namespace
    # (``xp``): the same code on NumPy and on a device (QwiseVectorXPData)

    def losses(self, s):
        """Per-term loss (unweighted) at margins ``s``."""
        xp = self.xp
        u = self.c - s
        if self.loss == "huber":
            return phi_h(u, self.h, xp)
        return xp.where(u > 0, u, xp.zeros_like(u))

    def slopes(self, s):
        """Per-term slope ``beta_r`` in [0, 1] of the loss in ``u = c - s``
        (for the hinge, the subgradient 1 on ``u > 0``)."""
        xp = self.xp
        u = self.c - s
        if self.loss == "huber":
            return xp.clip((u + self.h) / (2.0 * self.h), 0.0, 1.0)
        return xp.astype(u > 0, xp.float64)

    def objective(self, omega, s=None):
        """Eq. 27 (hinge or smoothed) at ``omega``."""
        if s is None:
            s = self.margins(omega)
        return float(0.5 * (self.reg * omega) @ omega + self.C @ self.losses(s))

    def gradient(self, omega, s=None):
        """Eq. 31 (the smoothed loss): ``omega - sum_r C_r beta_r y_r a_r``."""
        if s is None:
            s = self.margins(omega)
        return self.reg * omega - self.adjoint(self.C * self.slopes(s))

    def quadratic_set(self, s):
        """Terms in the quadratic part of their loss (Eq. 32's sums): ints
        of the terms' namespace."""
        xp = self.xp
        return xp.nonzero(xp.abs(self.c - s) <= self.h)[0]

    def hessian(self, omega, s=None, free=None):
        """Eq. 32: ``I + sum_{r in Q} C_r / (2 h) a_r a_r^T`` (dense (e, e)),
        or its rows and columns ``free`` only (a projected Newton step needs
        no more: (|Q| x |free|) products instead of (|Q| x e))."""
        if s is None:
            s = self.margins(omega)
        Q = self.quadratic_set(s)
        A = self.rows(Q) * np.sqrt(self.C[Q] / (2.0 * self.h))[:, None]
        reg = self.reg
        if free is not None:
            A, reg = A[:, free], reg[free]
        H = A.T @ A
        H[np.diag_indices_from(H)] += reg
        return H

    # -- certificate -----------------------------------------------------------

    def dual_bound(self, beta):
        """``D(beta)`` of the module docstring, ``beta`` clipped to [0, 1]."""
        beta = self.xp.clip(self.dev(beta), 0.0, 1.0)
        hh = self.smoothing
        lin = float(self.C @ (beta * self.c + hh * beta * (1.0 - beta)))
        return lin - self.conjugate_reg(self.adjoint(self.C * beta))

    def conjugate_reg(self, v):
        """``max_{omega in K} v^T omega - 0.5 sum_j reg_j omega_j^2``
        ``= 0.5 sum_j Pi_K(v)_j^2 / reg_j``."""
        v = self.project(v)
        return 0.5 * float((v / self.reg) @ v)

    def certificate(self, omega, beta=None, *, solver, solver_version="",
                    tolerances=None, times=None):
        """Certificate of ``omega``: objective, dual bound, gap, violation.

        ``beta`` defaults to the slopes at ``omega`` (the smoothed problem's
        dual point); the hinge needs the multipliers of its solver.
        """
        s = self.margins(omega)
        obj = self.objective(omega, s)
        if beta is None:
            beta = self.slopes(s)
        bound = self.dual_bound(beta)
        viol = max(0.0, -float(np.min(omega))) if self.nonneg else 0.0
        min_eig = float(np.min(omega[:-1])) if self.nonneg else 0.0
        tol_gap, tol_feas = certificate_tolerance("qwise")
        return Certificate.from_bound(
            obj, bound, max_violation=viol, min_eig=min_eig, solver=solver,
            solver_version=solver_version, tolerances=tolerances, times=times,
            tol_gap=tol_gap, tol_feas=tol_feas)

    def point_info(self, omega):
        """What a result of ``omega = [w; b]`` reports beside ``M``: ``w``,
        ``b`` and the model (``psi``, ``loss``, ``h``)."""
        return {"w": omega[:-1].copy(), "b": float(omega[-1]), "psi": self.psi,
                "loss": self.loss, "h": self.h}

    def matrix(self, omega):
        """The Mahalanobis matrix of ``w``: ``diag(w)`` (squared) or
        ``w w^T`` (linear: ``M = L^T L`` of the one row ``w^T``)."""
        w = omega[:-1]
        return np.diag(w) if self.nonneg else np.outer(w, w)

    def smoothing_bounds(self):
        """``(low, high)`` with ``low <= F_h* - F* <= high`` (docs/qwise/vector.md):
        ``0 <= L_1^h - L_1 <= h / 4`` and ``-h <= L_0^h - L_0 <= 0`` per term."""
        xp, h = self.xp, self.h
        one = xp.concat([self.delta == 1.0, xp.ones((self.n_pairs,), dtype=xp.bool,
                                                     device=device_of(self.C))])
        zero = xp.zeros_like(self.C)
        return (-h * float(xp.sum(xp.where(one, zero, self.C))),
                0.25 * h * float(xp.sum(xp.where(one, self.C, zero))))

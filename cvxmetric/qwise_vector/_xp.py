"""The Qwise vector model's fast solver off NumPy: Algorithm 2's passes over
the terms on an array-API namespace (PyTorch, CuPy, ``array-api-strict``).

:meth:`QwiseVectorData.on_device <cvxmetric.qwise_vector.QwiseVectorData.on_device>`
gives a :class:`QwiseVectorXPData`: the same problem (validated on the host
by :meth:`~cvxmetric.qwise_vector.QwiseVectorData.from_sets`) whose
features ``Psi_kl - Psi_ij`` and ``Psi_ij``, margins, pair signs, offsets
and weights sit on the device of the samples given, the features built
there from the samples and the index sets.  What runs there: every pass
over the terms -- the margins ``s = y a^T omega`` of a point, the losses
and slopes, the objective, the adjoint ``sum_r v_r y_r a_r`` of the
gradient (Eq. 31) and of the dual bound, the Gram product of the terms in
the quadratic band (the Hessian, Eq. 32), the largest feature per column
of the Jacobi scaling -- in float64, so the certificate is the float64 one
computed where the data are.

What runs on the host: the point ``omega = [w; b]`` (``d + 1`` entries)
and everything of its size -- the free set, the ``(|F|, |F|)`` Newton
system (SciPy's Cholesky solve, as on NumPy), the projection, the line
search's bookkeeping and the assembly of the gap from scalars.  Every move
is counted by :class:`~cvxmetric._backend.Transfers`: per line-search
trial the point goes to the device (``d + 1`` floats); per iteration the
gradient's adjoint (``d + 1``) and the Newton system (``|F|^2``) come back,
and the free set goes out when some variable is bound.  Nothing of the
number of terms moves after construction.
"""

import dataclasses
from dataclasses import dataclass

import numpy as np

from .._settings import _QWISE_VECTOR_CHUNK as _CHUNK
from ..qwise._xp import _Device, _OnDevice, device_samples
from ._problem import QwiseVectorData

__all__ = ["QwiseVectorXPData"]


def _features(xp, X, i, j, psi):
    """``Psi_ij`` of the device index arrays ``i``, ``j`` on the device."""
    diff = xp.take(X, i, axis=0) - xp.take(X, j, axis=0)
    return diff * diff if psi == "squared" else diff


@dataclass(eq=False)
class QwiseVectorXPData(_OnDevice, QwiseVectorData):
    """:class:`~cvxmetric.qwise_vector.QwiseVectorData` with its terms on a
    namespace (see the module docstring).

    ``Z``, ``P``, ``delta``, ``y`` and the derived ``c``, ``C`` are device
    arrays; ``reg`` and ``w_weight`` (``d + 1`` and ``d`` entries) stay on
    the host with the point.  Stages (:meth:`with_loss`) and the scaled
    twin (:meth:`scaled`) share one :class:`~cvxmetric._backend.Transfers`.
    """

    where: _Device = None

    def __post_init__(self):
        # validated on the host (from_host); the offsets and weights of the
        # terms where the terms are, the regulariser with the point
        xp, device = self.where.xp, self.where.device
        nq, n_p = int(self.Z.shape[0]), int(self.P.shape[0])
        one = xp.ones((nq,), dtype=xp.float64, device=device)
        c_q = xp.where(self.delta == 1.0, one, -self.h * one) if self.loss == "huber" \
            else self.delta
        self.c = xp.concat([c_q, xp.ones((n_p,), dtype=xp.float64, device=device)])
        self.C = xp.concat([xp.full((nq,), self.C_q, dtype=xp.float64, device=device),
                            xp.full((n_p,), self.C_p, dtype=xp.float64, device=device)])
        self.reg = np.append(np.broadcast_to(np.asarray(self.w_weight, dtype=float),
                                             (self.Z.shape[1],)), 1.0)

    @classmethod
    def from_host(cls, host, X, host_copy=None):
        """``host`` (NumPy, built by :meth:`QwiseVectorData.from_sets`) with
        its terms on the namespace and device of ``X``, whose values must be
        the samples of ``host`` (any floating type; cast to float64 there;
        ``host_copy``: see :func:`~cvxmetric.qwise._xp.device_samples`)."""
        if host._source is None:
            raise ValueError(
                "X: on_device builds the features Psi (Eq. 13) from the samples and "
                "index sets of QwiseVectorData.from_sets; this problem has none "
                "(built from_features, or a scaled twin).")
        Xh, quads, pairs = host._source
        where, X = device_samples(X, Xh, host_copy)
        xp = where.xp

        # copies: a library sharing the host buffer (torch on the CPU)
        # refuses read-only arrays such as a Quadruplets' indices
        def ints(a):
            return where.transfers.to_device(np.array(a, dtype=np.int64), xp,
                                             where.device)

        q, p = ints(quads), ints(pairs)
        n_q = int(q.shape[0])

        def block(s):
            b = q[s:min(s + _CHUNK, n_q), :]
            return (_features(xp, X, b[:, 2], b[:, 3], host.psi)
                    - _features(xp, X, b[:, 0], b[:, 1], host.psi))

        # in blocks of rows: a block's four gathers, not four (N, d) ones
        parts = [block(s) for s in range(0, n_q, _CHUNK)]
        d = X.shape[1]
        Z = xp.concat(parts) if parts else xp.zeros((0, d), dtype=xp.float64,
                                                    device=where.device)
        # no overflow check: the host's features passed from_sets' (the same
        # IEEE operations on the same values)
        P = _features(xp, X, p[:, 0], p[:, 1], host.psi)
        return cls(psi=host.psi, loss=host.loss, h=host.h, C_q=host.C_q, C_p=host.C_p,
                   Z=Z, delta=where.dev(np.array(host.delta)), P=P,
                   y=where.dev(np.array(host.y)),
                   w_weight=host.w_weight, _source=host._source, where=where)

    # -- where the arrays are --------------------------------------------------
    # (xp, transfers and backend_info: OnDevice, from ``where``)

    def __repr__(self):
        return (super().__repr__()[:-1]
                + f", backend={getattr(self.xp, '__name__', str(self.xp))!r})")

    # -- twins -------------------------------------------------------------------

    def feature_scale(self):
        """:meth:`QwiseVectorData.feature_scale`: the largest ``|Psi_j|``
        per feature on the device (``d`` floats to the host)."""
        xp = self.xp
        top = [xp.max(xp.abs(A), axis=0) for A in (self.Z, self.P) if A.shape[0]]
        top = top[0] if len(top) == 1 else xp.maximum(top[0], top[1])
        return self._scale_of(self.to_host(top))

    def scaled(self, sigma):
        """:meth:`QwiseVectorData.scaled` on the device (``sigma`` moved)."""
        sigma = np.broadcast_to(np.asarray(sigma, dtype=float), (self.n_features,))
        s = self.dev(np.array(sigma))  # a writable copy (see from_host)
        return dataclasses.replace(self, Z=self.Z / s, P=self.P / s,
                                   w_weight=self.w_weight / sigma / sigma, _source=None)

    # -- the operator of the terms -----------------------------------------------

    def adjoint(self, v):
        """``sum_r v_r y_r a_r`` of the device vector ``v``: the pass on the
        device, its ``d + 1`` entries to the host."""
        xp = self.xp
        nq = self.n_quadruplets
        vq, vp = v[:nq], v[nq:] * self.y
        out = xp.concat([self.Z.T @ vq + self.P.T @ vp, xp.reshape(-xp.sum(vp), (1,))])
        return self.to_host(out)

    def hessian(self, omega, s=None, free=None):
        """Eq. 32 (rows and columns ``free``, host ints): the Gram product of
        the terms in the quadratic band on the device, the ``(|F|, |F|)``
        result to the host (the free set to the device unless it is all)."""
        xp = self.xp
        if s is None:
            s = self.margins(omega)
        Q = self.quadratic_set(s)
        nq = self.n_quadruplets
        iq, ip = Q[Q < nq], Q[Q >= nq] - nq
        zero = xp.zeros((int(iq.shape[0]), 1), dtype=xp.float64, device=self.where.device)
        yp = xp.take(self.y, ip)[:, None]
        A = xp.concat([xp.concat([xp.take(self.Z, iq, axis=0), zero], axis=1),
                       xp.concat([xp.take(self.P, ip, axis=0) * yp, -yp], axis=1)])
        A = A * xp.sqrt(xp.take(self.C, Q) / (2.0 * self.h))[:, None]
        reg = self.reg
        if free is not None:
            reg = reg[free]
            if len(free) < A.shape[1]:
                A = xp.take(A, self.where.transfers.to_device(
                    np.asarray(free, dtype=np.int64), xp, self.where.device), axis=1)
        H = self.to_host(A.T @ A)
        H[np.diag_indices_from(H)] += reg
        return H

    def rows(self, index):
        raise NotImplementedError("QwiseVectorXPData forms the Hessian on the device "
                                  "(hessian).")

    # -- losses ------------------------------------------------------------------

    def objective(self, omega, s=None):
        """Eq. 27: the regulariser on the host, the losses' sum on the device."""
        omega = self.to_host(omega)
        if s is None:
            s = self.margins(omega)
        return float(0.5 * (self.reg * omega) @ omega) + float(self.C @ self.losses(s))

    # -- certificate -------------------------------------------------------------

    def conjugate_reg(self, v):
        return super().conjugate_reg(self.to_host(v))

    def certificate(self, omega, beta=None, **kwargs):
        """The float64 certificate: its passes on the device, ``omega`` on
        the host."""
        return super().certificate(self.to_host(omega), beta, **kwargs)

"""The Qwise problem in canonical form, shared by the exact and fast solvers.

Eq. 11 of Law, Thome and Cord (2016) is Eq. 8 plus hinge losses on similar
and dissimilar pairs.  By the reductions of Eq. 7 (similar ``(i, j)`` ->
``(i, j, i, i)`` with margin ``-u``; dissimilar ``(i, j)`` -> ``(i, i, i, j)``
with margin ``l``) every term is a weighted quadruplet hinge, so both
equations are the single problem

    minimise_{M PSD}  f(M) = <R, M> + (mu / 2) ||M||_F^2
                             + sum_q c_q [delta_q + <M, C_near(q) - C_far(q)>]_+

with ``c_q = C_q`` for quadruplets and ``c_q = C_p`` for pairs, and the
regulariser ``Omega`` written as ``<R, M> + (mu/2)||M||_F^2``:

====================  ===========  =====
``regularizer``        ``R``        ``mu``
====================  ===========  =====
``"trace"``            ``I``        0
``"frobenius"``        ``0``        1
``"similar"``          ``A_S``      0
====================  ===========  =====

Its Lagrangian dual, for multipliers ``0 <= alpha_q <= c_q`` and
``S(alpha) = sum_q alpha_q (C_far(q) - C_near(q))``, is

    g(alpha) = delta^T alpha + min_{M PSD} <R - S(alpha), M> + (mu/2)||M||_F^2,

i.e. ``delta^T alpha - ||Pi_+(S(alpha) - R)||_F^2 / (2 mu)`` when ``mu > 0``
and ``delta^T alpha`` subject to ``S(alpha) <= R`` (Loewner order) when
``mu = 0``.  Any ``alpha`` in the box gives a lower bound (after scaling it
into the feasible set when ``mu = 0``); the certificate of every solver uses
this bound.
"""

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from .._backend import is_dask
from .._data import Samples
from .._linalg import PairOperator, eigh_psd, project_psd, signed_factors
from .._settings import _MAX_EXP, _RESTRICTED_PHI, C_RANGE
from .._tolerances import certificate_tolerance
from .._validation import (
    check_finite,
    check_instance,
    check_option,
    check_psd_matrix,
    check_scalar,
)
from ..constraints import LabeledPairs, Quadruplets
from ..result import Certificate

_GAP, _FEAS = certificate_tolerance("qwise")

__all__ = ["QwiseData", "Scaling", "REGULARIZERS", "C_RANGE", "loewner_scale"]

REGULARIZERS = ("trace", "frobenius", "similar")

#: Data, margins and regulariser within this many powers of two of 1 are
#: solved as given (scaling them would only change round-off).
_MILD = {"s": 5, "t": 10, "rho": 10}


def _exponent(x):
    """``k`` with ``2^k`` the power of two nearest to ``x > 0`` (0 for x = 0)."""
    x = float(x)
    if not x > 0 or not np.isfinite(x):
        return 0
    m, e = np.frexp(x)  # x = m 2^e, 0.5 <= m < 1
    return int(e) if m >= np.sqrt(0.5) else int(e) - 1


@dataclass(frozen=True)
class Scaling:
    """Powers of two relating a Qwise problem to its scale-free twin.

    Eq. 8 / Eq. 11 are not invariant to the scale of ``X``: the margins fix
    a scale.  With ``X = s X_n`` (up to a shift, which distances ignore),
    margins ``delta, u, l = t (delta_n, u_n, l_n)`` and ``R = rho R_n``,
    substituting ``M = (t / s^2) M_n`` gives

    * ``"trace"`` / ``"similar"``: ``f(M) = (rho t / s^2) f_n(M_n)`` with
      hinge weights ``C_n = C s^2 / rho`` (``rho = 1`` for the trace);
    * ``"frobenius"``: ``f(M) = (t^2 / s^4) f_n(M_n)`` with
      ``C_n = C s^4 / t``.

    So the optimum transforms as ``M* = (t / s^2) M_n*`` and
    ``f* = phi f_n*``; multipliers as ``alpha = (phi / t) alpha_n``.  In
    particular ``X -> s X`` together with ``delta, u, l -> s^2 (delta, u,
    l)`` and ``C -> C / s^2`` leaves ``M*`` unchanged (trace, Frobenius; the
    ``"similar"`` regulariser with its default ``A_S`` needs ``C``
    unchanged and scales ``f*`` by ``s^2``).  The scale-free weight
    ``C_n`` is the one number the scalings cannot remove.

    Attributes
    ----------
    ks, kt, kr : int
        ``s = 2^ks``, ``t = 2^kt``, ``rho = 2^kr`` (powers of two, so that
        scaling is exact in floating point).
    frobenius : bool
        Whether the regulariser is quadratic.
    """

    ks: int = 0
    kt: int = 0
    kr: int = 0
    frobenius: bool = False

    @property
    def identity(self):
        return self.ks == 0 and self.kt == 0 and self.kr == 0

    @property
    def m_exp(self):
        """``M = 2^m_exp M_n``."""
        return self.kt - 2 * self.ks

    @property
    def f_exp(self):
        """``f = 2^f_exp f_n``."""
        if self.frobenius:
            return 2 * self.kt - 4 * self.ks
        return self.kr + self.kt - 2 * self.ks

    @property
    def alpha_exp(self):
        """``alpha = 2^alpha_exp alpha_n`` (and ``C = 2^alpha_exp C_n``)."""
        return self.f_exp - self.kt

    def as_dict(self):
        return {"s": float(np.ldexp(1.0, self.ks)), "t": float(np.ldexp(1.0, self.kt)),
                "rho": float(np.ldexp(1.0, self.kr))}

    # -- user units <-> scale-free units --------------------------------------

    def init_in(self, init):
        """A warm start (``SolverResult`` in user units) in scale-free units."""
        if init is None or self.identity:
            return init
        info = dict(init.info)
        if info.get("alpha") is not None:
            info["alpha"] = np.ldexp(np.asarray(info["alpha"], float), -self.alpha_exp)
        return dataclasses.replace(init, M=np.ldexp(np.asarray(init.M, float), -self.m_exp),
                                   info=info)

    def result_out(self, result):
        """A result of the scale-free problem in user units:
        :meth:`solution_out` of its ``M``, certificate and multipliers
        (which raises where those overflow), and ``info["scaling"]``
        (:meth:`as_dict`)."""
        if self.identity:
            return result
        info = dict(result.info)
        M, cert, alpha = self.solution_out(result.M, result.certificate,
                                           info.get("alpha"))
        if alpha is not None:
            info["alpha"] = alpha
        info["scaling"] = self.as_dict()
        return dataclasses.replace(result, M=M, objective=cert.objective,
                                   certificate=cert, info=info)

    def solution_out(self, M, certificate, alpha=None):
        """A point of the scale-free problem, its certificate there and its
        multipliers (``None``: none), in user units.

        ``M``, the objective, the dual bound, the gap, ``min_eig`` and the
        multipliers are mapped exactly (powers of two); ``rel_gap`` and
        ``max_violation`` stay those of the scale-free problem, where the
        ``max(1, |f|)`` floor of the relative gap means "the cost of a
        unit metric on unit data with unit margins".

        Returns
        -------
        tuple
            ``(M, certificate, alpha)``.

        Raises
        ------
        ValueError
            When the optimum is outside the floating-point range in user
            units.
        """
        if self.identity:
            return M, certificate, alpha
        c = certificate
        M = np.ldexp(M, self.m_exp)
        f = float(np.ldexp(c.objective, self.f_exp))
        if not (np.all(np.isfinite(M)) and np.isfinite(f)):
            raise ValueError(
                "X: the optimal metric or objective overflows in the units of X "
                f"and delta (M scales by 2^{self.m_exp}, the objective by "
                f"2^{self.f_exp}); rescale X or the margins.")
        cert = dataclasses.replace(
            c, objective=f, dual_bound=float(np.ldexp(c.dual_bound, self.f_exp)),
            gap=float(np.ldexp(c.gap, self.f_exp)) if np.isfinite(c.gap) else c.gap,
            min_eig=float(np.ldexp(c.min_eig, self.m_exp)))
        if alpha is not None:
            alpha = np.ldexp(alpha, self.alpha_exp)
        return M, cert, alpha


def _data_exponent(X, pairs):
    """Exponent of the data scale ``s``: the root mean square length of the
    difference vectors of ``pairs``, computed without overflow or underflow
    (``X`` is first divided by a power of two of ``max |X|``).

    Returns ``(ks, Xc)`` with ``Xc = (X - shift) / 2^ks`` centred."""
    top = float(np.max(np.abs(X)))
    ka = _exponent(top)
    Xp = np.ldexp(X, -ka)
    Xp = Xp - Xp.mean(axis=0)
    used = pairs[pairs[:, 0] != pairs[:, 1]]
    if len(used):
        sample = used[:: max(1, len(used) // 20000)]
        D = Xp[sample[:, 0]] - Xp[sample[:, 1]]
        rms = float(np.sqrt(np.mean(np.einsum("pd,pd->p", D, D))))
    else:
        rms = 0.0
    kd = _exponent(rms) if rms > 0 else 0
    return ka + kd, np.ldexp(Xp, -kd)


def _check_weights(scaling, C_q, C_p):
    """Refuse hinge weights whose scale-free value lies outside
    :data:`C_RANGE`, naming the argument that puts it there."""
    lo, hi = C_RANGE
    shift = -scaling.alpha_exp  # log2 of C_n / C
    # what moves log2(C_n) away from 0, besides C itself
    parts = {"X": (4 if scaling.frobenius else 2) * scaling.ks}
    if scaling.frobenius:
        parts["delta"] = -scaling.kt
    else:
        parts["A_S"] = -scaling.kr
    for name, C in (("C_q", C_q), ("C_p", C_p)):
        if C == 0:
            continue
        with np.errstate(over="ignore", under="ignore"):
            Cn = float(np.ldexp(C, shift))
        if lo <= Cn <= hi:
            continue
        culprit = max(parts, key=lambda k: abs(parts[k]))
        if abs(np.log2(C)) >= abs(parts[culprit]):
            culprit = name
        s = np.ldexp(1.0, scaling.ks)
        t = np.ldexp(1.0, scaling.kt)
        raise ValueError(
            f"{culprit}: the hinge weight {name} = {C:.3g} is {Cn:.3g} in "
            f"scale-free units (data scale {s:.3g}, margin scale {t:.3g}; "
            f"{name} * s^2 / rho for a linear regulariser, {name} * s^4 / t "
            f"for 'frobenius'), outside [{lo:g}, {hi:g}]: "
            + ("the regulariser is then below the round-off of the loss "
               "(a hard-margin problem)" if Cn > hi else
               "every hinge then weighs less than the floating-point "
               "resolution of the regulariser")
            + ". Rescale X or the margins, or choose another weight.")


@dataclass(eq=False)
class QwiseData(Samples):
    """Eq. 8 / Eq. 11 data in canonical form.

    Build with :meth:`from_sets`.  Attributes ending in ``_q`` have one entry
    per canonical constraint (quadruplets first, then similar pairs, then
    dissimilar pairs).

    Attributes
    ----------
    X : ndarray of shape (n, d)
    quadruplets : Quadruplets
    pairs : LabeledPairs or None
    regularizer : str
    C_q, C_p, u, l : float
    R : ndarray of shape (d, d)
        Linear part of the regulariser.
    mu : float
        Quadratic part of the regulariser.
    op : PairOperator
        Over the distinct pairs used by the constraints.
    near_q, far_q : ndarray of int, shape (n_constraints,)
        Index into ``op``'s pairs of the pair meant to be closer / farther.
    delta_q, c_q : ndarray of shape (n_constraints,)
        Margins and hinge weights.
    n_quadruplets : int
        The first ``n_quadruplets`` canonical constraints are quadruplets.
    """

    X: np.ndarray
    quadruplets: Quadruplets
    pairs: object
    regularizer: str
    C_q: float
    C_p: float
    u: float
    l: float
    R: np.ndarray
    mu: float
    op: PairOperator
    near_q: np.ndarray
    far_q: np.ndarray
    delta_q: np.ndarray
    c_q: np.ndarray
    n_quadruplets: int
    scaling: Scaling = Scaling()
    scale_free: bool = False
    q_weights: np.ndarray = None

    @classmethod
    def from_sets(
        cls,
        quadruplets,
        pairs=None,
        *,
        regularizer="trace",
        C_q=1.0,
        C_p=1.0,
        u=None,
        l=None,
        A_S=None,
        weights=None,
    ):
        """Validate and canonicalise.

        Parameters
        ----------
        quadruplets : Quadruplets
        pairs : LabeledPairs, optional
            Similar (+1) / dissimilar (-1) pairs over the same ``X``.
        regularizer : {"trace", "frobenius", "similar"}
        C_q, C_p : float, >= 0
        u, l : float, optional
            Bounds for similar / dissimilar pair distances, ``u <= l``.
            Required when ``pairs`` is given.
        A_S : ndarray of shape (d, d), optional
            PSD matrix of the ``"similar"`` regulariser.  Default: the sum of
            ``C_ij`` over the similar pairs when ``pairs`` has any, otherwise
            over the distinct closer pairs ``(i, j)`` of the quadruplets.
        weights : ndarray of shape (n_quadruplets,), optional
            Per-quadruplet factors of ``C_q`` (finite, >= 0): quadruplet
            ``q``'s hinge weighs ``C_q * weights[q]``.  Default: all 1, the
            paper's Eq. 8.  (The structural model's closed form, whose
            hinges weigh ``1 / (|X| P_x N_x)``, is solved this way.)
        """
        check_instance(quadruplets, Quadruplets, "quadruplets")
        check_option(regularizer, "regularizer", REGULARIZERS)
        C_q = check_scalar(C_q, "C_q", low=0)
        C_p = check_scalar(C_p, "C_p", low=0)
        X = quadruplets.X
        n_quads = len(quadruplets.indices)
        weights = _check_quadruplet_weights(weights, n_quads)
        u, l = _check_pair_bounds(pairs, X, u, l)
        near, far, delta, weight = _canonical_hinges(quadruplets, pairs, C_q, C_p,
                                                     weights, u, l)
        # distinct unordered pairs; a distance does not depend on the order
        uniq, inv = distinct_pairs(np.vstack([near, far]), X.shape[0])
        # the data scale s = 2^ks; Xn = (X - shift) / s (see Scaling)
        ks, Xn = _checked_data_exponent(X, uniq)
        kt = _exponent(float(np.max(np.abs(delta))) if len(delta) else 0.0)
        op = PairOperator(X, uniq)
        R, mu = _regularizer_terms(regularizer, Xn, ks, uniq, quadruplets, pairs, A_S)
        top_q = C_q * (1.0 if weights is None else float(np.max(weights, initial=0.0)))
        scaling = _problem_scaling(regularizer, ks, kt, R, top_q,
                                   C_p if pairs is not None else 0.0)
        N = len(near)
        return cls(
            X=X,
            quadruplets=quadruplets,
            pairs=pairs,
            regularizer=regularizer,
            C_q=C_q,
            C_p=C_p,
            u=u,
            l=l,
            R=R,
            mu=mu,
            op=op,
            near_q=inv[:N],
            far_q=inv[N:],
            delta_q=delta,
            c_q=weight,
            n_quadruplets=n_quads,
            scaling=scaling,
            q_weights=weights,
        )

    def normalized(self):
        """The scale-free twin of this problem and its :class:`Scaling`.

        Data and margins of order 1 (within a few powers of two) are solved
        as given: the twin is ``self``.  Otherwise ``X``, the margins and
        ``A_S`` are divided by powers of two (exactly) and the weights
        adjusted so that the optimum maps back by
        :meth:`Scaling.result_out`.
        """
        sc = self.scaling
        if self.scale_free or sc.identity:
            return self, sc
        _, Xn = _data_exponent(self.X, np.column_stack([self.op.i, self.op.j]))
        q = self.quadruplets
        quads = Quadruplets(Xn, q.indices, np.ldexp(q.delta, -sc.kt))
        pairs = None
        if self.pairs is not None:
            pairs = LabeledPairs(Xn, self.pairs.indices, self.pairs.labels)

        def weight(C):
            return float(np.ldexp(C, -sc.alpha_exp))

        def margin(v):
            return None if v is None else float(np.ldexp(v, -sc.kt))

        out = QwiseData.from_sets(
            quads, pairs, regularizer=self.regularizer, C_q=weight(self.C_q),
            C_p=weight(self.C_p), u=margin(self.u), l=margin(self.l),
            A_S=np.ldexp(self.R, -sc.kr) if self.regularizer == "similar" else None,
            weights=self.q_weights)
        out.scaling = Scaling(frobenius=sc.frobenius)
        out.scale_free = True
        return out, sc

    def restrict(self, index, *, dtype=np.float64):
        """The same problem over the canonical constraints ``index`` only.

        The regulariser (``R``, ``mu``) is kept as is; the pair operator is
        rebuilt over the pairs the kept constraints use.  Used by the
        working-set fast solver: a constraint left out is one whose
        multiplier is fixed at 0.

        Parameters
        ----------
        index : ndarray of int, shape (k,)
            Sorted, distinct indices into ``range(n_constraints)``.
        dtype : {numpy.float64, numpy.float32}
            Precision of the restricted pair operator's products (see
            :class:`~cvxmetric._linalg.PairOperator`).

        Returns
        -------
        QwiseData
            ``quadruplets`` and ``pairs`` still refer to the full sets; only
            the canonical arrays are restricted.
        """
        index = np.asarray(index)
        near, far = self.near_q[index], self.far_q[index]
        # the pairs in use and their new numbers, by a count over the pair
        # indices (linear; a sort of the 2k indices took 0.35 s a round at
        # 10^6 constraints)
        both = np.concatenate([near, far])
        mark = np.zeros(self.op.n_pairs, dtype=bool)
        mark[both] = True
        used = np.flatnonzero(mark)
        inv = (np.cumsum(mark) - 1)[both]
        X, op = self._restricted_operator(used, dtype)
        k = len(index)
        return QwiseData(
            X=X, quadruplets=self.quadruplets, pairs=self.pairs,
            regularizer=self.regularizer, C_q=self.C_q, C_p=self.C_p, u=self.u,
            l=self.l, R=self.R, mu=self.mu, op=op,
            near_q=inv[:k], far_q=inv[k:], delta_q=self.delta_q[index],
            c_q=self.c_q[index],
            n_quadruplets=int(np.sum(index < self.n_quadruplets)),
            scaling=self.scaling, scale_free=self.scale_free,
        )

    def _restricted_operator(self, used, dtype):
        """``(X, op)`` of :meth:`restrict`: the samples and the pair
        operator over the pairs ``used`` (their difference vectors stored
        while they fit)."""
        pairs = np.column_stack([self.op.i[used], self.op.j[used]])
        store = len(pairs) * self.n_features <= _RESTRICTED_PHI
        return self.X, PairOperator(self.op.X, pairs, materialize=True if store else None,
                                    centered=True, dtype=dtype)

    # -- shape helpers -------------------------------------------------------

    @property
    def n_constraints(self):
        return self.delta_q.shape[0]

    # -- where the arrays live (NumPy here; a device in QwiseXPData) ----------

    #: The namespace of the arrays (see :meth:`on_device`).
    xp = np

    #: Whether the fast solver iterates only on host restrictions of this
    #: problem (:meth:`restrict`), its full passes running where the data
    #: are: True for the Dask data (:mod:`cvxmetric.qwise._dask`).
    host_iterations = False

    def on_device(self, X, host_copy=None):
        """This problem with the fast solver's passes on the namespace and
        device of ``X`` (a PyTorch, CuPy or ``array-api-strict`` array
        holding this problem's samples ``self.X``, of any floating type:
        cast to float64 there); see :mod:`cvxmetric.qwise._xp`.
        ``host_copy``: a NumPy copy of ``X`` the caller already made, used
        for the check that ``X`` holds the samples instead of a second copy
        (:func:`~cvxmetric.qwise._xp.device_samples`).

        A ``dask.array`` gives a :class:`~cvxmetric.qwise._dask.QwiseDaskData`
        instead: the full passes as Dask tasks over chunks of pairs, the
        iterations on the host (see :mod:`cvxmetric.qwise._dask`); its check
        runs on the cluster, and ``host_copy`` is not read.

        Returns
        -------
        QwiseXPData or QwiseDaskData
        """
        if is_dask(X):
            from ._dask import QwiseDaskData

            return QwiseDaskData.from_host(self, X)
        from ._xp import QwiseXPData

        return QwiseXPData.from_host(self, X, host_copy)

    def host(self):
        """This problem in NumPy: ``self``."""
        return self

    def dev(self, a):
        """A host array where the data are: ``a`` itself here."""
        return a

    def to_host(self, x):
        """An array of the data's namespace on the host: ``x`` itself here."""
        return x

    def backend_info(self):
        """What a result reports of the back end: nothing for NumPy."""
        return {}

    def nonzero(self, x):
        """Indices of the nonzero entries of the 1-d ``x``."""
        return np.flatnonzero(x)

    def project_psd(self, A, return_factor=False):
        """:func:`~cvxmetric._linalg.project_psd` where the data are."""
        return project_psd(A, return_factor)

    def _eigvalsh(self, A, symmetrize=False):
        """Eigenvalues (ascending) of the symmetric ``A`` (of its symmetric
        part with ``symmetrize``) where the data are."""
        return eigh_psd(A)[0] if symmetrize else np.linalg.eigvalsh(A)

    def _signed_factors(self, M):
        """:func:`~cvxmetric._linalg.signed_factors` where the data are."""
        return signed_factors(M)

    def sweep_operator(self):
        """The pair operator of the working set's full passes over every
        constraint: float32 products (the margins there are read only
        against a band of 0.1 of the margin scale), nothing stored."""
        return PairOperator(self.op.X, np.column_stack([self.op.i, self.op.j]),
                            materialize=False, centered=True, dtype=np.float32)

    # -- the scale of the objective -----------------------------------------

    @functools.cached_property
    def gap_floor(self):
        """Floor of the relative duality gap: the margins' own scale
        ``S = sum_q c_q |delta_q|`` when ``f(0) = sum_q c_q [delta_q]_+`` is
        positive and ``S < 1``, else 1.

        ``f(0)`` bounds the optimum above, so when the margins are small an
        absolute gap of 1e-6 (the usual ``max(1, |f|)`` floor) could exceed
        the optimum itself; the gap is then judged on the scale of the
        margins.  Not on ``f(0)`` alone: with mixed signs (margins ``1e-116``
        and ``-0.06``) ``f(0)`` is below anything float64 resolves in the
        hinge arguments, and no solver could certify against it.  ``f(0) =
        0`` means ``M = 0`` is optimal with value 0.
        """
        xp = self.xp
        F = float(self.c_q @ xp.maximum(self.delta_q, 0.0))
        S = float(self.c_q @ xp.abs(self.delta_q))
        return min(S, 1.0) if F > 0.0 else 1.0

    def relative_gap(self, objective, bound):
        """``|objective - bound| / max(gap_floor, |objective|)`` (``inf``
        when the bound is not finite)."""
        gap = objective - bound
        if not np.isfinite(gap):
            return np.inf
        return abs(gap) / max(self.gap_floor, abs(objective))

    # -- primal --------------------------------------------------------------

    def margins(self, M=None, *, dist=None, G=None):
        """Hinge arguments ``delta_q + D_M(near) - D_M(far)`` per constraint."""
        if dist is None:
            dist = self.op.sqdist(M, G=G)
        return self.delta_q + dist[self.near_q] - dist[self.far_q]

    def regularizer_value(self, M):
        """``Omega(M) = <R, M> + (mu/2) ||M||_F^2``."""
        val = float(self.xp.sum(self.R * M))
        if self.mu:
            val += 0.5 * self.mu * float(self.xp.sum(M * M))
        return val

    def objective(self, M, *, dist=None, G=None, arg=None):
        """Eq. 11 objective at ``M`` in the paper's units (``arg``: the
        margins at ``M`` when already known)."""
        if arg is None:
            arg = self.margins(M, dist=dist, G=G)
        M = M if M is not None else G @ G.T
        return self.regularizer_value(M) + float(self.c_q @ self.xp.maximum(arg, 0.0))

    def dual_pair_weights(self, alpha, index=None):
        """Per-pair weights of ``S(alpha) = sum_q alpha_q (C_far - C_near)``.

        With ``index``, ``alpha`` holds the multipliers of the constraints
        ``index`` only (the others are 0).
        """
        P = self.op.n_pairs
        far, near = ((self.far_q, self.near_q) if index is None
                     else (self.far_q[index], self.near_q[index]))
        return np.bincount(far, alpha, P) - np.bincount(near, alpha, P)

    def S_of(self, alpha, index=None, *, single=False):
        """``S(alpha)`` as a symmetric (d, d) matrix (``index`` as in
        :meth:`dual_pair_weights``, ``single`` as in
        :meth:`PairOperator.gram`); never one matrix per constraint."""
        S = self.op.gram(self.dual_pair_weights(alpha, index), single=single)
        return 0.5 * (S + S.T)

    def a_of(self, dist):
        """``a_q(M) = D_M(far) - D_M(near)`` from the pair distances."""
        return dist[self.far_q] - dist[self.near_q]

    # -- dual ----------------------------------------------------------------

    def dual_bound(self, alpha, upper=None, *, S=None):
        """A valid lower bound on the optimal value from multipliers ``alpha``.

        ``alpha`` is clipped to ``[0, c]``.  With ``mu > 0`` the bound is
        ``g(alpha)`` itself.  With ``mu = 0``, ``g(alpha)`` is finite only if
        ``S(alpha) <= R``; two repairs, both valid, and the larger is taken:

        * scaling: ``g(alpha / t) = delta^T alpha / t`` with ``t`` the
          smallest ``t >= 1`` making ``S(alpha)/t <= R``;
        * restriction: the loss is >= 0, so any optimum has
          ``<R, M*> <= upper`` for ``upper`` the objective of any PSD point;
          minimising the Lagrangian over that set instead of the whole cone
          gives ``delta^T alpha - upper (t - 1)``.

        ``S``, when given, is ``S(alpha)`` already computed (``alpha`` must
        then lie in the box).
        """
        xp = self.xp
        if S is None:
            alpha = xp.clip(alpha, 0.0, self.c_q)
            S = self.S_of(alpha)
        lin = float(self.delta_q @ alpha)
        if self.mu > 0:
            w = self._eigvalsh(S - self.R, symmetrize=True)
            return lin - float(xp.sum(xp.maximum(w, 0.0) ** 2)) / (2 * self.mu)
        t = self._loewner_scale(S)
        if not np.isfinite(t):
            return -np.inf
        bound = lin / t
        if upper is not None and np.isfinite(upper):
            bound = max(bound, lin - max(upper, 0.0) * (t - 1.0))
        return bound

    def best_dual_bound(self, alpha, M, upper=None, *, arg=None, S=None):
        """The better of the bounds from ``alpha`` and from ``alpha`` made
        consistent with ``M`` (``c`` where the hinge is active at ``M``, 0
        where it is inactive, ``alpha`` on the margin).

        Both are valid; the second repairs multipliers that a first-order
        method moves slowly (e.g. a margin of 1e-5 drives its multiplier at
        that rate).  ``arg`` (the margins at ``M``) and ``S`` (``S(alpha)``,
        ``alpha`` in the box) save recomputing them.
        """
        xp = self.xp
        if S is None:
            alpha = xp.clip(alpha, 0.0, self.c_q)
            S = self.S_of(alpha)
        bound = self.dual_bound(alpha, upper, S=S)
        if arg is None:
            arg = self.margins(M)
        tol = 1e-9 * max(1.0, float(xp.max(xp.abs(self.delta_q))))
        alpha2 = xp.where(arg > tol, self.c_q, xp.where(arg < -tol, 0.0, alpha))
        changed = self.nonzero(alpha2 != alpha)
        if changed.shape[0]:
            # S is linear in alpha: update it with the changed multipliers only
            S2 = S + self.S_of(alpha2[changed] - alpha[changed], changed)
            bound = max(bound, self.dual_bound(alpha2, upper, S=S2))
        return bound

    def _loewner_scale(self, S):
        """Smallest ``t >= 1`` with ``S / t <= R``; ``inf`` if none exists."""
        if self.regularizer == "trace":
            return max(1.0, float(self._eigvalsh(S)[-1]))
        return loewner_scale(S, self.R)

    def certificate(
        self, M, alpha, *, solver, solver_version="", tolerances=None, times=None,
        tol_gap=_GAP, tol_feas=_FEAS,
    ):
        """Certificate of ``M`` with the dual bound from ``alpha``."""
        M = 0.5 * (M + M.T)
        min_eig = float(self._eigvalsh(M)[0])
        # one pass over the pairs per signed part of M (the margins are the
        # costly part of a certificate at 10^6 constraints): the margins at
        # M serve the objective and the bound, those of its PSD part the
        # upper bound
        G, G_neg = self._signed_factors(M)
        dist_psd = self.op.sqdist(G=G)
        dist = dist_psd - self.op.sqdist(G=G_neg) if G_neg.shape[1] else dist_psd
        arg = self.margins(dist=dist)
        obj = self.objective(M, arg=arg)
        # an upper bound on the optimum from a PSD point (for dual_bound)
        upper = obj if min_eig >= 0 else self.objective(
            G @ G.T, arg=self.margins(dist=dist_psd))
        bound = (self.best_dual_bound(alpha, M, upper, arg=arg) if alpha is not None
                 else -np.inf)
        cert = Certificate.from_bound(
            obj, bound, max_violation=max(0.0, -min_eig), min_eig=min_eig,
            solver=solver, solver_version=solver_version, tolerances=tolerances,
            times=times, tol_gap=tol_gap, tol_feas=tol_feas)
        # the gap is judged on the scale of this problem's objective (see
        # gap_floor), not against an absolute 1
        if np.isfinite(cert.rel_gap):
            cert.rel_gap = self.relative_gap(obj, bound)
            cert.scale = max(self.gap_floor, abs(obj))
        return cert


def loewner_scale(S, R):
    """Smallest ``t >= 1`` with ``S / t <= R`` (Loewner order) for a PSD
    ``R``; ``inf`` if none exists.

    The dual bound of a linear regulariser ``<R, M>`` scales its multipliers
    by ``1 / t`` into the feasible set (:meth:`QwiseData.dual_bound`; LMNN's
    certificate uses it with ``R = (1 - mu) A_T``).
    """
    tol = 1e-12 * max(1.0, np.abs(R).max())
    # a generalised eigenproblem needs R definite; a numerically singular
    # R passes Cholesky with a tiny pivot and returns garbage, so test first
    if np.linalg.eigvalsh(R)[0] > 1e3 * tol:
        top = float(scipy.linalg.eigh(S, R, eigvals_only=True)[-1])
        return max(1.0, top)
    # singular R: bisection on t with an exact PSD test up to round-off

    def ok(t):
        return np.linalg.eigvalsh(R - S / t)[0] >= -tol

    if ok(1.0):
        return 1.0
    hi = 2.0
    while not ok(hi):
        hi *= 2.0
        if hi > 1e12:
            return np.inf
    lo = hi / 2.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def _direction_weights(op, U, chunk=65_536):
    """``sum_p (phi_p^T u_k)^2`` for each column ``u_k`` of ``U`` (d, r),
    from the difference vectors themselves (never the cancelling
    sample-space form), one block of pairs at a time."""
    w = np.zeros(U.shape[1])
    for s in range(0, op.n_pairs, chunk):
        Z = op._diffs(np.arange(s, min(s + chunk, op.n_pairs))) @ U  # (block, r)
        w += np.einsum("pr,pr->r", Z, Z)
    return w


# -- the pieces of QwiseData.from_sets ----------------------------------------


def distinct_pairs(pairs, n):
    """The distinct unordered pairs of ``pairs`` (k, 2) over ``n`` samples.

    A distance does not depend on the order of a pair.  One int64 key per
    pair (lexicographic, as ``np.unique(axis=0)`` would order them, and 16x
    faster at 4 * 10^6 pairs).

    Returns
    -------
    uniq : ndarray of int, shape (n_distinct, 2)
        ``(min, max)`` of each distinct pair, sorted.
    inv : ndarray of int, shape (k,)
        Index into ``uniq`` of each row of ``pairs``.
    """
    pairs = np.asarray(pairs)
    lo = np.minimum(pairs[:, 0], pairs[:, 1]).astype(np.int64)
    hi = np.maximum(pairs[:, 0], pairs[:, 1]).astype(np.int64)
    keys, inv = np.unique(lo * n + hi, return_inverse=True)
    uniq = np.column_stack([keys // n, keys % n]).astype(np.intp)
    return uniq, inv.reshape(-1)


def _check_quadruplet_weights(weights, n_quads):
    """``weights`` of :meth:`QwiseData.from_sets`, checked (``None`` kept)."""
    if weights is None:
        return None
    weights = check_finite(weights, "weights", shape=(n_quads,))
    if np.any(weights < 0):
        raise ValueError("weights: must be >= 0.")
    return weights


def _check_pair_bounds(pairs, X, u, l):
    """``pairs`` (over ``X``) and their bounds ``u <= l``, checked.

    Both bounds are required with pairs; without pairs a bound given is
    still checked (and kept)."""
    if pairs is None:
        u = None if u is None else check_scalar(u, "u")
        l = None if l is None else check_scalar(l, "l")
        return u, l
    check_instance(pairs, LabeledPairs, "pairs")
    if pairs.X is not X and not np.array_equal(pairs.X, X):
        raise ValueError("pairs: refer to a different X than quadruplets.")
    if u is None or l is None:
        raise ValueError("u, l: both bounds are required with pairs.")
    u = check_scalar(u, "u")
    l = check_scalar(l, "l")
    if u > l:
        raise ValueError(f"u, l: need u <= l, got u={u} > l={l}.")
    return u, l


def _canonical_hinges(quadruplets, pairs, C_q, C_p, weights, u, l):
    """The canonical constraints: quadruplets, then (Eq. 7 reductions)
    similar pairs, then dissimilar pairs.

    Returns
    -------
    near, far : ndarray of int, shape (n_constraints, 2)
        The sample pairs meant to be closer / farther.
    delta, weight : ndarray of shape (n_constraints,)
        Margins and hinge weights.
    """
    quads = quadruplets.indices
    near, far = [quads[:, :2]], [quads[:, 2:]]
    delta = [quadruplets.delta]
    weight = [C_q * (np.ones(len(quads)) if weights is None else weights)]
    if pairs is not None:
        X = quadruplets.X
        # Eq. 7 reductions, kept in the order similar then dissimilar
        for lab in (1, -1):
            sub = pairs.indices[pairs.labels == lab]
            red = LabeledPairs(X, sub, np.full(len(sub), lab)).to_quadruplets(u, l)
            near.append(red.indices[:, :2])
            far.append(red.indices[:, 2:])
            delta.append(red.delta)
            weight.append(np.full(len(sub), C_p))
    return (np.vstack(near), np.vstack(far), np.concatenate(delta),
            np.concatenate(weight))


def _checked_data_exponent(X, uniq):
    """:func:`_data_exponent`, refusing data whose squared distances would
    leave the floating-point range (naming ``X``)."""
    ks, Xn = _data_exponent(X, uniq)
    if abs(ks) > _MAX_EXP:
        raise ValueError(
            f"X: the difference vectors have length about 2^{ks} "
            f"(~{np.ldexp(1.0, ks):.3g}); squared distances would leave the "
            "floating-point range. Rescale X (distances scale like X^2 and "
            "the metric like 1 / X^2).")
    return ks, Xn


def _regularizer_terms(regularizer, Xn, ks, uniq, quadruplets, pairs, A_S):
    """``(R, mu)`` of the regulariser (table in the module docstring);
    ``A_S`` of ``"similar"`` defaulted and checked."""
    d = Xn.shape[1]
    if regularizer == "frobenius":
        return np.zeros((d, d)), 1.0
    if regularizer == "trace":
        return np.eye(d), 0.0
    if A_S is None:
        A_S = _default_A_S(Xn, ks, quadruplets, pairs)
    A_S = check_psd_matrix(A_S, "A_S", d)
    _check_definite_on_span(A_S, PairOperator(Xn, uniq, centered=True))
    return A_S, 0.0


def _default_A_S(Xn, ks, quadruplets, pairs):
    """The default ``A_S``: the sum of the outer products of the similar
    pairs' difference vectors (the quadruplets' distinct closer pairs when
    there are no similar pairs), from the scale-free ``Xn`` (``X / 2^ks``)."""
    if pairs is not None and np.any(pairs.labels == 1):
        S = pairs.similar
    else:
        S = np.unique(np.sort(quadruplets.indices[:, :2], axis=1), axis=0)
    S = S[S[:, 0] != S[:, 1]]
    Phi = Xn[S[:, 0]] - Xn[S[:, 1]]  # (n_similar, d), scale-free
    A_S = np.ldexp(Phi.T @ Phi, 2 * ks)
    if not np.all(np.isfinite(A_S)):
        raise ValueError(
            "X: the default A_S (sum of the similar pairs' outer "
            f"products, of order 2^{2 * ks}) overflows; rescale X.")
    return A_S


def _check_definite_on_span(A_S, opn):
    """Refuse an ``A_S`` not definite on the span of the difference vectors
    of ``opn`` (the constraints' pairs, scale-free).

    A direction in null(A_S) costs nothing: if it also changes some
    constraint's distances, a hinge that improves along it is driven to
    zero by an ever larger M and the minimum need not be attained.
    Directions orthogonal to all of the differences are harmless.  Judged in
    scale-free units (the test is scale invariant).
    """
    span = opn.gram(np.ones(opn.n_pairs))
    _, U_span = np.linalg.eigh(0.5 * (span + span.T))
    # the weight of each eigendirection, recomputed from the differences
    # themselves: eigh of the Gram matrix resolves eigenvalues only to
    # ~1e-16 of the largest, which cannot tell exact rank deficiency
    # (round-off) from nearly collinear features (1e-7 noise: weight
    # ~1e-14); ||Phi u||^2 can, to ~1e-32
    w_span = _direction_weights(opn, U_span)
    # a direction with any weight above round-off is in the span (nearly
    # collinear features included: the minimum is then attained only by a
    # huge M, which no solver resolves)
    U = U_span[:, w_span > 1e-20 * max(w_span.max(), 1e-300)]
    lam = np.linalg.eigvalsh(U.T @ A_S @ U) if U.shape[1] else np.ones(1)
    top = max(float(np.linalg.eigvalsh(A_S)[-1]), 1e-300)
    if lam[0] <= 1e-10 * top:
        raise ValueError(
            "A_S: the 'similar' regulariser needs A_S positive definite "
            "on the span of the constraints' difference vectors; its "
            f"smallest eigenvalue there is {lam[0]:.3g}. That direction "
            "is unpenalised and the minimum may not be attained. "
            "Provide more similar pairs, pass A_S explicitly, or use "
            "regularizer='trace'.")


def _problem_scaling(regularizer, ks, kt, R, top_q, top_p):
    """The :class:`Scaling` of a problem with data exponent ``ks``, margin
    exponent ``kt`` and linear regulariser ``R``, after refusing hinge
    weights (largest ``top_q``, ``top_p``) outside :data:`C_RANGE`; the
    identity for data within :data:`_MILD` of unit scale."""
    frobenius = regularizer == "frobenius"
    kr = _exponent(float(np.max(np.abs(R)))) if regularizer == "similar" else 0
    scaling = Scaling(ks, kt, kr, frobenius)
    _check_weights(scaling, top_q, top_p)
    if abs(ks) <= _MILD["s"] and abs(kt) <= _MILD["t"] and abs(kr) <= _MILD["rho"]:
        return Scaling(frobenius=frobenius)
    return scaling

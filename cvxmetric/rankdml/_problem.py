"""The RankDML problem (Lee, Jin, Jain 2008) in canonical form.

One triplet ``t = (q, r, i)`` -- a query, an item relevant to it and an item
irrelevant to it -- asks that the irrelevant item be farther from the query
than the relevant one by a unit margin (Eq. 7, 9 and 11 of the paper)::

    d(q, i; A) - d(q, r; A) >= 1 - eps_t,   eps_t >= 0.

With ``K_t = C_qi - C_qr`` (``C_ij = phi_ij phi_ij^T``) the slack is the hinge
``eps_t = [1 - <A, K_t>]_+`` and every problem of the family is

    minimise_{A in F}  f(A) = sum_t [1 - <A, K_t>]_+ + (lam / 2) Reg(A)

===============  ==============================================  =========================
``regularizer``  ``Reg(A)`` (default ``form="printed"``)          feasible set ``F``
===============  ==============================================  =========================
``"frobenius"``  ``||A||_F^2``  (Eq. 7)                           ``A PSD``
``"burg"``       ``||A P||_F^2 - 2 logdet(A P) - d`` (Eq. 8-9)    ``A PSD, tr(A) = tau``
``"logdet"``     ``tr(A P) - logdet(A P) - d``                     ``A PSD, tr(A) = tau``
``"laplacian"``  ``sum_i (a_i - mean(a))^2`` (Eq. 11)              ``a >= 0``
===============  ==============================================  =========================

with ``P = A0hat^{-1}`` and ``A0hat = A0 tau / tr(A0)``.  ``diagonal=True``
restricts ``A = diag(a)`` (``"frobenius"``: ``a >= 0``, Reg = ``||a||^2``;
``"laplacian"`` is diagonal only).  The documented variants (``form``):

* ``"burg"``, ``form="spectral"``: first term ``tr((A P)^2) = ||W A W||_F^2``
  instead of the printed ``||A P||_F^2 = tr(A P (A P)^T)``; the two coincide
  when ``A`` and ``A0`` commute (in particular for an isotropic ``A0``,
  where the printed form is solved by the spectral closed form);
* ``"laplacian"``, ``form="trace_fixed"``: Eq. 11 with ``sum(a) = tau``
  added (the Remark's normalised reading; default ``tau = d``).

**The trace fix.**  The paper normalises ``A0hat = A0 tr(A) / tr(A0)``, which
makes the Burg / LogDet regulariser scale-invariant (``Reg(cA) = Reg(A)``,
see :func:`paper_divergence`) and the problem non-convex: scaling ``A`` up
drives every hinge to zero at no cost, so the infimum is approached by ever
larger ``A`` and need not be attained.  The convex, well-posed reading fixes
the scale, ``tr(A) = tau`` (default ``tau = tr(A0)``), so that ``A0hat`` is
the constant ``A0 tau / tr(A0)`` and the paper's normalisation holds at the
solution.  Eq. 11 as printed has no normalisation (``Reg(ca) = c^2 Reg(a)``):
it is an ordinary convex QP, bounded below by 0, whose minimum is attained
(Frank-Wolfe: a quadratic bounded below on a polyhedron attains its
infimum; here in the slack form).  The unit margin fixes its scale:
``a = 0`` costs ``N``, and a flat ``a = c 1`` (free of regulariser) can meet
only the triplets the Euclidean metric already orders.

**Whitening.**  With ``W = A0hat^{-1/2}`` (symmetric) and ``B = W A W``,
``tr((A P)^2) = ||B||_F^2`` and ``logdet(A P) = logdet(B)``: the LogDet term
and Burg's spectral form are spectral functions of the symmetric ``B``.
Burg's printed first term ``||A P||_F^2 = tr(A P^2 A)`` is not; its primal
map is computed by Newton's method on ``A`` (:meth:`RankData.
_burg_printed_map`) unless ``A0`` is isotropic (then the forms coincide).

**Dual.**  For multipliers ``alpha in [0, 1]^N`` and
``S(alpha) = sum_t alpha_t K_t`` (a weighted graph-Laplacian product, never
one matrix per triplet), weak duality gives, for any ``alpha`` and any
multiplier ``nu`` of the trace constraint,

    f* >= g(alpha, nu) = 1^T alpha - nu tau
                         + min_{A in F'} (lam/2) Reg(A) - <S(alpha) - nu I, A>

where ``F'`` is ``F`` without the trace constraint (``A PSD`` / ``a >= 0``).
The inner minimum has a closed form (a spectral map, :meth:`RankData.primal_map`)
and is evaluated exactly for the ``nu`` that makes the minimiser's trace equal
``tau`` (a one-dimensional monotone root); at that ``nu`` the minimiser is
also the minimiser over ``F`` and ``g(alpha) = max_nu g(alpha, nu)`` is the
Lagrangian dual function of the hinge multipliers alone.  It is smooth
because every ``Reg`` above is strongly convex on ``F``; its gradient is the
vector of hinge arguments ``1 - <A*(alpha), K_t>``.  For Burg's printed
form the inner minimum is computed by Newton's method and bounded below
rigorously by ``L(A, nu) - ||grad_A L(A, nu)||^2 / (2 m)``, ``m = lam /
lambda_max(A0hat)^2`` the strong convexity modulus of ``(lam/2)||A P||^2``.
Every certificate of the family uses this bound.

**The printed Laplacian's dual.**  Without the trace constraint the
regulariser is flat along ``1`` and the inner minimum over ``a >= 0`` is
finite only when ``1^T S(alpha) = sum_t alpha_t (1^T k_t) <= 0``.  The bound
first moves ``alpha`` into that half-space (:meth:`RankData.dual_feasible`:
the Euclidean projection within the box; an optimal ``alpha`` is there
already, since summing the stationarity condition
``lam L a - K^T alpha - mu = 0`` gives ``1^T K^T alpha = -1^T mu <= 0``),
then uses weak duality of the inner QP: for any ``mu >= 0`` with
``mean(S + mu) <= 0``,
``min_{a >= 0} (lam/2) a^T L a - S^T a >= -||L (S + mu)||^2 / (2 lam)``,
tight at ``mu = max(-S - lam m, 0)`` with ``m`` the mean of the minimiser
``a = max(m + S / lam, 0)`` (a sort-based root).  The dual is then not
smooth everywhere (the minimiser is not unique when ``1^T S = 0``); the
interior point method solves this problem.
"""

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from .._linalg import PairOperator, eigh_psd
from .._linesearch import backtracking
from .._settings import _K_BLOCK, _ROOT_RTOL, MAX_DIFF_LENGTH, TAU_RANGE
from .._tolerances import certificate_tolerance
from .._validation import check_instance, check_option, check_psd_matrix, check_scalar
from ..constraints import Triplets
from ..result import Certificate

_GAP, _FEAS = certificate_tolerance("rankdml")
from .._variable import FullOrDiagonal

__all__ = [
    "RankData",
    "REGULARIZERS",
    "TRACE_FIXED",
    "FORMS",
    "burg_divergence",
    "logdet_divergence",
    "paper_divergence",
    "project_capped_simplex",
]

REGULARIZERS = ("frobenius", "burg", "logdet", "laplacian")

#: Regularisers whose scale can be fixed by ``tr(A) = tau`` (always for
#: ``"burg"`` / ``"logdet"``; the Laplacian with ``form="trace_fixed"`` only).
TRACE_FIXED = ("burg", "logdet", "laplacian")

#: ``form`` of each regulariser: the first is the default, the paper's
#: printed equation; the others are documented variants.
FORMS = {
    "frobenius": ("printed",),
    "burg": ("printed", "spectral"),
    "logdet": ("printed",),
    "laplacian": ("printed", "trace_fixed"),
}


# ---------------------------------------------------------------------------
# Divergences as printed (used by the tests and the docs)
# ---------------------------------------------------------------------------


def _sym_sqrt_inv(A0):
    w, U = np.linalg.eigh(0.5 * (A0 + A0.T))
    return (U / np.sqrt(w)) @ U.T


def burg_divergence(A, A0, form="printed"):
    """Burg's divergence of Eq. 8 between ``A`` and ``A0``.

    ``form="printed"`` (default): as the paper prints it,
    ``tr(A A0^{-1} (A A0^{-1})^T) - 2 logdet(A A0^{-1}) - d``, i.e.
    ``||A A0^{-1}||_F^2 - 2 logdet(A A0^{-1}) - d``.

    ``form="spectral"``: ``tr((A A0^{-1})^2) - 2 logdet(A A0^{-1}) - d``,
    a spectral function of ``B = W A W`` (``W = A0^{-1/2}``):
    ``tr((A A0^{-1})^2) = ||B||_F^2``; invariant under congruence
    ``(A, A0) -> (G A G^T, G A0 G^T)``.

    The two coincide when ``A`` and ``A0`` commute (``A0 = c I``, or both
    diagonal as in the paper's Remark).  ``logdet(A A0^{-1}) = logdet(B)``
    is never taken of the non-symmetric product.  ``+inf`` when ``A`` is
    not positive definite.
    """
    check_option(form, "form", FORMS["burg"])
    W = _sym_sqrt_inv(A0)
    b = np.linalg.eigvalsh(W @ A @ W)
    if b[0] <= 0:
        return np.inf
    if form == "printed":
        AP = np.linalg.solve(A0, np.asarray(A, float).T).T  # A A0^{-1}
        first = float(np.sum(AP * AP))
    else:
        first = float(np.sum(b * b))
    return float(first - 2.0 * np.sum(np.log(b)) - len(b))


def logdet_divergence(A, A0):
    """The usual LogDet divergence ``tr(A A0^{-1}) - logdet(A A0^{-1}) - d``."""
    W = _sym_sqrt_inv(A0)
    b = np.linalg.eigvalsh(W @ A @ W)
    if b[0] <= 0:
        return np.inf
    return float(np.sum(b) - np.sum(np.log(b)) - len(b))


def paper_divergence(A, A0, kind="burg", form="printed"):
    """The paper's normalised regulariser ``D(A, A0hat(A))``,
    ``A0hat(A) = A0 tr(A) / tr(A0)`` -- without the trace fix.

    It is invariant to ``A -> c A`` (``c > 0``), in either form of Burg's
    divergence: that is why the paper's Eq. 9 is not convex and why
    :class:`RankData` fixes ``tr(A) = tau``.
    """
    check_option(kind, "kind", ("burg", "logdet"))
    A0hat = A0 * np.trace(A) / np.trace(A0)
    if kind == "burg":
        return burg_divergence(A, A0hat, form)
    return logdet_divergence(A, A0hat)


# ---------------------------------------------------------------------------
# One-dimensional pieces of the primal maps
# ---------------------------------------------------------------------------


def project_capped_simplex(v, tau):
    """Euclidean projection of ``v`` onto ``{a >= 0, sum(a) = tau}``.

    Returns ``(a, theta)`` with ``a = max(v - theta, 0)``: the sort-based
    exact algorithm (Held, Wolfe, Crowder 1974).
    """
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - tau
    k = np.arange(1, len(v) + 1)
    # the first entry always qualifies (u_1 - (u_1 - tau) = tau > 0); with
    # entries far above tau round-off can hide that, so keep at least it
    hits = np.flatnonzero(u - css / k > 0)
    rho = int(hits[-1]) if len(hits) else 0
    theta = css[rho] / (rho + 1)
    return np.maximum(v - theta, 0.0), float(theta)


def _flat_root(v):
    """The smallest ``m >= 0`` with ``mean(max(m + v, 0)) = m``.

    The mean of the minimiser ``a = max(m + v, 0)`` of
    ``(1/2) a^T L a - v^T a`` over ``a >= 0`` (``L = I - 11^T / d``),
    for ``sum(v) <= 0``.  ``phi(m) = mean(max(m + v, 0)) - m`` is
    non-increasing with ``phi(0) >= 0``; on the support of the ``k``
    largest entries its root is ``sum_k / (d - k)``: sort-based and exact.
    """
    v = np.asarray(v, dtype=float)
    d = len(v)
    u = np.sort(v)[::-1]
    if not u[0] > 0:
        return 0.0
    css = np.cumsum(u)
    k = np.arange(1, d)
    m = css[:-1] / (d - k)
    ok = (u[k - 1] + m > 0) & (u[k] + m <= 0)
    hits = np.flatnonzero(ok)
    if len(hits):
        return float(m[hits[0]])
    # round-off at a kink, or sum(v) = 0 (full support, a ray of roots):
    # the candidate with the smallest residual, the smallest one on ties
    cand = np.concatenate([m, [max(-u[-1], 0.0)]])
    cand = np.maximum(cand, 0.0)
    res = np.abs(np.maximum(cand[:, None] + v[None, :], 0.0).mean(axis=1) - cand)
    best = np.flatnonzero(res <= res.min())
    return float(np.min(cand[best]))


def _burg_spectral(z, lam):
    """Minimiser ``b`` of ``(lam/2)(b^2 - 2 log b) - z b`` over ``b > 0``.

    ``lam (b - 1/b) = z``, i.e. ``b = (z + sqrt(z^2 + 4 lam^2)) / (2 lam)``,
    written without cancellation for ``z << 0``.
    """
    r = np.hypot(z, 2.0 * lam)  # no overflow of z * z
    with np.errstate(divide="ignore", over="ignore"):
        # both branches are evaluated; the one not taken may divide by 0
        return np.where(z >= 0, (z + r) / (2.0 * lam), 2.0 * lam / (r - z))


def _burg_spectral_deriv(z, lam):
    """``db/dz = b / (lam (b + 1/b)) = b^2 / (lam (b^2 + 1))``."""
    b = _burg_spectral(z, lam)
    # b^2 / (b^2 + 1) written so that neither form overflows
    big = b > 1.0
    inv = np.where(big, 1.0 / np.where(big, b, 1.0), 0.0)
    return np.where(big, 1.0 / (lam * (1.0 + inv * inv)), b * b / (lam * (b * b + 1.0)))


def _divided_differences(z, b, lam):
    """First divided differences of the Burg spectral map ``b = f(z)``:
    ``(b_i - b_j) / (z_i - z_j)``, and ``f'(z_i)`` where ``z_i = z_j``."""
    dz = z[:, None] - z[None, :]
    db = b[:, None] - b[None, :]
    same = np.abs(dz) <= 1e-12 * max(1.0, float(np.max(np.abs(z))))
    fd = _burg_spectral_deriv(z, lam)
    return np.where(same, 0.5 * (fd[:, None] + fd[None, :]),
                    db / np.where(same, 1.0, dz))


def _decreasing_root(phi, target, x0, step0):
    """Solve ``phi(x) = target`` for a strictly decreasing ``phi``.

    ``phi(x) -> (value, derivative, payload)``.  Safeguarded Newton: the
    Newton step is taken when it stays inside the current bracket, bisection
    otherwise; while no bracket is known, Newton steps (they point the right
    way for a decreasing function) or, without a usable derivative, a
    geometrically growing step.

    Returns ``(x, payload)`` of the point with the smallest residual.
    """
    lo, hi = -np.inf, np.inf  # phi(lo) > target > phi(hi)
    x = float(x0)
    step = max(abs(float(step0)), 1e-300)
    best = None
    for _ in range(300):
        val, der, payload = phi(x)
        res = val - target
        if best is None or abs(res) < abs(best[0]):
            best = (res, x, payload)
        if abs(res) <= _ROOT_RTOL * abs(target):
            break
        if res > 0:
            lo = x
        else:
            hi = x
        newton = x - res / der if der < 0 else np.nan
        if np.isfinite(lo) and np.isfinite(hi):
            if hi - lo <= 4e-16 * max(abs(lo), abs(hi), 1e-300):
                break
            x = newton if lo < newton < hi else 0.5 * (lo + hi)
        elif np.isfinite(newton) and newton != x:
            x = newton
        else:
            x = x + (step if res > 0 else -step)
            step *= 2.0
    return best[1], best[2]


def _check_tau(tau):
    tau = check_scalar(tau, "tau", low=0.0, low_inclusive=False)
    if not TAU_RANGE[0] <= tau <= TAU_RANGE[1]:
        raise ValueError(
            f"tau: {tau:.3g} is outside [{TAU_RANGE[0]:.0e}, {TAU_RANGE[1]:.0e}]; "
            f"the trace fixes the scale of A against the unit margin -- rescale "
            f"X instead (distances scale like X^2, so tau c is tau on X / sqrt(c)).")
    return tau


def _check_scale(op):
    """Refuse data whose squared distances the solvers cannot represent."""
    X = op.X
    # centred coordinates bound every difference: |x_i - x_j| <= 2 max |x|
    big = float(np.max(np.abs(X))) if X.size else 0.0
    if not big <= 0.5 * MAX_DIFF_LENGTH:
        raise ValueError(
            f"X: coordinates (after centring) reach {big:.3g}; RankDML compares "
            f"squared distances with the unit margin of Eq. 7 / 9 / 11, and at "
            f"this scale they leave the floating-point range. Rescale X (the "
            f"optimum is not scale invariant: the margin fixes a scale).")


def _check_options(regularizer, form, lam, diagonal, A0, tau):
    """Validate the options of :meth:`RankData.from_triplets` against each
    other; returns ``(lam, diagonal)`` as float and bool."""
    check_option(regularizer, "regularizer", REGULARIZERS)
    if form not in FORMS[regularizer]:
        variants = {f"{r}: {', '.join(repr(f) for f in fs)}"
                    for r, fs in FORMS.items()}
        raise ValueError(
            f"form: {form!r} is not a form of the {regularizer!r} regulariser; "
            f"forms are " + "; ".join(sorted(variants)) + ".")
    lam = check_scalar(lam, "lam", low=0.0, low_inclusive=True)
    if not isinstance(diagonal, (bool, np.bool_)):
        raise TypeError(f"diagonal: expected a bool, got {type(diagonal).__name__}.")
    diagonal = bool(diagonal)
    if regularizer == "laplacian" and not diagonal:
        raise ValueError(
            "diagonal: the 'laplacian' regulariser (Eq. 11) is defined for a "
            "diagonal metric only; pass diagonal=True."
        )
    if regularizer in ("burg", "logdet") and diagonal:
        raise ValueError(
            f"diagonal: the {regularizer!r} regulariser is implemented for a "
            "full matrix only; the paper's diagonal approximation of it is "
            "regularizer='laplacian' (Eq. 11)."
        )
    if A0 is not None and regularizer not in ("burg", "logdet"):
        raise ValueError(
            f"A0: only the 'burg' and 'logdet' regularisers use a prior metric "
            f"(got regularizer={regularizer!r})."
        )
    if tau is not None and regularizer == "laplacian" and form == "printed":
        raise ValueError(
            "tau: Eq. 11 as printed (form='printed') has no trace constraint; "
            "tau is used by the trace-fixed variant (form='trace_fixed')."
        )
    if tau is not None and regularizer not in TRACE_FIXED:
        raise ValueError(
            "tau: the 'frobenius' regulariser is not scale-invariant and has "
            "no trace constraint; tau is only used by 'burg', 'logdet' and "
            "'laplacian' with form='trace_fixed'."
        )
    return lam, diagonal


def _prior_terms(A0, tau, d):
    """``(A0, tau, fields)`` of a Burg / LogDet problem: the validated prior
    (default the identity), the trace (default ``tr(A0)``) and the
    :class:`RankData` fields derived from ``A0hat = A0 tau / tr(A0)``."""
    if A0 is None:
        A0 = np.eye(d)
    A0 = check_psd_matrix(A0, "A0", d, definite=True)
    if tau is None:
        tau = float(np.trace(A0))
    tau = _check_tau(tau)
    A0hat = A0 * (tau / np.trace(A0))
    w, U = np.linalg.eigh(A0hat)
    return A0, tau, dict(
        A0hat=A0hat,
        W=(U / np.sqrt(w)) @ U.T,
        V=(U * np.sqrt(w)) @ U.T,
        P=(U / w) @ U.T,
        logdet_A0hat=float(np.sum(np.log(w))),
        isotropic=bool(np.max(np.abs(A0hat - w.mean() * np.eye(d)))
                       <= 1e-14 * w.mean()),
    )


def _cholesky(A):
    """The Cholesky factor of ``A``, or ``None`` when it is not positive
    definite to working precision."""
    try:
        return np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        return None


def _triplet_differences(Xc, idx):
    """``(rows, phi_qi, phi_qr)`` per block of ``_K_BLOCK`` triplets: the
    difference vectors of the far and near pairs (fresh arrays)."""
    for s in range(0, len(idx), _K_BLOCK):
        q, r, i = idx[s:s + _K_BLOCK].T
        yield slice(s, s + _K_BLOCK), Xc[q] - Xc[i], Xc[q] - Xc[r]


# ---------------------------------------------------------------------------
# The data of one problem
# ---------------------------------------------------------------------------


@dataclass(eq=False)
class RankData(FullOrDiagonal):
    """RankDML data (Eq. 7, 9 or 11) in canonical form.

    Build with :meth:`from_triplets`.

    Attributes
    ----------
    X : ndarray of shape (n, d)
    triplets : ndarray of int, shape (N, 3)
        ``(query, relevant, irrelevant)`` rows.
    regularizer : str
    lam : float
    tau : float or None
        Fixed trace (``None`` for ``"frobenius"`` and the printed
        ``"laplacian"``).
    A0 : ndarray of shape (d, d) or None
        The prior metric of ``"burg"`` / ``"logdet"``.
    diagonal : bool
    op : PairOperator
        Over the distinct unordered pairs of the triplets.
    near, far : ndarray of int, shape (N,)
        Index into ``op``'s pairs of ``(q, r)`` and ``(q, i)``.
    K : ndarray of shape (N, d) or None
        Diagonal problems: ``k_t = phi_qi**2 - phi_qr**2`` so that
        ``<diag(a), K_t> = k_t . a``.
    A0hat, W, V, P : ndarray of shape (d, d) or None
        ``A0 tau / tr(A0)``, its inverse square root, square root and
        inverse (``"burg"`` / ``"logdet"``).
    logdet_A0hat : float
    isotropic : bool
        ``A0`` is a multiple of the identity (a cheaper primal map).
    form : str
        ``"printed"`` (default), ``"spectral"`` (Burg) or ``"trace_fixed"``
        (Laplacian); see :data:`FORMS`.
    """

    X: np.ndarray
    triplets: np.ndarray
    regularizer: str
    lam: float
    tau: float
    A0: np.ndarray
    diagonal: bool
    op: PairOperator
    near: np.ndarray
    far: np.ndarray
    K: np.ndarray = None
    A0hat: np.ndarray = None
    W: np.ndarray = None
    V: np.ndarray = None
    P: np.ndarray = None
    logdet_A0hat: float = 0.0
    isotropic: bool = True
    form: str = "printed"

    @classmethod
    def from_triplets(cls, triplets, *, regularizer="frobenius", lam=1.0, tau=None,
                      A0=None, diagonal=False, form="printed"):
        """Validate and canonicalise.

        Parameters
        ----------
        triplets : Triplets
            ``(query, relevant, irrelevant)``: ``D(q, i) >= D(q, r) + 1``.
        regularizer : {"frobenius", "burg", "logdet", "laplacian"}
        lam : float >= 0
            Weight of the regulariser (the paper's lambda).  ``0`` (the
            first point of the paper's Fig. 7) is accepted where the
            minimiser stays bounded: always with a fixed trace, and without
            one when no metric in ``F`` leaves every hinge argument
            non-increasing (:meth:`_bound_unregularised`; ``ValueError``
            naming ``lam`` otherwise).  Only the exact solver and the
            diagonal interior point solve it.
        tau : float > 0, optional
            Fixed trace of ``A`` for ``"burg"``, ``"logdet"`` (default
            ``tr(A0)``) and ``"laplacian"`` with ``form="trace_fixed"``
            (default ``d``: its ``A0`` is the identity).  Not used by
            ``"frobenius"`` and the printed ``"laplacian"``.
        A0 : array_like of shape (d, d), optional
            Symmetric positive definite prior metric of ``"burg"`` and
            ``"logdet"`` (default the identity).
        diagonal : bool
            Learn ``A = diag(a)``.  ``"laplacian"`` is diagonal only;
            ``"burg"`` and ``"logdet"`` are full-matrix only.
        form : str
            ``"printed"`` (default: the equation as the paper prints it),
            ``"spectral"`` (``"burg"``: first term ``tr((A P)^2)``) or
            ``"trace_fixed"`` (``"laplacian"``: ``sum(a) = tau`` added).
        """
        check_instance(triplets, Triplets, "triplets")
        lam, diagonal = _check_options(regularizer, form, lam, diagonal, A0, tau)
        X = triplets.X
        d = X.shape[1]
        kw = {}
        if regularizer in ("burg", "logdet"):
            A0, tau, kw = _prior_terms(A0, tau, d)
        elif regularizer == "laplacian" and form == "trace_fixed":
            if tau is None:
                tau = float(d)
            tau = _check_tau(tau)
        idx = triplets.indices
        near = np.sort(idx[:, [0, 1]], axis=1)
        far = np.sort(idx[:, [0, 2]], axis=1)
        uniq, inv = np.unique(np.vstack([near, far]), axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        N = len(idx)
        op = PairOperator(X, uniq)
        _check_scale(op)
        K = None
        if diagonal:
            # (N, d): squared coordinate differences, far minus near, built in
            # blocks to bound the temporaries
            K = np.empty((N, d))
            for rows, far_d, near_d in _triplet_differences(op.X, idx):
                np.multiply(far_d, far_d, out=far_d)
                np.multiply(near_d, near_d, out=near_d)
                np.subtract(far_d, near_d, out=K[rows])
        data = cls(X=X, triplets=idx, regularizer=regularizer, lam=lam, tau=tau,
                   A0=A0, diagonal=diagonal, op=op, near=inv[:N], far=inv[N:], K=K,
                   form=form, **kw)
        if regularizer in ("burg", "logdet"):
            data._check_resolution_at_prior()
        if data.free_laplacian and lam > 0:
            data._check_flat_scale()
        if lam == 0 and not data.trace_fixed:
            data._bound_unregularised()
        return data

    def _bound_unregularised(self):
        """``lam = 0`` without a trace constraint: prove the minimiser bounded.

        With ``lam = 0`` the objective is the hinge sum alone, an LP (diagonal)
        or an SDP (full) over the cone ``F``; it is bounded below by 0, and
        its minimisers are bounded exactly when no ``D`` in ``F``, ``D != 0``,
        has ``<D, K_t> >= 0`` for every triplet (such a ``D`` can be added to
        any solution at no cost: the optimal set is unbounded and the metric's
        scale undetermined).  By the minimax theorem (the trace-one slice of
        ``F`` and the simplex are compact)
        ``m = max_{D in F, tr D = 1} min_t <D, K_t> = min_{beta in simplex}
        lambda_max(S(beta))`` (``max_i`` of ``K^T beta`` when diagonal); any
        ``beta`` gives the rigorous upper bound ``m <= lambda_max(S(beta))``.
        When it is negative, every ``A`` in ``F`` has a triplet with
        ``<A, K_t> <= m tr(A)``, so ``f(A) >= 1 + |m| tr(A)``, and since
        ``f* <= f(0) = N`` every minimiser has ``tr(A*) <= (N - 1) / |m|``:
        the bound the certificate needs (``min_{A in F} -<S, A> >=
        -lambda_max(S)_+ tr(A*)``).  Otherwise ``lam = 0`` is refused.
        """
        import cvxpy as cp

        N = self.n_constraints
        if N == 0:
            raise ValueError("lam: 0 with no triplets leaves the metric undetermined.")
        beta = cp.Variable(N, nonneg=True)
        if self.diagonal:
            expr = cp.max(self.K.T @ beta)
            scale = float(np.max(np.sum(np.abs(self.K), axis=1)))
        else:
            import scipy.sparse as sp

            P = self.op.n_pairs
            rows = np.arange(N)
            E = (sp.csr_matrix((np.ones(N), (self.far, rows)), shape=(P, N))
                 - sp.csr_matrix((np.ones(N), (self.near, rows)), shape=(P, N)))
            Phi = self.op.X[self.op.i] - self.op.X[self.op.j]
            w = E @ beta
            S = Phi.T @ cp.multiply(cp.reshape(w, (P, 1), order="F"), Phi)
            expr = cp.lambda_max(0.5 * (S + S.T))
            lens = np.sum(Phi * Phi, axis=1)
            scale = float(np.max(lens[self.near] + lens[self.far]))
        prob = cp.Problem(cp.Minimize(expr), [cp.sum(beta) == 1])
        try:
            prob.solve(solver=cp.CLARABEL)
        except cp.error.SolverError:
            prob.solve(solver=cp.SCS)
        b = np.clip(np.asarray(beta.value if beta.value is not None else np.ones(N), float),
                    0.0, None)
        b = b / b.sum() if b.sum() > 0 else np.full(N, 1.0 / N)
        Sb = self.S_of(b)
        m_up = float(np.max(Sb)) if self.diagonal else float(np.linalg.eigvalsh(Sb)[-1])
        if not m_up < -1e-9 * scale:
            raise ValueError(
                f"lam: 0 leaves this problem without a bounded minimiser: there is "
                f"{'a nonnegative diagonal' if self.diagonal else 'a PSD'} metric D "
                f"of unit trace with min_t <D, K_t> of about {m_up:.3g} (relative "
                f"{m_up / scale if scale > 0 else 0.0:.2g}), not below 0: adding it "
                f"to a solution increases no hinge argument, so it costs nothing "
                f"and the metric's scale is not determined. Pass lam > 0, or fix "
                f"the trace ('burg' / 'logdet', or form='trace_fixed' for the "
                f"Laplacian).")
        self._trace_bound = max(N - 1.0, 0.0) / -m_up

    def _check_flat_scale(self):
        """Refuse printed Eq. 11 data whose metric would leave the float range.

        Without a trace constraint the regulariser is flat along ``a = c 1``
        and the unit margin alone sets the scale: a flat metric meets the
        margin at ``c ~ 1 / mean_t |1^T k_t|``.  Beyond ``1e100`` (distance
        differences below ``1e-100``) the regulariser's squares overflow;
        such data is refused (``K = 0`` exactly, every hinge constant, is
        kept: its answer is ``a = 0``).
        """
        s = float(np.mean(np.abs(self.K.sum(axis=1)))) if self.n_constraints else 0.0
        if s == 0.0 or 1.0 / s <= 1e100:
            return
        raise ValueError(
            f"X: distance differences of the triplets average {s:.3g}; Eq. 11 as "
            f"printed has no trace constraint, so the metric must reach the unit "
            f"margin by itself, at entries of about {1.0 / s:.3g}, whose squares "
            f"leave the floating-point range. Rescale X (X -> c X is "
            f"lam -> lam / c^4), or fix the scale with form='trace_fixed'.")

    def _check_resolution_at_prior(self):
        """Refuse Burg / LogDet data whose hinges float64 cannot resolve.

        Their optimum stays near the prior ``A0hat`` (the regulariser grows
        like ``-log`` of any eigenvalue driven to 0, the hinges only
        linearly), with ``f* = O(N + d log)``: when the typical hinge
        argument at the prior is resolved worse than the certificate's
        tolerance, no solver can certify the optimum (measured: the dual
        Newton method stalls at a relative gap 1.5e-3 and the conic solvers
        fail after 20-40 s at ``X * 1e6``).  Such data is refused before any
        solve.
        """
        err = float(np.median(self.hinge_roundoff(self.A0hat)))
        if err <= _GAP:
            return
        D = float(np.max(np.abs(self.constraint_values(self.A0hat))))
        raise ValueError(
            f"X: with the trace fixed at tau = {self.tau:.3g}, distance differences "
            f"under the prior metric reach {D:.3g} and a hinge argument (unit "
            f"margin) is resolved only to about {err:.3g} in float64, above the "
            f"certificate's tolerance {_GAP:g}. The problem depends on X only through "
            f"tau * X^2 (X -> c X is tau -> c^2 tau): rescale X down (standardise "
            f"it) or pass a smaller tau.")

    def as_qwise(self):
        """Eq. 7 (full ``"frobenius"``) as Qwise's Eq. 8: quadruplets
        ``(q, r, q, i)``, margins 1, ``Omega = ||M||_F^2 / 2``,
        ``C_q = 1 / lam``.  Its objective is this one divided by ``lam``; its
        hinge multipliers are these divided by ``lam``."""
        from ..qwise import QwiseData

        if self.regularizer != "frobenius" or self.diagonal:
            raise ValueError("regularizer: only Eq. 7 with a full matrix is a Qwise "
                             "problem.")
        quads = Triplets(self.X, self.triplets).to_quadruplets(1.0)
        return QwiseData.from_sets(quads, regularizer="frobenius", C_q=1.0 / self.lam)

    # -- sizes -----------------------------------------------------------------

    @property
    def n_constraints(self):
        return len(self.near)

    @property
    def trace_fixed(self):
        """Whether ``F`` has the constraint ``tr(A) = tau``."""
        if self.regularizer == "laplacian":
            return self.form == "trace_fixed"
        return self.regularizer in TRACE_FIXED

    @property
    def free_laplacian(self):
        """Eq. 11 as printed: the Laplacian without a trace constraint."""
        return self.regularizer == "laplacian" and self.form == "printed"

    @property
    def printed_burg(self):
        """Burg's printed first term ``||A P||_F^2`` with a non-isotropic
        prior (with an isotropic one it equals the spectral form)."""
        return (self.regularizer == "burg" and self.form == "printed"
                and not self.isotropic)

    # (n_features and the variable: as_variable, to_matrix, off_diagonal
    # from FullOrDiagonal)

    # -- primal ------------------------------------------------------------------

    def margins(self, A):
        """Hinge arguments ``1 - <A, K_t> = 1 + D(q, r) - D(q, i)``, shape (N,)."""
        a = self.as_variable(A)
        if self.diagonal:
            return 1.0 - self.K @ a
        dist = self.op.quadform(a)
        return 1.0 + dist[self.near] - dist[self.far]

    def penalty(self, A):
        """``Reg(A)`` (without ``lam / 2``); ``+inf`` where it is undefined."""
        a = self.as_variable(A)
        reg = self.regularizer
        if reg == "frobenius":
            return float(np.sum(a * a))
        if reg == "laplacian":
            return float(np.sum((a - a.mean()) ** 2))
        b = np.linalg.eigvalsh(self.W @ a @ self.W)
        if b[0] <= 0:
            return np.inf
        if reg == "burg":
            if self.printed_burg:
                AP = a @ self.P
                first = float(np.sum(AP * AP))
            else:
                first = float(np.sum(b * b))
            return float(first - 2.0 * np.sum(np.log(b)) - len(b))
        return float(np.sum(b) - np.sum(np.log(b)) - len(b))

    def objective(self, A):
        """The paper's objective ``sum_t eps_t + (lam/2) Reg(A)`` at ``A``
        (``lam = 0``: the hinges alone, on the closed cone ``F``)."""
        if self.lam == 0:
            return float(np.sum(np.maximum(self.margins(A), 0.0)))
        pen = self.penalty(A)
        if not np.isfinite(pen):
            return np.inf
        return float(np.sum(np.maximum(self.margins(A), 0.0))) + 0.5 * self.lam * pen

    def violation(self, A):
        """``(max_violation, min_eig)``: cone and trace constraint violations."""
        a = self.as_variable(A)
        if self.diagonal:
            min_eig = float(np.min(a))
            tr = float(np.sum(a))
        else:
            min_eig = float(np.linalg.eigvalsh(a)[0])
            tr = float(np.trace(a))
        viol = max(0.0, -min_eig)
        if self.trace_fixed:
            viol = max(viol, abs(tr - self.tau))
        return viol, min_eig

    # -- dual --------------------------------------------------------------------

    def pair_weights(self, alpha):
        """Per-pair weights of ``S(alpha) = sum_t alpha_t (C_far - C_near)``."""
        P = self.op.n_pairs
        return np.bincount(self.far, alpha, P) - np.bincount(self.near, alpha, P)

    def S_of(self, alpha):
        """``S(alpha)``: (d, d) matrix, or the (d,) vector ``K^T alpha``."""
        if self.diagonal:
            return self.K.T @ alpha
        S = self.op.gram(self.pair_weights(alpha))
        return 0.5 * (S + S.T)

    def primal_map(self, S, nu=None):
        """Minimiser of ``(lam/2) Reg(A) - <S, A>`` over ``F`` and a lower bound.

        Parameters
        ----------
        S : ndarray of shape (d, d), or (d,) for diagonal problems
        nu : float, optional
            Warm start of the trace multiplier.

        Returns
        -------
        A : ndarray
            A feasible point (in ``F`` up to round-off; the trace is rescaled
            to ``tau`` exactly), the minimiser up to the root's accuracy.
        lower : float
            A rigorous lower bound on ``min_F (lam/2) Reg - <S, .>``: the
            Lagrangian value at the multiplier ``nu`` found (exact at the root).
        nu : float
            The trace multiplier (0 for Frobenius).
        """
        return self.primal_map_cached(S, nu)[:3]

    def primal_map_cached(self, S, nu=None):
        """:meth:`primal_map` plus the spectral data :meth:`primal_jvp` needs."""
        lam = self.lam
        reg = self.regularizer
        if lam == 0:
            return self._linear_map(S)
        if reg == "frobenius":
            if self.diagonal:
                a = np.maximum(S, 0.0) / lam
                return a, -float(np.sum(a * a)) * lam / 2.0, 0.0, (S > 0,)
            w, U = eigh_psd(S)
            wp = np.maximum(w, 0.0)
            A = (U * (wp / lam)) @ U.T
            # exact value from the eigenvalues
            return A, -float(np.sum(wp * wp)) / (2.0 * lam), 0.0, (w, U)
        tau = self.tau
        d = self.n_features
        if self.free_laplacian:
            return self._laplacian_free_map(S)
        if reg == "laplacian":
            # on F, Reg = ||a||^2 - tau^2 / d; relax sum(a) = tau with nu
            _, theta = project_capped_simplex(S / lam, tau)
            nu = lam * theta
            a = np.maximum(S - nu, 0.0) / lam
            lower = (0.5 * lam * (float(a @ a) - tau * tau / d) - float(S @ a)
                     + nu * (float(a.sum()) - tau))
            total = float(a.sum())
            if not total > 0:
                # S - nu rounded to <= 0 everywhere (entries of S far above
                # tau lam): the projection puts tau on the largest entries
                a = (S == S.max()).astype(float)
                total = float(a.sum())
            return a * (tau / total), lower, nu, (a > 0,)
        if reg == "logdet":
            return self._logdet_map(S, nu)
        if self.printed_burg:
            return self._burg_printed_map(S)
        return self._burg_map(S, nu)

    def _linear_map(self, S):
        """``lam = 0``: ``min_{A in F} -<S, A>`` (no regulariser).

        Trace fixed: ``-tau lambda_max(S)`` (``-tau max_i s_i``), attained
        at ``tau`` times a top eigenvector's projector.  Without the trace:
        ``0`` when ``S`` is negative semidefinite (``s <= 0``), and in
        general ``>= -lambda_max(S)_+ T`` over the minimisers, ``T`` the
        bound on their trace from :meth:`_bound_unregularised`.  The map is
        not smooth: only the certificates use it.
        """
        S = np.asarray(S, dtype=float)
        if self.diagonal:
            top = float(np.max(S)) if S.size else 0.0
            A = (S == top).astype(float)
            A /= A.sum()
        else:
            w, U = np.linalg.eigh(0.5 * (S + S.T))
            top = float(w[-1])
            A = np.outer(U[:, -1], U[:, -1])
        if self.trace_fixed:
            return A * self.tau, -self.tau * top, top, None
        return np.zeros_like(A), -max(top, 0.0) * self._trace_bound, 0.0, None

    def _laplacian_free_map(self, S):
        # Eq. 11 as printed: min_{a >= 0} (lam/2) a^T L a - S^T a.  KKT:
        # a = max(m + S / lam, 0) with m = mean(a) (a sort-based root)
        lam, d = self.lam, self.n_features
        S = np.asarray(S, dtype=float)
        if not float(np.sum(S)) <= 0.0:
            # unbounded along a = c 1 (dual_feasible keeps alpha out of
            # here): a feasible point, no bound
            return np.zeros(d), -np.inf, 0.0, (np.zeros(d, dtype=bool),)
        m = _flat_root(S / lam)
        a = np.maximum(m + S / lam, 0.0)
        # weak duality of the inner QP: for mu >= 0 with mean(S + mu) <= 0,
        # min >= -||L (S + mu)||^2 / (2 lam); mu = max(-S - lam m, 0) is
        # tight, shrunk where round-off left mean(S + mu) above 0
        mu = np.maximum(-S - lam * m, 0.0)
        lower = -np.inf
        for _ in range(8):
            w = S + mu
            e = float(np.sum(w))
            if e <= 0.0:
                wc = w - e / d
                lower = -float(wc @ wc) / (2.0 * lam)
                break
            smu = float(np.sum(mu))
            if not smu > 0.0:
                break
            mu = mu * max(0.0, 1.0 - e / smu - 4.0 * np.finfo(float).eps)
        return a, lower, 0.0, (a > 0,)

    def _burg_printed_map(self, S):
        # min_{A > 0, tr A = tau} (lam/2)(||A P||^2 - 2 logdet(A P) - d) - <S, A>
        # by Newton's method (equality-constrained, damped), warm started
        # from the last minimiser.  Gradient G = (lam/2)(A Q + Q A) -
        # lam A^{-1} - S, Q = P^2; Hessian H[dA] = (lam/2)(dA Q + Q dA) +
        # lam A^{-1} dA A^{-1}.
        #
        # The step is computed in the coordinates of the current point,
        # dA = C Y C^T (A = C C^T, Cholesky): there the Hessian is
        #     H_Y = lam I + (lam/2)(M1 (x) M2 + M2 (x) M1),
        #     M1 = C^T C,  M2 = C^T Q C  (both PSD),
        # so its eigenvalues are >= lam whatever the conditioning of A.  In
        # the plain coordinates the logdet term's A^{-1} (x) A^{-1} reaches
        # 1 / lambda_min(A)^2 while the quadratic term is of order
        # 1 / lambda_max(A0hat)^2: with a large tau (hinges scaled by tau,
        # so A nearly singular along the directions the triplets stretch)
        # the ratio leaves float64 and the Cholesky factor of H fails.
        # The trace constraint tr(C Y C^T) = <M1, Y> = r keeps its
        # multiplier as before.
        S = 0.5 * (S + S.T)
        A, C, f = self._printed_start(S)
        prev = np.inf
        for _ in range(100):
            step = self._printed_step(S, A, C, f, prev)
            if step is None:
                break
            (A, C, f), prev = step
        return self._printed_bound(S, 0.5 * (A + A.T), C)

    def _printed_value(self, S, A, C):
        """The printed Burg Lagrangian ``(lam/2)(||A P||^2 - 2 logdet A) -
        <S, A>`` at ``A = C C^T`` (without its constants)."""
        AP = A @ self.P
        return (0.5 * self.lam * (float(np.sum(AP * AP))
                                  - 4.0 * float(np.sum(np.log(np.diag(C)))))
                - float(np.sum(S * A)))

    def _printed_system(self, S, A, C):
        """``(G, M1, fac, He)``: the gradient at ``A = C C^T``, ``M1 = C^T C``,
        the Cholesky factor of ``H_Y`` and ``H_Y^{-1} vec(M1)`` (see
        :meth:`_burg_printed_map`)."""
        lam, P = self.lam, self.P
        Q = P @ P
        Cinv = scipy.linalg.solve_triangular(C, np.eye(self.n_features), lower=True,
                                             check_finite=False)
        Ainv = Cinv.T @ Cinv
        G = 0.5 * lam * (A @ Q + Q @ A) - lam * Ainv - S
        G = 0.5 * (G + G.T)
        M1 = C.T @ C
        M2 = C.T @ Q @ C
        M2 = 0.5 * (M2 + M2.T)
        HY = 0.5 * lam * (np.kron(M1, M2) + np.kron(M2, M1))
        HY[np.diag_indices_from(HY)] += lam
        fac = scipy.linalg.cho_factor(HY, check_finite=False)
        He = scipy.linalg.cho_solve(fac, M1.ravel(), check_finite=False)
        return G, M1, fac, He

    def _printed_start(self, S):
        """``(A, C, f)``: the better of the last minimiser (``A0hat`` at
        first) and the minimiser of the spectral form."""
        A = getattr(self, "_printed_warm", None)
        if A is None or not np.all(np.isfinite(A)):
            A = self.A0hat.copy()
        C = _cholesky(A)
        if C is None:
            A = self.A0hat.copy()
            C = np.linalg.cholesky(A)
        f = self._printed_value(S, A, C)
        # the minimiser of the spectral form (a closed form in nu) starts
        # Newton near the boundary the logdet term creates, where damped
        # steps from a distant start are short
        As, _, self._printed_nu, _ = self._burg_map(S, getattr(self, "_printed_nu", None))
        As = 0.5 * (As + As.T)
        Cs = _cholesky(As)
        if Cs is not None:
            fs = self._printed_value(S, As, Cs)
            if fs < f:
                A, C, f = As, Cs, fs
        return A, C, f

    def _printed_step(self, S, A, C, f, prev):
        """One damped Newton step from ``A = C C^T`` (value ``f``):
        ``((A, C, f), decrement)`` of the new point, or ``None`` when
        converged (decrement ``prev`` at the last step), stalled or when no
        step decreases ``f``."""
        d = self.n_features
        G, M1, fac, He = self._printed_system(S, A, C)
        GY = (C.T @ G @ C).ravel()
        Hg = scipy.linalg.cho_solve(fac, GY, check_finite=False)
        e = M1.ravel()
        r = self.tau - float(np.trace(A))
        nu = -(r + float(e @ Hg)) / float(e @ He)
        Y = -(Hg + nu * He).reshape(d, d)
        Y = 0.5 * (Y + Y.T)
        dec = -float((GY + nu * e) @ Y.ravel())  # Y^T H_Y Y
        dA = C @ Y @ C.T
        dA = 0.5 * (dA + dA.T)
        scale = max(1.0, abs(f))
        if not dec > 1e-28 * scale or (dec <= 1e-16 * scale and dec >= 0.25 * prev):
            return None  # converged, or stalled at the round-off of f
        # A + t dA = C (I + t Y) C^T is positive definite iff I + t Y is
        ymin = float(np.linalg.eigvalsh(Y)[0])
        t = 1.0 if ymin >= -0.5 else 0.5 / -ymin
        if not t > 1e-12:
            return None

        def trial(t):
            new = A + t * dA
            new = 0.5 * (new + new.T)
            Cn = _cholesky(new)
            return new, Cn, (self._printed_value(S, new, Cn) if Cn is not None else None)

        search = backtracking(
            trial, lambda t, v: v[1] is not None
            and (v[2] <= f - 0.25 * t * dec or dec <= 1e-14 * scale),
            min_step=1e-12)
        if not search.accepted or not search.step > 1e-12:
            return None
        return search.value, dec

    def _printed_bound(self, S, A, C):
        """:meth:`primal_map_cached`'s answer at the Newton point ``A``:
        the Lagrangian at the best multiplier for ``A``, minus the strong
        convexity slack (a rigorous lower bound on the inner minimum)."""
        lam, tau, d = self.lam, self.tau, self.n_features
        G, M1, fac, He = self._printed_system(S, A, C)
        nu = -float(np.trace(G)) / d
        R = G + nu * np.eye(d)
        AP = A @ self.P
        logdet_AP = 2.0 * float(np.sum(np.log(np.diag(C)))) - self.logdet_A0hat
        tr = float(np.trace(A))
        lower = (0.5 * lam * (float(np.sum(AP * AP)) - 2.0 * logdet_AP - d)
                 - float(np.sum(S * A)) + nu * (tr - tau)
                 - float(np.sum(R * R)) / (2.0 * self._printed_modulus()))
        A = A * (tau / tr)
        self._printed_warm = A
        return A, lower, nu, (fac, He, C, M1)

    def _printed_modulus(self):
        """Strong convexity modulus of ``(lam/2)||A P||_F^2``:
        ``lam sigma_min(P)^2 = lam / lambda_max(A0hat)^2``."""
        top = float(np.linalg.eigvalsh(self.A0hat)[-1])
        return self.lam / (top * top)

    def _logdet_map(self, S, nu):
        # (lam/2)(P - A^{-1}) = S - nu I  =>  A = (E + t I)^{-1},
        # E = P - (2/lam) S, t = 2 nu / lam > -min eig(E)
        lam, tau, d = self.lam, self.tau, self.n_features
        e, U = np.linalg.eigh(self.P - (2.0 / lam) * S)
        # psi(t) = sum 1 / (e + t) is convex and decreasing: Newton from the
        # left (psi >= tau) increases monotonically to the root
        t = -e[0] + 1.0 / tau
        for _ in range(200):
            inv = 1.0 / (e + t)
            res = float(inv.sum()) - tau
            if res <= _ROOT_RTOL * tau:
                break
            t_new = t + res / float(np.sum(inv * inv))
            if not t_new > t:
                break
            t = t_new
        inv = 1.0 / (e + t)
        nu = 0.5 * lam * t
        A = (U * inv) @ U.T
        # Lagrangian value at nu (exact for the unconstrained minimiser):
        # (lam/2)(<P, A> - logdet(A P) - d) - <S - nu I, A> - nu tau
        # logdet(A P) = logdet(A) - logdet(A0hat)
        logdet_AP = float(np.sum(np.log(inv))) - self.logdet_A0hat
        lower = (0.5 * lam * (float(np.sum(self.P * A)) - logdet_AP - d)
                 - float(np.sum(S * A)) + nu * (float(inv.sum()) - tau))
        A = A * (tau / np.trace(A))
        return A, lower, nu, (A,)

    def _burg_map(self, S, nu):
        # B = W A W: lam (B - B^{-1}) = Z(nu) = V (S - nu I) V; spectral in Z
        lam, tau, d = self.lam, self.tau, self.n_features
        V = self.V
        A0hat = self.A0hat
        if self.isotropic:
            c = float(A0hat[0, 0])  # A0hat = c I, V = sqrt(c) I
            s, U = np.linalg.eigh(S)

            def phi(x):
                z = c * (s - x)
                b = _burg_spectral(z, lam)
                deriv = float(np.sum(_burg_spectral_deriv(z, lam)))
                return c * b.sum(), -c * c * deriv, (z, b, U)

            x0 = float(s.mean()) if nu is None else nu
        else:
            VSV = V @ S @ V

            def phi(x):
                z, U = np.linalg.eigh(VSV - x * A0hat)
                b = _burg_spectral(z, lam)
                M = U.T @ A0hat @ U
                F1 = _divided_differences(z, b, lam)
                return float(np.sum(np.diag(M) * b)), -float(np.sum(M * M * F1)), (z, b, U)

            x0 = float(np.trace(S)) / d if nu is None else nu
        nu, (z, b, U) = _decreasing_root(phi, tau, x0, max(abs(x0), 1.0))
        VU = V @ U
        A = (VU * b) @ VU.T
        A = 0.5 * (A + A.T)
        tr = float(np.trace(A))
        # Lagrangian value at nu: (lam/2)(||B||^2 - 2 logdet B - d)
        #                          - <S - nu I, A> - nu tau
        lower = (0.5 * lam * (float(np.sum(b * b)) - 2.0 * float(np.sum(np.log(b))) - d)
                 - float(np.sum(S * A)) + nu * (tr - tau))
        return A * (tau / tr), lower, nu, (z, b, U)

    def primal_jvp(self, cache, dS):
        """Directional derivative ``dA = DA*(S)[dS]`` of the primal map.

        An element of the generalised (Clarke) Jacobian where the map is not
        differentiable (the PSD / nonnegativity kinks); for trace-fixed
        problems ``tr(dA) = 0`` (the multiplier moves with ``S``).  The
        operator is symmetric positive semidefinite: ``<dS, dA> >= 0``.
        """
        lam = self.lam
        reg = self.regularizer
        if reg == "frobenius" and self.diagonal:
            return np.where(cache[0], dS, 0.0) / lam
        if self.free_laplacian:
            # a_F = m + S_F / lam, m = sum(S_F) / (lam (d - k)), k = |F|
            (supp,) = cache
            da = np.zeros_like(dS)
            k = int(np.sum(supp))
            d = len(dS)
            if 0 < k < d:
                da[supp] = (dS[supp] + float(np.sum(dS[supp])) / (d - k)) / lam
            elif k == d:  # 1^T S = 0: a minimiser on the flat direction
                da = (dS - dS.mean()) / lam
            return da
        if reg == "laplacian":
            (supp,) = cache
            da = np.zeros_like(dS)
            if np.any(supp):
                da[supp] = (dS[supp] - dS[supp].mean()) / lam
            return da
        if reg == "frobenius":
            w, U = cache
            wp = np.maximum(w, 0.0)
            dw = w[:, None] - w[None, :]
            same = np.abs(dw) <= 1e-14 * max(1.0, float(np.max(np.abs(w))))
            omega = np.where(same, (w[:, None] + w[None, :] > 0).astype(float),
                             (wp[:, None] - wp[None, :]) / np.where(same, 1.0, dw))
            Y = U.T @ dS @ U
            return U @ (omega * Y) @ U.T / lam
        if reg == "logdet":
            (A,) = cache
            ASA = A @ dS @ A
            A2 = A @ A
            return (2.0 / lam) * (ASA - (np.trace(ASA) / np.trace(A2)) * A2)
        if self.printed_burg:
            # H dA + dnu I = dS, tr(dA) = 0 (H at the minimiser)
            # in the coordinates dA = C Y C^T of the map (see
            # _burg_printed_map): H_Y Y + dnu M1 = C^T dS C, <M1, Y> = 0
            fac, He, C, M1 = cache
            dS = np.asarray(dS, float)
            x = scipy.linalg.cho_solve(fac, (C.T @ dS @ C).ravel(), check_finite=False)
            e = M1.ravel()
            dnu = float(e @ x) / float(e @ He)
            Y = (x - dnu * He).reshape(dS.shape)
            dA = C @ Y @ C.T
            return 0.5 * (dA + dA.T)
        z, b, U = cache
        F1 = _divided_differences(z, b, lam)
        VU = self.V @ U
        Y = VU.T @ dS @ VU  # U^T V dS V U
        M = U.T @ self.A0hat @ U
        dnu = float(np.sum(M * F1 * Y)) / float(np.sum(M * F1 * M))
        dB = F1 * (Y - dnu * M)
        dA = VU @ dB @ VU.T
        return 0.5 * (dA + dA.T)

    def constraint_values(self, M, subset=None):
        """``<M, K_t>`` for every triplet (or ``subset``), ``M`` symmetric."""
        if self.diagonal:
            K = self.K if subset is None else self.K[subset]
            return K @ M
        dist = self.op.quadform(M)
        near, far = self.near, self.far
        if subset is not None:
            near, far = near[subset], far[subset]
        return dist[far] - dist[near]

    def dual_value(self, alpha, nu=None, *, clip=True):
        """``(g(alpha), A*(alpha), nu)``.

        ``alpha`` is clipped to ``[0, 1]`` unless ``clip=False`` (the smooth
        extension outside the box, used by extrapolating solvers; its value
        is then not a bound).
        """
        if clip:
            alpha = np.clip(alpha, 0.0, 1.0)
        if self.free_laplacian and self.lam > 0:
            alpha = self.dual_feasible(alpha)
        A, lower, nu = self.primal_map(self.S_of(alpha), nu)
        return float(np.sum(alpha)) + lower, A, nu

    def dual_feasible(self, alpha):
        """``alpha`` moved into the dual domain of Eq. 11 as printed.

        Without the trace constraint the dual function is finite only where
        ``1^T S(alpha) = s^T alpha <= 0`` (``s_t = 1^T k_t``).  Returns
        ``clip(alpha - theta c, 0, 1)`` with the smallest ``theta >= 0``
        (bisection) such that ``c^T alpha <= 0``, ``c = s + gamma |K| 1``
        (``gamma = 1e-12``: a margin over the round-off of the two sums).
        Other problems: ``alpha`` unchanged.
        """
        if not self.free_laplacian:
            return alpha
        c = getattr(self, "_ksum_margin", None)
        if c is None:
            c = self.K.sum(axis=1) + 1e-12 * np.abs(self.K).sum(axis=1)
            self._ksum_margin = c
        if float(c @ alpha) <= 0.0:
            return alpha
        pos, neg = c > 0, c < 0
        hi = max(float(np.max(alpha[pos] / c[pos])) if np.any(pos) else 0.0,
                 float(np.max((1.0 - alpha[neg]) / -c[neg])) if np.any(neg) else 0.0)
        lo = 0.0
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if not lo < mid < hi:
                break
            if float(c @ np.clip(alpha - mid * c, 0.0, 1.0)) <= 0.0:
                hi = mid
            else:
                lo = mid
        out = np.clip(alpha - hi * c, 0.0, 1.0)
        # at the far end alpha is 0 where c > 0 and 1 where c < 0
        return out if float(c @ out) <= 0.0 else np.where(pos, 0.0, np.where(neg, 1.0, alpha))

    def dual_bound(self, alpha):
        """A valid lower bound on the optimal value."""
        return self.dual_value(alpha)[0]

    def best_dual_bound(self, alpha, A):
        """The better of the bounds from ``alpha`` and from ``alpha`` made
        consistent with ``A`` (1 where the hinge is active, 0 where it is
        inactive, ``alpha`` on the margin); both are valid."""
        alpha = np.clip(alpha, 0.0, 1.0)
        bound = self.dual_bound(alpha)
        arg = self.margins(A)
        alpha2 = np.where(arg > 1e-9, 1.0, np.where(arg < -1e-9, 0.0, alpha))
        if not np.array_equal(alpha2, alpha):
            bound = max(bound, self.dual_bound(alpha2))
        return bound

    def hinge_roundoff(self, A):
        """Per-triplet round-off estimate of the hinge arguments at ``A``.

        A hinge argument ``1 + d(q, r) - d(q, i)`` is a difference of two
        squared distances; near the margin it is 1 while the distances may
        be many orders larger, and float64 resolves a distance
        ``u^T A u`` only to about ``eps |u|^T |A| |u|`` (``u`` the difference
        vector, or ``|x_i| + |x_j|`` of the centred points when the pair
        operator works in sample space; ``|phi|^2 . a`` for a diagonal
        metric).  Estimated to first order with the factor ``2 + sqrt(d)``
        (summation error grows like the square root of the length).
        Shape (N,).
        """
        a = self.as_variable(A)
        d = self.n_features
        gamma = (2.0 + np.sqrt(d)) * np.finfo(float).eps
        Xc = self.op.X
        if self.diagonal:
            # K was formed from the differences, coordinate by coordinate
            out = np.empty(len(self.triplets))
            absa = np.abs(a)
            for rows, far_d, near_d in _triplet_differences(Xc, self.triplets):
                out[rows] = (far_d * far_d + near_d * near_d) @ absa
            return gamma * out
        absA = np.abs(a)
        if self.op.Phi is not None:
            U = np.abs(self.op.Phi)
            ext = np.einsum("pd,pd->p", U @ absA, U)
        else:
            ax = np.abs(Xc)
            q = np.einsum("nd,nd->n", ax @ absA, ax)
            # (|x_i| + |x_j|)^T |A| (|x_i| + |x_j|), the sample-space terms
            cross = np.einsum("pd,pd->p", (ax @ absA)[self.op.i], ax[self.op.j])
            ext = q[self.op.i] + q[self.op.j] + 2.0 * cross
        return gamma * (ext[self.near] + ext[self.far])

    def roundoff(self, A, alpha=None):
        """Round-off estimate of the objective at ``A`` (hinges that may be
        positive) plus that of the dual bound at ``alpha``
        (``sum_t alpha_t err_t``): the floating-point resolution of the
        certificate's gap.  See :meth:`hinge_roundoff`."""
        a = self.as_variable(A)
        err = self.hinge_roundoff(a)
        arg = self.margins(a)
        total = float(np.sum(err[arg + err > 0]))
        if alpha is not None:
            total += float(np.clip(alpha, 0.0, 1.0) @ err)
        return total

    def check_resolution(self, result):
        """Refuse, naming ``X``, a problem whose optimum float64 cannot resolve.

        Raises ``ValueError`` when ``result``'s certificate does not pass
        and its round-off estimate (:meth:`roundoff`) is above the
        certificate's tolerance: the gap is then limited by the resolution
        of the hinge arguments, not by the solver.
        """
        c = result.certificate
        noise = float(c.tolerances.get("roundoff", 0.0))
        scale = c.tol_gap * max(1.0, abs(c.objective)) if np.isfinite(c.objective) else 0.0
        if c.passed or not noise > scale:
            return
        a = self.as_variable(result.M)
        dist = float(np.max(np.abs(self.constraint_values(a)))) if self.n_constraints else 0.0
        knob = (f"with the trace fixed at tau = {self.tau:.3g} the problem depends on "
                f"X only through tau * X^2 (X -> c X is tau -> c^2 tau), so rescale X "
                f"down or pass a smaller tau" if self.trace_fixed else "rescale X")
        raise ValueError(
            f"X: the unit margin is below the float64 resolution of the distances: "
            f"at the solution distance differences reach {dist:.3g}, and the "
            f"objective is resolved only to {noise:.3g}, above the certificate's "
            f"tolerance {scale:.3g}; {knob} until distances under the metric are "
            f"within about 1e6 of the margin.")

    def certificate(self, A, alpha, *, solver, solver_version="", tolerances=None,
                    times=None, tol_gap=_GAP, tol_feas=_FEAS):
        """Certificate of ``A`` with the dual bound from ``alpha``.

        The bound is lowered by :meth:`roundoff`: where the unit margin is
        below the resolution of the distances (very large data against the
        fixed trace), the gap cannot be verified in float64 and the
        certificate does not pass.  ``tolerances["roundoff"]`` records it.
        """
        a = self.as_variable(A)
        obj = self.objective(a)
        viol, min_eig = self.violation(a)
        bound = self.best_dual_bound(alpha, a) if alpha is not None else -np.inf
        noise = self.roundoff(a, alpha)
        tolerances = {**(tolerances or {}), "roundoff": noise}
        if np.isfinite(bound) and noise > 1e-3 * tol_gap * max(1.0, abs(obj)):
            # below a thousandth of the tolerance it is noise on noise
            bound = bound - noise
        return Certificate.from_bound(
            obj, bound, max_violation=viol, min_eig=min_eig,
            solver=solver, solver_version=solver_version, tolerances=tolerances,
            times=times, tol_gap=tol_gap, tol_feas=tol_feas)

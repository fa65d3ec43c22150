"""The constraint-based baseline of Lee, Jin, Jain (2008, Sec. 3.1): Eq. 1, 4, 6, 10.

A *pair* ``p = (q, x)`` -- a query and a retrieved item -- is a must-link
(``y_p = +1``, set ``S``) or a cannot-link (``y_p = -1``, set ``D``), with
``d_A(p) = phi_p^T A phi_p = <A, C_p>``, ``phi_p = x_q - x_x`` (Eq. 2).  The
four problems of the section are

Eq. 1 (``hard=True``)::

    minimise_{A PSD}  sum_{p in S} d_A(p) + (lam/2) ||A||_F^2
    subject to        d_A(p) >= 1          for p in D

Eq. 4 (``hard=False``, ``form="slack"``)::

    minimise_{A PSD, eps >= 0}  sum_{p in S} eps_p + (lam/2) ||A||_F^2
    subject to                  d_A(p) <= 1 + eps_p   for p in S
                                d_A(p) >= 1           for p in D

Eq. 6 (``hard=False``, ``form="hinge"``), equal to Eq. 4 by Theorem 1
(``eps_p = max(0, d_A(p) - 1)`` at any optimum)::

    minimise_{A PSD}  sum_{p in S} max(0, d_A(p) - 1) + (lam/2) ||A||_F^2
    subject to        d_A(p) >= 1          for p in D

Eq. 10 (``diagonal=True``): ``A = diag(a)``, ``a >= 0``,
``d_a(p) = psi_p^T a`` with ``psi_p = phi_p * phi_p`` and the regulariser
``(lam/2) ||a||^2``; the paper prints it for Eq. 1's objective, and
``diagonal=True, hard=False`` is the same restriction of Eq. 4 / 6.
``tr(A A^T) = ||A||_F^2`` for the symmetric ``A`` of every problem.

The objective is reported in the paper's units: the must-link terms (or
slacks) carry weight 1, none is averaged or rescaled.

**Dual.**  With multipliers ``theta_p >= 0`` (cannot-links) and
``beta_p in [0, 1]`` (the hinge ``max(0, t) = max_{beta in [0,1]} beta t``;
``beta_p = 1`` fixed in Eq. 1) write ``u`` for the vector of all pair
multipliers, ``s_p = +1`` on ``D`` and ``-1`` on ``S``, and
``Y(u) = sum_p s_p u_p C_p = X^T L X`` (a weighted graph Laplacian
``L``; never one matrix per pair).  Minimising the Lagrangian over
``A PSD`` gives, for ``lam > 0``,

    g(u) = b^T u - ||Pi_+(Y(u))||_F^2 / (2 lam),   A(u) = Pi_+(Y(u)) / lam,

with ``b_p = 1`` on ``D``, ``-1`` on ``S`` for the hinge and ``0`` on ``S``
for Eq. 1 (whose must-link term has no offset), ``Pi_+`` the projection on
the PSD cone (``max(., 0)`` elementwise in the diagonal case, where
``Y(u) = Psi^T (s * u)``).  ``g`` is concave and smooth, its gradient is
``b - s * d_{A(u)}``, Lipschitz with constant ``||K||^2 / lam`` where
``K: u -> Y(u)``; every ``u`` in the box gives the lower bound ``g(u)`` used
by every certificate of this module.  For ``lam = 0`` the inner minimum is
``-inf`` unless ``Y(u) <= 0`` (Loewner order); :meth:`ConstraintData.dual_bound`
then repairs ``u`` by scaling the cannot-link part (see there).

**Feasibility.**  The cannot-link constraints are hard in every form.  The
problem is feasible if and only if no cannot-link has a zero difference
vector: ``A = t I`` (``a = t 1``) with ``t = 1 / min_D ||phi_p||^2`` is
feasible otherwise, and ``d_A(p) = 0 < 1`` for every ``A`` when
``phi_p = 0``.  The same holds for the diagonal problem, since
``psi_p^T 1 = ||phi_p||^2``.  :meth:`ConstraintData.check_feasible` applies
this exact test; the conic solver's own infeasibility certificate (a Farkas
ray supported on the offending cannot-links) is the second line of defence.
Conversely a solver's infeasibility claim on a problem this test proves
feasible is numerical and is never reported as infeasible (see
:meth:`ConstraintDMLModel.solve`).
"""

import time
from dataclasses import dataclass, replace

import cvxpy as cp
import numpy as np

from .._docs import fill_doc
from .._exact import SOLVERS, solve_certified
from .._linalg import PairOperator, eigh_psd, pow2_rms_exponents
from .._settings import _EXP_MAX, _LAM_MAX, _MARGIN_TOL, _MATERIALIZE, _SHORT, _SHOW
from .._tolerances import certificate_tolerance
from .._validation import (
    check_indices,
    check_instance,
    check_option,
    check_samples,
    check_scalar,
)
from ..model import DeclaredProblem
from ..result import (
    Certificate,
    CertificateError,
    InfeasibleError,
    SolverError,
    SolverResult,
)

_GAP, _FEAS = certificate_tolerance("constraintdml")
from .._variable import FullOrDiagonal

__all__ = [
    "ConstraintData",
    "ConstraintDMLModel",
    "solve_constraint_exact",
    "check_pair_labels",
    "declared_problem",
    "FORMS",
    "PAPER",
]

#: The paper, as :class:`~cvxmetric.model.DeclaredProblem` cites it.
PAPER = ("Lee, Jin, Jain: Rank-based distance metric learning: an application "
         "to image retrieval (CVPR 2008), Sec. 3.1 (the constraint-based baseline)")

#: Ways of writing the must-link term of Eq. 4 / 6 in CVXPY.
FORMS = ("slack", "hinge")


def _show_rows(rows, pairs):
    """``"row 3 (5, 7), row 9 (2, 2)"`` for the first few offending rows."""
    shown = ", ".join(f"row {int(r)} ({int(pairs[r, 0])}, {int(pairs[r, 1])})"
                      for r in rows[:_SHOW])
    more = f" and {len(rows) - _SHOW} more" if len(rows) > _SHOW else ""
    return shown + more


def _pow2_scaled(X):
    """``(X 2^-k, k)`` with ``max |X 2^-k|`` in ``[0.5, 1)`` (``k = 0`` for
    ``X = 0``): a scaling by a power of two, exact barring underflow."""
    m = float(np.max(np.abs(X))) if X.size else 0.0
    if not m > 0:
        return X, 0
    k = int(np.frexp(m)[1])
    with np.errstate(under="ignore"):
        return np.ldexp(X, -k), k


def _check_pair_lengths(diff, k, pairs, must, cannot, lam):
    """Refuse pairs whose lengths the problem cannot use (see
    :meth:`ConstraintData.from_pairs`, Raises).

    ``diff`` holds the difference vectors in units of ``2^k``.  Refused,
    naming the argument: a must-link of identical points, a squared length
    that overflows, a cannot-link whose squared length underflows although
    its points differ, and (``lam > 0``) cannot-links so short against the
    typical one that their multipliers leave the range of the solvers.
    """
    zero = ~np.any(diff != 0, axis=1)
    bad = must[zero[must]]
    if len(bad):
        raise ValueError(
            f"pairs: {len(bad)} must-link(s) join identical points, "
            f"{_show_rows(bad, pairs)}; their distance is 0 for every metric, "
            f"so they carry no information. Drop them."
        )
    with np.errstate(over="ignore", under="ignore"):
        sq = np.ldexp(np.einsum("pd,pd->p", diff, diff), 2 * k)
    huge = np.flatnonzero(~np.isfinite(sq))
    if len(huge):
        raise ValueError(
            f"X: the squared difference of {len(huge)} pair(s) overflows "
            f"({_show_rows(huge, pairs)}); their distances, and the metric "
            f"needed to bound them, are beyond the floating-point range. "
            f"Rescale X."
        )
    # a cannot-link needs d_A >= 1, i.e. entries of A of at least
    # 1 / ||phi||^2: beyond the range when ||phi||^2 is not a normal float
    tiny = cannot[(sq[cannot] < np.finfo(float).tiny) & ~zero[cannot]]
    if len(tiny):
        raise ValueError(
            f"X: the squared difference of {len(tiny)} cannot-link(s) "
            f"underflows although the points differ ({_show_rows(tiny, pairs)}); "
            f"d_A >= 1 would need a metric beyond the floating-point range. "
            f"Rescale X."
        )
    # d_A(p) >= 1 on a cannot-link forces ||A||_F >= 1 / ||phi_p||^2, so
    # the optimum is at least lam / (2 ||phi_p||^4) and the dual
    # multiplier of that pair about lam / ||phi_p||^4 (the fast dual
    # squares it): a ratio invariant under X -> s X, lam -> lam s^4
    # (normalized), refused beyond the range every solver represents
    # (when the typical cannot-link is that short too, the whole of X is
    # at a scale the solvers refuse, naming X: ConstraintData.normalized)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        ratio = lam / (sq[cannot] * sq[cannot])
    typical = ratio[~zero[cannot]]
    if not (lam > 0 and len(typical) and np.median(typical) <= _LAM_MAX):
        return
    far = cannot[(ratio > _LAM_MAX) & ~zero[cannot]]
    if len(far):
        shortest = float(np.sqrt(np.min(sq[far])))
        raise ValueError(
            f"pairs: {len(far)} cannot-link(s) are far shorter than the "
            f"regularisation allows ({_show_rows(far, pairs)}; the shortest "
            f"has length {shortest:.3g}): d_A >= 1 needs a metric of norm "
            f"at least 1 / length^2 along it, so the optimum is at least "
            f"lam / (2 length^4) and its multiplier about lam / length^4, "
            f"above {_LAM_MAX:g} -- beyond what the solvers represent "
            f"next to the other pairs. Drop or merge these pairs, rescale "
            f"X, or lower lam (X -> s X is lam -> lam / s^4).")


def check_pair_labels(labels, n_pairs, name="y"):
    """Labels as an int8 array of +1 (must-link) / -1 (cannot-link).

    Raises
    ------
    ValueError
        Naming ``name`` when the shape or a value is wrong.  Booleans and
        strings are rejected, not converted.
    """
    try:
        y = np.asarray(labels)
    except Exception as exc:  # ragged lists
        raise ValueError(f"{name}: cannot be read as an array ({exc}).") from None
    if y.shape != (n_pairs,):
        raise ValueError(f"{name}: expected shape ({n_pairs},), got {y.shape}.")
    if y.dtype == object or y.dtype.kind not in "iuf" or not np.all(np.isin(y, (-1, 1))):
        shown = list(dict.fromkeys(y.ravel().tolist()))[:5]
        raise ValueError(
            f"{name}: labels must be +1 (must-link) or -1 (cannot-link), got "
            f"values {shown}."
        )
    return y.astype(np.int8)


@dataclass(eq=False)
class ConstraintData(FullOrDiagonal):
    """Eq. 1 / 4 / 6 / 10 data in canonical form.

    Build with :meth:`from_pairs`.

    Attributes
    ----------
    X : ndarray of shape (n, d)
    pairs : ndarray of int, shape (P, 2)
        ``(query, item)`` rows into ``X``.
    labels : ndarray of int8, shape (P,)
        +1 must-link, -1 cannot-link.
    hard : bool
        Eq. 1 (must-link distances summed) when True, Eq. 4 / 6 (must-link
        hinge) when False.
    diagonal : bool
        Eq. 10: ``A = diag(a)``, ``a >= 0``.
    lam : float
        The regularisation weight ``lambda >= 0``.
    op : PairOperator
        Over ``pairs`` (in the given order).
    must, cannot : ndarray of int
        Rows of ``pairs`` in ``S`` and ``D``.
    Psi : ndarray of shape (P, d) or None
        Diagonal problems: ``psi_p = phi_p * phi_p``.
    sign : ndarray of shape (P,)
        ``s_p``: +1 on ``D``, -1 on ``S``.
    b : ndarray of shape (P,)
        Linear coefficients of the dual (see the module docstring).
    lower, upper : ndarray of shape (P,)
        Box of the multipliers ``u`` (``1 = lower = upper`` on ``S`` in
        Eq. 1: those multipliers are fixed).
    """

    X: np.ndarray
    pairs: np.ndarray
    labels: np.ndarray
    hard: bool
    diagonal: bool
    lam: float
    op: PairOperator
    must: np.ndarray
    cannot: np.ndarray
    Psi: np.ndarray
    sign: np.ndarray
    b: np.ndarray
    lower: np.ndarray
    upper: np.ndarray

    @classmethod
    def from_pairs(cls, X, pairs, labels, *, hard=True, diagonal=False, lam=1.0):
        """Validate and canonicalise.

        Parameters
        ----------
        X : array_like of shape (n, d)
        pairs : array_like of int, shape (P, 2)
            ``(query, item)`` indices into ``X``.
        labels : array_like of shape (P,)
            +1 (must-link) or -1 (cannot-link).
        hard : bool
            Eq. 1 (True) or Eq. 4 / 6 (False).
        diagonal : bool
            Eq. 10 (``A = diag(a)``, ``a >= 0``).
        lam : float >= 0
            ``lam = 0`` is accepted by the exact solver (the optimum is still
            attained, see docs/constraintdml/decisions.md); the fast solver needs ``lam > 0``.

        Raises
        ------
        ValueError
            Bad input, naming the argument: NaN / inf, shapes, out-of-range
            indices, labels other than +/-1, no cannot-link (the optimum
            would be the zero matrix), a must-link of identical points (its
            distance is 0 for every metric: the term carries no information),
            a cannot-link whose squared length underflows to 0 although the
            points differ (rescale ``X``).
        TypeError
            ``hard`` or ``diagonal`` not a bool, ``lam`` not a real number.

        Notes
        -----
        A cannot-link of identical points is *not* bad input: the data are
        valid and the problem they define is infeasible.  It is accepted
        here and reported as :class:`~cvxmetric.result.InfeasibleError` by
        :meth:`check_feasible` (which every solver calls) or by the conic
        solver.
        """
        for flag, name in ((hard, "hard"), (diagonal, "diagonal")):
            if not isinstance(flag, (bool, np.bool_)):
                raise TypeError(f"{name}: expected a bool, got {type(flag).__name__}.")
        lam = check_scalar(lam, "lam", low=0.0)
        X = check_samples(X, "X")
        idx = check_indices(pairs, "pairs", X.shape[0], width=2)
        y = check_pair_labels(labels, idx.shape[0], name="labels")
        must = np.flatnonzero(y == 1)
        cannot = np.flatnonzero(y == -1)
        if len(cannot) == 0:
            raise ValueError(
                "labels: no cannot-link (-1) pair; without one the optimum of "
                "Eq. 1 / 4 / 10 is the zero matrix, which is no metric."
            )
        # differences of X scaled by a power of two (exact): no overflow when
        # forming them, and their squared lengths in X's units follow exactly
        Xs, k = _pow2_scaled(X)
        diff = Xs[idx[:, 0]] - Xs[idx[:, 1]]  # (P, d), in units of 2^k
        _check_pair_lengths(diff, k, idx, must, cannot, lam)
        # the solvers' hot loops are Gram products and pair distances; with
        # the difference vectors stored they are two small BLAS calls, much
        # cheaper than a sparse Laplacian on collection-sized problems
        # stored, they are the differences of X itself: centring first
        # (PairOperator's default) rounds a short pair between large points
        # -- (x + 1e-12) - c is not x - c + 1e-12 -- and the solvers would
        # meet a cannot-link's margin on a pair 1e-5 longer than the data's
        materialize = len(idx) * X.shape[1] <= _MATERIALIZE
        op = PairOperator(X, idx, materialize=True if materialize else None,
                          centered=materialize)
        Psi = None
        if diagonal:
            with np.errstate(under="ignore"):
                Psi = np.ldexp(diff * diff, 2 * k)  # (P, d), in X's units
        P = len(idx)
        sign = np.where(y == -1, 1.0, -1.0)
        b = np.ones(P)
        lower = np.zeros(P)
        upper = np.where(y == -1, np.inf, 1.0)
        if hard:
            b[must] = 0.0
            lower[must] = 1.0
        else:
            b[must] = -1.0
        return cls(X=X, pairs=idx, labels=y, hard=bool(hard), diagonal=bool(diagonal),
                   lam=lam, op=op, must=must, cannot=cannot, Psi=Psi, sign=sign, b=b,
                   lower=lower, upper=upper)

    def normalized(self):
        """The same problem in units where the pair lengths are O(1).

        With ``s = 2^k`` and ``X_n = X / s``, ``A = B / s^2``
        gives ``d_A(p; X) = d_B(p; X_n)`` and ``||A||_F^2 = ||B||_F^2 / s^4``,
        so every objective of this module satisfies

            f_lam(A; X) = f_{lam / s^4}(B; X_n):

        the same value, the same constraints, the same multipliers ``u``,
        and ``A* = B* / s^2``.  Scaling ``X`` is therefore not an invariance
        of the problem: it is a change of ``lam`` to ``lam / s^4`` (large
        data make the regulariser negligible, tiny data make it dominate).
        ``k`` is chosen so that the median cannot-link length of ``X_n`` is
        in ``[0.5, 1)``; powers of two make the change of units exact.

        Returns
        -------
        data_n : ConstraintData
            ``self`` when ``k = 0``.
        k : int
            Map a solution back with :meth:`restore_units`.

        Raises
        ------
        ValueError
            Naming ``X`` when ``lam / s^4`` exceeds ``1e100`` (the
            regulariser outweighs the must-link term by more than 1e100:
            at such scales the dual of every solver overflows).
        """
        # (no centring: X - c can merge points that differ; the pair
        # operator centres its own copy for the sample-space products)
        Xs, k1 = _pow2_scaled(self.X)
        phi = Xs[self.pairs[self.cannot, 0]] - Xs[self.pairs[self.cannot, 1]]
        norms = np.sqrt(np.einsum("pd,pd->p", phi, phi))
        norms = norms[norms > 0]
        if not len(norms):  # every cannot-link is infeasible
            return self, 0
        k = k1 + int(np.frexp(float(np.median(norms)))[1])
        if k == 0:
            return self, 0
        with np.errstate(over="ignore", under="ignore"):
            lam = float(np.ldexp(self.lam, -4 * k))
        if not lam <= _LAM_MAX:
            raise ValueError(
                f"X: the pair lengths are about 2^{k}; at this scale the "
                f"problem equals the one on X / 2^{k} with lam / 2^{4 * k} > "
                f"{_LAM_MAX:g}: the regulariser outweighs the must-link term "
                f"beyond what the solvers represent. Rescale X (or lam)."
            )
        with np.errstate(under="ignore"):
            Xn = np.ldexp(self.X, -k)
        return type(self).from_pairs(Xn, self.pairs, self.labels, hard=self.hard,
                                     diagonal=self.diagonal, lam=lam), k

    def restore_units(self, result, k):
        """A :class:`SolverResult` of :meth:`normalized`'s problem in the
        units of the original ``X``: ``M = B / 2^{2k}``; objective,
        certificate and multipliers are unchanged (see :meth:`normalized`).

        Raises
        ------
        ValueError
            Naming ``X`` when the metric is not representable in X's units
            (its largest entry overflows or falls below the smallest normal
            float, where its entries would lose their relative precision).
        """
        if k == 0:
            return result
        with np.errstate(over="ignore", under="ignore"):
            M = np.ldexp(result.M, -2 * k)
        top = float(np.max(np.abs(M)))
        # the zero matrix (a run stopped by its budget at the start) is
        # representable at any scale
        if not (np.isfinite(top) and (top == 0.0 or top >= np.finfo(float).tiny)):
            raise ValueError(
                f"X: the pair lengths are about 2^{k}; the learned metric's "
                f"entries (about 2^{-2 * k} in these units) are outside the "
                f"floating-point range. Rescale X."
            )
        info = dict(result.info)
        if "a" in info:
            with np.errstate(under="ignore"):
                info["a"] = np.ldexp(info["a"], -2 * k)
        info["scale_exponent"] = k
        return replace(result, M=M, info=info)

    def with_lam(self, lam):
        """The same data with another ``lam`` (validated)."""
        lam = check_scalar(lam, "lam", low=0.0)
        return replace(self, lam=lam)

    # -- sizes -------------------------------------------------------------------

    @property
    def n_pairs(self):
        return len(self.pairs)

    @property
    def equation(self):
        """The paper's equation number (as a string) of this problem."""
        if self.diagonal:
            return "10" if self.hard else "10 (with Eq. 6's hinge)"
        return "1" if self.hard else "4 / 6"

    # -- feasibility ---------------------------------------------------------------

    def infeasible_pairs(self):
        """Rows of the cannot-links joining identical points (sorted)."""
        diff = self.X[self.pairs[self.cannot, 0]] - self.X[self.pairs[self.cannot, 1]]
        return self.cannot[~np.any(diff != 0, axis=1)]

    def check_feasible(self):
        """Raise :class:`InfeasibleError` when a cannot-link has ``phi = 0``.

        The test is exact (necessary and sufficient, see the module
        docstring), for the full and the diagonal problem alike.
        """
        rows = self.infeasible_pairs()
        if len(rows):
            raise InfeasibleError(
                f"Eq. {self.equation} is infeasible: {self._identical(rows)}")

    def _identical(self, rows):
        return (f"{len(rows)} cannot-link(s) join identical points "
                f"({_show_rows(rows, self.pairs)}); d_A(q, x) = 0 < 1 for every "
                f"metric A. Remove these pairs (or correct their labels).")

    def _short_pairs_hint(self):
        """Why a conic solve of a well-posed problem may fail: cannot-links
        far shorter than the median one ("" when there are none).

        A cannot-link of length ``l`` needs a metric of at least ``1 / l^2``
        along it, so one ``_SHORT`` times shorter than the median forces
        eigenvalues of the optimal metric ``1 / _SHORT^2`` times the typical
        one; an interior-point solver in double precision does not resolve
        both (measured: Eq. 4 fails from a ratio of about 1000).  The fast
        dual solver meets the short pair through one multiplier and
        certifies such problems up to the range :meth:`from_pairs` accepts.
        """
        diff = self.X[self.pairs[self.cannot, 0]] - self.X[self.pairs[self.cannot, 1]]
        norms = np.sqrt(np.einsum("pd,pd->p", diff, diff))
        ok = norms > 0
        if not np.any(ok):
            return ""
        median = float(np.median(norms[ok]))
        rows = self.cannot[ok & (norms < median / _SHORT)]
        if not len(rows):
            return ""
        ratio = median / float(np.min(norms[ok]))
        return (
            f"pairs: {len(rows)} cannot-link(s) are more than {_SHORT:g} times "
            f"shorter than the median cannot-link ({_show_rows(rows, self.pairs)}; "
            f"the shortest by a factor {ratio:.3g}): d_A >= 1 needs a metric of "
            f"at least 1 / length^2 along each, so the optimal metric's "
            f"eigenvalues span a range the conic solvers do not resolve. The "
            f"problem itself is well posed: solver='fast' certifies it; or drop "
            f"or merge these pairs.")

    def _certified_message(self, solver_message, ray_rows):
        """Message for an infeasibility certified by a conic solver (called
        only when the exact test confirms it)."""
        msg = f"Eq. {self.equation} is infeasible: {solver_message}"
        if ray_rows is not None and len(ray_rows):
            msg += (f" Its Farkas ray is supported on "
                    f"{_show_rows(ray_rows, self.pairs)}.")
        return msg + f" The exact test agrees: {self._identical(self.infeasible_pairs())}"

    # (n_features and the variable: as_variable, to_matrix, off_diagonal
    # from FullOrDiagonal)

    # -- primal ----------------------------------------------------------------------

    def distances(self, A):
        """``d_A(p)`` for every pair, shape (P,) (``A`` may be indefinite)."""
        a = self.as_variable(A)
        if self.diagonal:
            return self.Psi @ a
        return self.op.quadform(a)

    def loss(self, A=None, *, dist=None):
        """Must-link term: ``sum_S d_A`` (Eq. 1) or ``sum_S max(0, d_A - 1)``."""
        if dist is None:
            dist = self.distances(A)
        dm = dist[self.must]
        if self.hard:
            return float(np.sum(dm))
        return float(np.sum(np.maximum(dm - 1.0, 0.0)))

    def regularizer_value(self, A):
        """``||A||_F^2 / 2`` (``||a||^2 / 2``), without ``lam``."""
        a = self.as_variable(A)
        return 0.5 * float(np.sum(a * a))

    def objective(self, A, *, dist=None):
        """The paper's objective at ``A`` (constraints not checked)."""
        return self.loss(A, dist=dist) + self.lam * self.regularizer_value(A)

    def violation(self, A, *, dist=None):
        """``(max_violation, min_eig)``.

        ``max_violation`` is the largest of: cannot-link violations
        ``max(0, 1 - d_A(p))``, the cone violation ``max(0, -min_eig)``, and
        for diagonal problems the off-diagonal magnitude of a matrix ``A``.
        ``min_eig`` is the smallest eigenvalue of ``A`` (``min(a)``).
        """
        a = self.as_variable(A)
        if dist is None:
            dist = self.distances(a)
        if self.diagonal:
            min_eig = float(np.min(a))
        else:
            min_eig = float(np.linalg.eigvalsh(a)[0])
        viol = max(0.0, -min_eig, float(np.max(1.0 - dist[self.cannot])),
                   self.off_diagonal(A))
        return viol, min_eig

    def feasible_objective(self, A, tol_feas=1e-7):
        """The objective, or ``+inf`` when ``A`` violates a constraint by more
        than ``tol_feas * max(1, |objective|)`` (the extended-value objective
        of a hard-constrained problem; used by ``cvxmetric verify``)."""
        a = self.as_variable(A)
        dist = self.distances(a)
        obj = self.objective(a, dist=dist)
        viol, _ = self.violation(A, dist=dist)
        return obj if viol <= tol_feas * max(1.0, abs(obj)) else np.inf

    # -- dual ------------------------------------------------------------------------

    def clip(self, u):
        """Project multipliers on their box."""
        return np.clip(u, self.lower, self.upper)

    def Y_of(self, u):
        """``Y(u) = sum_p s_p u_p C_p``: (d, d), or ``Psi^T (s u)`` (d,)."""
        w = self.sign * u
        if self.diagonal:
            return self.Psi.T @ w
        Y = self.op.gram(w)
        return 0.5 * (Y + Y.T)

    def primal_of(self, Y):
        """``(A(u), ||Pi_+(Y)||^2, G)``: the Lagrangian minimiser for ``lam > 0``.

        ``G`` is a factor with ``A = G G^T`` (``None`` for diagonal problems)
        for cheap distances.
        """
        if self.diagonal:
            pos = np.maximum(Y, 0.0)
            return pos / self.lam, float(pos @ pos), None
        w, V = eigh_psd(Y)
        keep = w > 0
        G = V[:, keep] * np.sqrt(w[keep])  # Pi_+(Y) = G G^T
        return (G @ G.T) / self.lam, float(np.sum(w[keep] ** 2)), G / np.sqrt(self.lam)

    def dual_value(self, u):
        """``g(u)`` for ``lam > 0`` (``u`` clipped to its box)."""
        u = self.clip(u)
        _, sq, _ = self.primal_of(self.Y_of(u))
        return float(self.b @ u) - sq / (2.0 * self.lam)

    def dual_bound(self, u):
        """A valid lower bound on the optimal value from multipliers ``u``.

        ``lam > 0``: the best of ``g(clip(u))``, ``g`` at ``u`` repaired as
        below (values of the dual function at points of the box, valid with
        no tolerance) and, when the repaired ``v`` passes the round-off test
        of ``Y(v) <= 0`` below, ``b^T v <= g(v)``.  The repair matters when
        ``lam`` is tiny (large data, see :meth:`normalized`): there ``g``
        charges ``||Pi_+(Y(u))||^2 / (2 lam)`` for any positive part of
        ``Y(u)``, and a ``u`` that is nearly optimal for a larger ``lam``
        gives a poor bound until repaired.

        ``lam = 0``: ``g`` is finite only when ``Y(u) <= 0``, i.e. ``T <= B``
        for ``T = sum_D theta_p C_p`` and ``B = sum_S beta_p C_p``.  The
        repair: cannot-links not in the range of ``B`` get ``theta_p = 0``
        (their optimal multiplier is 0), and the rest is scaled,
        ``theta / t`` with ``t >= 1`` the smallest scale making
        ``T / t <= B``, tested up to round-off; the bound is then
        ``sum theta / t - sum beta`` (``- 0`` in Eq. 1).
        """
        u = self.clip(u)
        if self.lam > 0:
            bound = self.dual_value(u)
            repaired = self._nsd_repair(u)
            if repaired is not None:
                v, ok = repaired
                bound = max(bound, self.dual_value(v))
                if ok:
                    # Y(v) <= 0 up to round-off: g(v) >= b^T v (the lam = 0
                    # rule).  Needed at tiny lam, where ||Pi_+(Y)||^2 / (2 lam)
                    # of a round-off-sized positive part is huge
                    bound = max(bound, float(self.b @ v))
            return bound
        lin_beta = float(self.b[self.must] @ u[self.must])  # -sum beta (0 in Eq. 1)
        repaired = self._nsd_repair(u)
        if repaired is None:
            return lin_beta
        v, ok = repaired
        if not ok:
            return -np.inf
        return float(np.sum(v[self.cannot])) + lin_beta

    def _nsd_repair(self, u):
        """``(v, ok)``: ``u`` with ``theta`` repaired towards ``Y(v) <= 0``
        (see :meth:`dual_bound`), ``ok`` when ``Y(v) <= 0`` holds up to
        round-off; ``None`` when ``u`` has no cannot-link multiplier."""
        theta = np.where(self.sign > 0, u, 0.0)
        beta = np.where(self.sign < 0, u, 0.0)
        if not np.any(theta):
            return None
        if self.diagonal:
            B = self.Psi.T @ beta
            scale = max(float(B.max()), 1e-300)
            null = B <= 1e-12 * scale
            # cannot-links touching an unpenalised coordinate get theta = 0
            touch = (self.Psi[:, null] > 0).any(axis=1) if np.any(null) else \
                np.zeros(self.n_pairs, bool)
            theta = np.where(touch, 0.0, theta)
            if not np.any(theta):
                return beta, True
            T = self.Psi.T @ theta
            ratio = np.where(null, 0.0, T / np.where(null, 1.0, B))
            t = max(1.0, float(ratio.max()))
            return theta / t + beta, True
        B = self.op.gram(beta)
        B = 0.5 * (B + B.T)
        w, U = np.linalg.eigh(B)
        scale = max(float(w[-1]), 1e-300)
        rng = w > 1e-10 * scale
        Ur, Un = U[:, rng], U[:, ~rng]
        if Un.shape[1]:
            Phi = self.X[self.pairs[:, 0]] - self.X[self.pairs[:, 1]]  # (P, d)
            out = np.einsum("pk,pk->p", Phi @ Un, Phi @ Un)
            norm2 = np.einsum("pd,pd->p", Phi, Phi)
            theta = np.where(out > 1e-10 * norm2, 0.0, theta)
        if not np.any(theta) or not np.any(rng):
            return beta, True
        T = self.op.gram(theta)
        T = 0.5 * (T + T.T)
        # generalised eigenvalue on range(B): largest of B_r^{-1/2} T_r B_r^{-1/2}
        Wr = Ur / np.sqrt(w[rng])
        t = max(1.0, float(np.linalg.eigvalsh(Wr.T @ T @ Wr)[-1]))
        # the repaired point must satisfy T / t <= B up to round-off
        tol = 1e-12 * max(scale, float(np.abs(T).max()))
        ok = bool(np.linalg.eigvalsh(B - T / t)[0] >= -tol * max(1.0, t))
        return theta / t + beta, ok

    def consistent_multipliers(self, u, A, dist=None):
        """``u`` made consistent with ``A``: ``theta = 0`` on inactive
        cannot-links, ``beta = 1`` (0) where the hinge is active (inactive),
        ``u`` kept on the margins.  A dual point like any other."""
        if dist is None:
            dist = self.distances(A)
        u = self.clip(u).copy()
        c, m = self.cannot, self.must
        u[c] = np.where(dist[c] > 1 + _MARGIN_TOL, 0.0, u[c])
        if not self.hard:
            dm = dist[m]
            u[m] = np.where(dm > 1 + _MARGIN_TOL, 1.0,
                            np.where(dm < 1 - _MARGIN_TOL, 0.0, u[m]))
        return u

    def best_dual_bound(self, u, A):
        """The better of the bounds from ``u`` and from ``u`` made consistent
        with ``A``; both are valid."""
        u = self.clip(u)
        bound = self.dual_bound(u)
        u2 = self.consistent_multipliers(u, A)
        if not np.array_equal(u2, u):
            bound = max(bound, self.dual_bound(u2))
        return bound

    def multipliers(self, theta, beta=None):
        """Assemble ``u`` (P,) from cannot-link ``theta`` and must-link ``beta``
        (``None``: 1, as in Eq. 1)."""
        u = np.ones(self.n_pairs)
        u[self.cannot] = np.ravel(theta)
        if beta is not None:
            u[self.must] = np.ravel(beta)
        return u

    def certificate(self, A, u, *, solver, solver_version="", tolerances=None,
                    times=None, tol_gap=_GAP, tol_feas=_FEAS):
        """Certificate of ``A`` with the dual bound from multipliers ``u``."""
        a = self.as_variable(A)
        dist = self.distances(a)
        obj = self.objective(a, dist=dist)
        viol, min_eig = self.violation(A, dist=dist)
        bound = self.best_dual_bound(u, a) if u is not None else -np.inf
        return Certificate.from_bound(
            obj, bound, max_violation=viol, min_eig=min_eig,
            solver=solver, solver_version=solver_version, tolerances=tolerances,
            times=times, tol_gap=tol_gap, tol_feas=tol_feas)


# ---------------------------------------------------------------------------
# Exact: the CVXPY problems
# ---------------------------------------------------------------------------


def _feature_exponents(data):
    """Exponents ``e`` (int, (d,)) of the exact model's scaling ``D = 2^e``.

    ``D_j`` is the root mean square of feature ``j`` of the cannot-links'
    differences, rounded to a power of two: after dividing by ``D`` every
    feature has size about 1 on the cannot-links.  A feature no cannot-link
    moves takes its root mean square over all pairs, and ``D_j = 1`` when
    no pair moves it.  Any positive ``D`` gives the same problem (see
    :class:`ConstraintDMLModel`); the choice only conditions it.
    """
    X, pairs = data.X, data.pairs
    diff = X[pairs[:, 0]] - X[pairs[:, 1]]
    e, live = pow2_rms_exponents(diff[data.cannot])
    e_all, _ = pow2_rms_exponents(diff)
    e = np.where(live, e, e_all)
    return np.clip(e, -_EXP_MAX, _EXP_MAX)


def _sqdist_expr(A, Phi):
    """Vectorised ``phi_p^T A phi_p`` for the rows of ``Phi`` (n_pairs, d)."""
    return cp.sum(cp.multiply(Phi @ A, Phi), axis=1)


class ConstraintDMLModel:
    """Eq. 1 / 4 / 6 / 10 as the exact solver's CVXPY problem.

    The solver's internal model: it is solved in normalised units
    (:meth:`ConstraintData.normalized`) with the objective divided by
    ``max(1, lam)``, and in per-feature scaled coordinates (below).  The
    problem as the paper prints it, in the user's units, is
    :func:`declared_problem`.

    **Per-feature scaling.**  The normalisation divides ``X`` by one
    power of two; features of very different sizes (raw data whose columns
    span 0.1 to 1000) still leave an optimal ``A`` whose entries span many
    orders of magnitude, which an interior-point solver does not resolve to
    the package's tolerance.  The model therefore has the variable
    ``B = D A D`` with ``D = diag(2^e)`` (:func:`_feature_exponents`: the
    cannot-links' root mean square per feature, a power of two, so the
    change is exact): the distances are those of ``B`` over the scaled
    differences ``Phi D^{-1}``, the must-link constant is
    ``D^{-1} Sigma_S D^{-1}``, the regulariser
    ``(lam/2) ||D^{-1} B D^{-1}||_F^2`` is written
    ``sum_squares(multiply(w w^T, B))`` with ``w = 1 / diag(D)``, and
    ``B >> 0`` is ``A >> 0`` by congruence (diagonal: ``a = b / D^2``,
    ``psi_p / D^2``, ``(lam/2) ||b / D^2||^2``, ``b >= 0``).  The
    constraints are the same functions of the metric, so their multipliers
    ``u`` and the dual bound are unchanged.  :meth:`metric` maps ``B``
    back after repairing it onto its cone, and every certificate is of
    that ``A``, in the normalised units.

    The model, with ``Phi_S``, ``Phi_D`` the difference vectors of the
    must- and cannot-links, ``d_A = rowsum((Phi A) * Phi)`` (full) or
    ``Psi a`` (diagonal, ``Psi = Phi * Phi``)::

        Eq. 1 / 10:  min  <Sigma_S, A> + (lam/2) ||A||_F^2
                     s.t. d_A(D) >= 1,  A >> 0   (a >= 0)
        Eq. 4:       min  1^T eps + (lam/2) ||A||_F^2
                     s.t. d_A(S) <= 1 + eps,  eps >= 0,  d_A(D) >= 1,  A >> 0
        Eq. 6:       min  1^T pos(e) + (lam/2) ||A||_F^2
                     s.t. e == d_A(S) - 1,  d_A(D) >= 1,  A >> 0

    with ``Sigma_S = sum_S C_p = X^T L_S X`` (one (d, d) constant for the
    whole must-link term of Eq. 1; ``sum_S psi_p`` in the diagonal case).
    Changes from the paper, all without effect on the optimum: Eq. 4's
    strict ``d < 1 + eps`` is written ``<=`` (the closure; the infimum is
    the same and is then attained); ``A`` is a symmetric variable with an
    explicit ``A >> 0`` so that the cone has a dual; Eq. 6's hinge is
    applied to an auxiliary ``e`` tied to the distances by an equality,
    whose multiplier is the hinge's subgradient ``beta in [0, 1]`` (the
    objective is still the hinge itself); ``lam`` is a ``cp.Parameter``
    (the problem is DPP) so that :meth:`set_lam` re-solves without
    recompiling.  For Eq. 1 (``data.hard``) the two forms are the same
    model.

    Parameters
    ----------
    data : ConstraintData
    form : {"slack", "hinge"}
        Eq. 4 or Eq. 6 for ``hard=False``.

    Attributes
    ----------
    problem : cvxpy.Problem
    A : cvxpy.Variable
        The scaled variable ``B`` (``b``): (d, d) symmetric, or (d,) for
        diagonal problems; :meth:`metric` gives ``A`` (``a``).
    exponents : ndarray of int, shape (d,)
        ``D = diag(2^exponents)``.
    weight, lam : cvxpy.Parameter
        ``1 / c`` and ``lam / c`` with ``c = max(1, lam)``: the objective
        divided by ``c`` (same minimiser; the multipliers are the constraints'
        duals times ``c``).
    constraints : dict of cvxpy.Constraint
        ``cannot``, ``must`` (Eq. 4 / 6 only), ``cone``.
    """

    def __init__(self, data, form="slack", *, basis=None):
        check_option(form, "form", FORMS)
        self.data = data
        self.form = form
        d = data.n_features
        X, pairs = data.X, data.pairs
        # per-feature powers of two D (exact): the variable is B = D A D and
        # the differences Phi D^{-1}, so that every feature of the scaled
        # differences has the same size on the cannot-links
        self.exponents = _feature_exponents(data)
        if basis is None:
            self._V, w = None, np.ldexp(1.0, -self.exponents)  # 1 / D
        else:
            # A = V diag(w) B diag(w) V^T (refined)
            self._V, w = basis
        self._w = w
        with np.errstate(under="ignore"):
            diff = X[pairs[:, 0]] - X[pairs[:, 1]]
            if self._V is not None:
                diff = diff @ self._V
            diff = diff * w  # (P, d), Phi V diag(w)
        # the objective is divided by c = max(1, lam), so that neither term
        # carries a weight above 1 (a large lam -- tiny data, see
        # ConstraintData.normalized -- otherwise defeats the conic solvers);
        # the multipliers are the duals times c
        self.weight = cp.Parameter(nonneg=True, name="weight")
        self.lam = cp.Parameter(nonneg=True, name="lam")
        self._set_weights(data.lam)
        cons = {}
        if data.diagonal:
            B = cp.Variable(d, name="b")
            w2 = w * w  # a = b / D^2
            with np.errstate(under="ignore"):
                Psi = data.Psi * w2  # psi_p / D^2: psi_p^T a = (psi_p / D^2)^T b

            def dist(rows):
                return Psi[rows] @ B

            cons["cone"] = B >= 0
            A_of_B = cp.multiply(w2, B)
        else:
            B = cp.Variable((d, d), symmetric=True, name="B")

            def dist(rows):
                return _sqdist_expr(B, diff[rows])

            cons["cone"] = B >> 0  # B PSD <=> A = D^{-1} B D^{-1} PSD
            A_of_B = cp.multiply(np.outer(w, w), B)
        self.A = B
        cons["cannot"] = dist(data.cannot) >= 1
        self.eps = None
        loss = 0
        m = data.must
        if data.hard:
            if len(m):
                if data.diagonal:
                    loss = Psi[m].sum(axis=0) @ B
                else:
                    u = np.zeros(data.n_pairs)
                    u[m] = 1.0
                    Sigma = data.op.gram(u)
                    Sigma = 0.5 * (Sigma + Sigma.T)
                    if self._V is not None:
                        Sigma = self._V.T @ Sigma @ self._V
                    # <Sigma, A> = <diag(w) V^T Sigma V diag(w), B>
                    Sigma = Sigma * np.outer(w, w)
                    loss = cp.sum(cp.multiply(Sigma, B))
        elif len(m):
            if form == "slack":
                self.eps = cp.Variable(len(m), nonneg=True, name="eps")
                cons["must"] = dist(m) <= 1 + self.eps
                loss = cp.sum(self.eps)
            else:
                self.eps = cp.Variable(len(m), name="e")
                cons["must"] = dist(m) - 1 == self.eps
                loss = cp.sum(cp.pos(self.eps))
        self.constraints = cons
        reg = 0.5 * self.lam * cp.sum_squares(A_of_B)  # (lam/2) ||A||_F^2
        self.problem = cp.Problem(
            cp.Minimize(self.weight * loss + reg if len(m) else reg),
            list(cons.values()))
        assert self.problem.is_dpp(), "the constraint-based model must be DPP"

    def metric(self):
        """``A`` (or ``a``) of the last solve, in the data's units, or ``None``.

        ``B`` is first repaired onto its cone (negative eigenvalues of the
        symmetrised ``B`` clipped; ``max(b, 0)``): ``A = D^{-1} B_+ D^{-1}``
        is then PSD by congruence, where ``D^{-1} B D^{-1}`` would amplify a
        round-off eigenvalue of ``B`` by up to ``max(1 / D)^2``.  Clipping
        adds a PSD matrix, so no distance decreases and no satisfied
        cannot-link is broken.
        """
        value = self.A.value
        if value is None:
            return None
        w = self._w
        b = np.asarray(value, dtype=float)
        with np.errstate(under="ignore"):
            if self.data.diagonal:
                return np.maximum(b, 0.0) * (w * w)
            lo, V = np.linalg.eigh(0.5 * (b + b.T))
            if lo[0] < 0:
                keep = lo > 0
                G = V[:, keep] * np.sqrt(lo[keep])
                b = G @ G.T
            else:
                b = 0.5 * (b + b.T)
            a = b * np.outer(w, w)
            if self._V is not None:
                a = self._V @ a @ self._V.T
                a = 0.5 * (a + a.T)
            return a

    def refined(self):
        """The same problem in the coordinates of this model's point, or
        ``None`` when it has none.

        With ``A = V diag(lambda) V^T`` the last solve's metric, the
        variable becomes ``B`` with ``A = V diag(s) B diag(s) V^T``,
        ``s = sqrt(max(lambda, 1e-10 lambda_max))``: the last point is
        ``B = I`` on its range, so an interior point whose metric spans
        many orders (a tiny ``lam`` that alone bounds the optimum along
        directions the must-links barely see) is solved again at unit
        scale.  ``||A||_F = ||diag(s) B diag(s)||_F`` (``V`` is
        orthogonal), so the regulariser keeps its weighted form; diagonal
        problems are rescaled without rotation (``a = s^2 b``).
        """
        a = self.metric()
        if a is None or not np.all(np.isfinite(a)):
            return None
        if self.data.diagonal:
            top = float(np.max(a))
            if not top > 0:
                return None
            s = np.sqrt(np.maximum(a, 1e-10 * top))
            return ConstraintDMLModel(self.data, self.form, basis=(None, s))
        lam_, V = np.linalg.eigh(a)
        if not lam_[-1] > 0:
            return None
        s = np.sqrt(np.maximum(lam_, 1e-10 * lam_[-1]))
        return ConstraintDMLModel(self.data, self.form, basis=(V, s))

    def set_lam(self, lam):
        """Change ``lam`` in place (validated; the canonical data follows)."""
        self.data = self.data.with_lam(lam)
        self._set_weights(self.data.lam)

    def _set_weights(self, lam):
        self._c = max(1.0, lam)
        self.weight.value = 1.0 / self._c
        self.lam.value = lam / self._c

    def multipliers(self):
        """Multipliers ``u`` (P,) from the constraints' dual values."""
        def dual(name):
            value = self.constraints[name].dual_value
            return None if value is None else self._c * np.asarray(value, dtype=float)

        beta = dual("must") if "must" in self.constraints else None
        theta = dual("cannot")
        if theta is None:
            return None
        return self.data.multipliers(theta, beta)

    def _ray_rows(self):
        """Cannot-links carrying a Farkas ray after an infeasible solve."""
        ray = self.constraints["cannot"].dual_value
        if ray is None:
            return None
        ray = np.abs(np.ravel(ray))
        if not np.any(ray > 0):
            return None
        return self.data.cannot[ray >= 1e-3 * ray.max()]

    def solve(self, *, solvers=SOLVERS, tol=1e-9, verbose=False):
        """Solve as declared; return a certified :class:`SolverResult`.

        Raises
        ------
        InfeasibleError
            When a conic solver certifies infeasibility and a cannot-link
            joins identical points; the message names the cannot-links on
            which its Farkas ray is supported.  A claim of infeasibility on
            a provably feasible problem (no such cannot-link) is numerical:
            the next solver is tried, and ``SolverError`` is raised when
            every solver makes it.
        CertificateError, SolverError
            As :func:`~cvxmetric._exact.solve_certified`.
        """
        data = self.data
        t0 = time.perf_counter()

        def certify(name, version, opts, times):
            return data.certificate(
                self.metric(), self.multipliers(), solver=name, solver_version=version,
                tolerances=opts, times=times,
            )

        def confirm(kind):
            # the exact test: A = t I is feasible unless a cannot-link joins
            # identical points, so a claim is proven or refuted on the data
            if kind == "infeasible":
                return bool(len(data.infeasible_pairs()))
            return None

        try:
            cert, info = solve_certified(self.problem, certify, solvers=solvers,
                                         tol=tol, verbose=verbose, confirm=confirm)
        except InfeasibleError as exc:
            raise InfeasibleError(
                data._certified_message(str(exc), self._ray_rows())) from exc
        except CertificateError as exc:
            hint = data._short_pairs_hint()
            if not hint:
                raise
            raise CertificateError(f"{exc} {hint}", getattr(exc, "result", None)) from exc
        except SolverError as exc:
            if "claimed the problem infeasible" not in str(exc):
                raise
            hint = data._short_pairs_hint() or "typically from badly scaled data (rescale X or lam)."
            raise SolverError(
                f"Eq. {data.equation}: {exc} The problem is feasible "
                f"(no cannot-link joins identical points, so A = t I is feasible "
                f"for t = 1 / min ||phi||^2): the certificate is numerical, {hint}"
            ) from exc
        a = self.metric()
        M = np.diag(a) if data.diagonal else a
        u = self.multipliers()
        out = {"u": u, "theta": u[data.cannot].copy(), "form": self.form,
               "attempts": info["attempts"], "equation": data.equation}
        if not data.hard:
            out["beta"] = u[data.must].copy()
        if data.diagonal:
            out["a"] = a.copy()
        return SolverResult(
            M=M, status=info["status"], objective=cert.objective, n_iter=info["n_iter"],
            certificate=cert, method="exact", info=out, time=time.perf_counter() - t0,
        )


def solve_constraint_exact(data, *, form="slack", precheck=True, solvers=SOLVERS,
                           tol=1e-9, verbose=False):
    """Certified exact solution of Eq. 1 / 4 / 6 / 10.

    Parameters
    ----------
    data : ConstraintData
    form : {"slack", "hinge"}
        Eq. 4 (slacks) or Eq. 6 (hinge) for ``hard=False``; the same
        optimum (Theorem 1).
    precheck : bool
        Run :meth:`ConstraintData.check_feasible` first (exact and cheap).
        ``False`` leaves infeasibility to the conic solver, which certifies
        it too (tested).
    solvers : sequence of str
        Clarabel first, SCS as fallback.
    tol : float
        Solver tolerance.

    Returns
    -------
    SolverResult
        ``method="exact"``; ``info`` holds the multipliers ``u`` (all
        pairs), ``theta`` (cannot-links), ``beta`` (must-links, Eq. 4 / 6)
        and ``a`` (diagonal problems).  ``M`` is ``diag(a)`` for diagonal
        problems.

    Raises
    ------
    InfeasibleError
        A cannot-link joins identical points (pre-check, or certified by
        the conic solver).
    """
    if precheck:
        data.check_feasible()
    # solved in units where the pair lengths are O(1) (the same problem with
    # lam / s^4, see ConstraintData.normalized), reported in X's units
    data_n, k = data.normalized()
    model = ConstraintDMLModel(data_n, form)
    first, rest = tuple(solvers[:1]), tuple(solvers[1:])
    try:
        result = model.solve(solvers=first, tol=tol, verbose=verbose)
    except (CertificateError, SolverError) as exc:
        # the first solver's point, when its certificate fails, gives the
        # coordinates to solve again in (ConstraintDMLModel.refined); then
        # the other solvers on the model as it was
        result = None
        refined = model.refined() if isinstance(exc, CertificateError) else None
        if refined is not None:
            try:
                result = refined.solve(solvers=first, tol=tol, verbose=verbose)
                result.info["refined"] = True
            except (CertificateError, SolverError):
                result = None
        if result is None:
            if not rest:
                raise
            result = model.solve(solvers=rest, tol=tol, verbose=verbose)
    return data_n.restore_units(result, k)


# ---------------------------------------------------------------------------
# The declared problem (cvxmetric.model's contract)
# ---------------------------------------------------------------------------


class _ConstraintDeclared(DeclaredProblem):
    """Eq. 1 / 4 / 6 / 10 as printed, in the user's units."""

    def _update_parameters(self, values):
        self.data = self.data.with_lam(values["lam"])  # ValueError naming lam

    def _family_objective(self, M):
        return self.data.objective(self.data.as_variable(M))

    def _family_certificate(self, M):
        theta = self._dual("cannot")
        u = None
        if theta is not None:
            # Eq. 4: beta = the multipliers of d <= 1 + eps; Eq. 1: beta = 1;
            # Eq. 6 (no such constraint): beta = 1, repaired towards the
            # subgradient of the hinge at M by best_dual_bound
            u = self.data.multipliers(theta, self._dual("must"))
        else:
            self._warn_no_multipliers()
        return self.data.certificate(M, u, **self._certificate_args())

    def _infeasible_hint(self):
        rows = self.data.infeasible_pairs()
        if len(rows):
            return " The exact test agrees: " + self.data._identical(rows)
        return ""


@fill_doc
def declared_problem(data, form="slack"):
    """Eq. 1 / 4 / 6 / 10 exactly as printed, in the user's units, unsolved.

    With ``d_A = rowsum((Phi A) * Phi)`` over the pairs' difference vectors
    (``d_a = (Phi * Phi) a`` when diagonal)::

        Eq. 1  (hard):             min  sum_S d_A + (lam/2) ||A||_F^2
                                   s.t. d_A(D) >= 1,  A PSD
        Eq. 4  (soft, "slack"):    min  sum_S eps + (lam/2) ||A||_F^2
                                   s.t. d_A(S) <= 1 + eps,  eps >= 0,
                                        d_A(D) >= 1,  A PSD
        Eq. 6  (soft, "hinge"):    min  sum_S max(0, d_A - 1) + (lam/2) ||A||_F^2
                                   s.t. d_A(D) >= 1,  A PSD
        Eq. 10 (diagonal):         the same with A = diag(a), a >= 0,
                                   (lam/2) ||a||^2

    Variables ``A`` (symmetric) or ``a`` (diagonal) and, for Eq. 4,
    ``eps``; the parameter ``lam``; constraints ``cannot``, ``must`` and
    ``slack`` (Eq. 4), ``psd`` or ``nonneg``.  Unlike
    :class:`ConstraintDMLModel` (the exact solver's model), the objective
    is not divided by ``max(1, lam)`` and ``X`` is not rescaled: the
    optimal value is the paper's.  The certificate's dual bound takes the
    multipliers of ``cannot`` (and ``must``) from the last solve.

    Parameters
    ----------
    data : ConstraintData
    form : {"slack", "hinge"}
        Eq. 4 or Eq. 6 when ``data.hard`` is False (Theorem 1: the same
        optimum); ignored for Eq. 1.

    {declared_returns_model}
    """
    check_instance(data, ConstraintData, "data")
    check_option(form, "form", FORMS)
    d = data.n_features
    X, pairs = data.X, data.pairs
    # [declare:constraintdml-eq1-4-6-10]
    diff = X[pairs[:, 0]] - X[pairs[:, 1]]  # (P, d)
    lam = cp.Parameter(nonneg=True, value=data.lam, name="lam")
    cons = {}
    variables = {}
    if data.diagonal:
        A = cp.Variable(d, name="a")
        Psi = diff * diff

        def dist(rows):
            return Psi[rows] @ A

        cone = ("nonneg", A >= 0)
        key = "a"
    else:
        A = cp.Variable((d, d), symmetric=True, name="A")

        def dist(rows):
            return _sqdist_expr(A, diff[rows])

        cone = ("psd", A >> 0)
        key = "A"
    variables[key] = A
    m = data.must
    loss = 0
    if data.hard:
        equation = "Eq. 10" if data.diagonal else "Eq. 1"
        if len(m):
            loss = cp.sum(dist(m))
    else:
        eq = "Eq. 4" if form == "slack" else "Eq. 6"
        equation = f"Eq. 10 with {eq}'s must-link term" if data.diagonal else eq
        if len(m):
            if form == "slack":
                eps = cp.Variable(len(m), name="eps")
                variables["eps"] = eps
                cons["must"] = dist(m) <= 1 + eps
                cons["slack"] = eps >= 0
                loss = cp.sum(eps)
            else:
                loss = cp.sum(cp.pos(dist(m) - 1))
    cons["cannot"] = dist(data.cannot) >= 1
    cons[cone[0]] = cone[1]
    problem = cp.Problem(cp.Minimize(loss + lam / 2 * cp.sum_squares(A)),
                         list(cons.values()))
    # [/declare]
    assert problem.is_dpp(), "the declared constraint-based problem must be DPP"
    return _ConstraintDeclared(
        family="constraintdml", paper=PAPER, equation=equation, problem=problem,
        variables=variables, parameters={"lam": lam}, constraints=cons,
        metric_key=key, data=data)

"""SLR's baselines: Euclid, LMNN, SLR-Whole (Eq. 3), SLR-Fixed (Eq. 2 target).

Qian, Baytas, Jin, Jain, Zhu (2015), Sec. "Experiments" and Fig. 2:

``Euclid``
    Ranking by the Euclidean distance ``||q - x||^2`` (smaller first):
    :func:`euclidean_scores` returns its negative, so that every method's
    scores rank "higher is better".  (The bilinear ``M = I``, the start of
    Algorithms 1 and 2, is a different ranking: ``q^T x`` ignores
    ``||x||``.)
``LMNN``
    The paper's LMNN column (Weinberger and Saul, JMLR 2009):
    :class:`cvxmetric.LMNN` at its defaults (``k = 3``, ``regularization =
    0.5``), certified, fitted on the training set in the span of its
    features (:func:`cvxmetric.experiments._lmnn.fit_lmnn`).  The paper set
    "the rank of the metric as 100" for the methods that optimise a
    low-rank factor: :func:`lmnn_baseline` keeps the certified metric's
    ``rank`` top eigen-directions when the data has more dimensions (LMNN's
    ``n_components``; the full metric otherwise).  It ranks by the learned
    squared distance, negated (:func:`lmnn_scores`).
``SLR-Whole``
    The closed form Eq. 3 on the fixed target Eq. 2, "the whole metric":
    ``M = X^+ D X^{+T}`` with ``D_ij = delta1`` on same-class pairs and
    ``delta2`` elsewhere (Eq. 2 is ``delta1 = 1, delta2 = 0``).  Because
    ``D = delta2 1 1^T + (delta1 - delta2) E E^T`` (``E`` the (n, c) class
    indicator), ``M = delta2 g g^T + (delta1 - delta2) G G^T`` with
    ``g = X^+ 1`` and ``G = X^+ E`` (d, c): ``O(n d min(n, d))`` for the SVD
    and ``O(n d c)`` after it; no ``n x n`` target.  On small data it equals
    :func:`cvxmetric.slr.eq3_closed_form` (the dense ``P D P^T`` form);
    this module's version is the one that scales.
``SLR-Fixed``
    Algorithm 3 (``M = L R^T``, rank ``r``) on the same fixed target: the
    low-rank alternating least squares of Eq. 7 without adaptive targets,
    :func:`cvxmetric.slr.lowrank.lowrank_slr` with ``target="fixed"``.
"""

import time

import numpy as np

from ..._validation import check_finite
from ...result import Certificate, SolverResult, Status
from ...slr.lowrank import lowrank_slr
from ...slr.randomized import (
    DEFAULT_BLOCK,
    OBJECTIVE_MAX_N,
    _check_int,
    _check_problem,
    _objective_report,
    _thin_svd,
)

__all__ = ["euclidean_scores", "lmnn_baseline", "lmnn_scores", "slr_whole",
           "slr_fixed"]

#: The paper's rank of the low-rank metrics (LMNN, FRML, SLR).
PAPER_RANK = 100


def euclidean_scores(X_query, X_items):
    """``-||q - x||^2`` (n_query, n_items): the Euclid baseline's ranking.

    Parameters
    ----------
    X_query : array_like of shape (n_query, d)
    X_items : array_like of shape (n_items, d)

    Returns
    -------
    ndarray of shape (n_query, n_items)
    """
    Q = check_finite(X_query, "X_query", ndim=2)
    T = check_finite(X_items, "X_items", ndim=2)
    if Q.shape[1] != T.shape[1]:
        raise ValueError(f"X_items: expected {Q.shape[1]} features to match "
                         f"X_query, got {T.shape[1]}.")
    sq = np.einsum("ij,ij->i", T, T)
    # ||q||^2 is constant per query: it does not change the ranking, but it
    # is kept so that the value is the true negative squared distance
    return 2.0 * (Q @ T.T) - sq[None, :] - np.einsum("ij,ij->i", Q, Q)[:, None]


def lmnn_baseline(X, y, rank=PAPER_RANK, **kwargs):
    """The LMNN column: the certified LMNN metric, at most rank ``rank``.

    Parameters
    ----------
    X : array_like of shape (n, d)
        Training samples.
    y : array_like of shape (n,)
    rank : int
        The top eigen-directions kept when the span of ``X`` has more
        (LMNN's ``n_components``, after the certified full metric).
    **kwargs
        To :func:`cvxmetric.experiments._lmnn.fit_lmnn` (``k``,
        ``regularization``, ``solver``, ``max_time``).

    Returns
    -------
    LMNNFit
        ``L`` ranks by ``-|L q - L x|^2`` (:func:`lmnn_scores`); ``status``
        is ``"optimal"`` when the full metric is certified.
    """
    from .._lmnn import fit_lmnn

    return fit_lmnn(X, y, n_components=rank, **kwargs)


def lmnn_scores(X_query, X_items, L):
    """``-|L q - L x|^2`` (n_query, n_items): the LMNN column's ranking.

    Parameters
    ----------
    X_query : array_like of shape (n_query, d)
    X_items : array_like of shape (n_items, d)
    L : array_like of shape (c, d)
        :attr:`LMNNFit.L`.

    Returns
    -------
    ndarray of shape (n_query, n_items)
    """
    L = check_finite(L, "L", ndim=2)
    Q = check_finite(X_query, "X_query", ndim=2)
    T = check_finite(X_items, "X_items", ndim=2)
    for name, A in (("X_query", Q), ("X_items", T)):
        if A.shape[1] != L.shape[1]:
            raise ValueError(f"{name}: expected {L.shape[1]} features to match L, "
                             f"got {A.shape[1]}.")
    return euclidean_scores(Q @ L.T, T @ L.T)


def slr_whole(X, y, delta1=1.0, delta2=0.0, *, objective_max_n=OBJECTIVE_MAX_N,
              evaluate=True, block=DEFAULT_BLOCK, random_state=None):
    """SLR-Whole: Eq. 3, ``M = X^+ D X^{+T}``, from class sums.

    Parameters
    ----------
    X : array_like of shape (n, d)
    y : array_like of int, shape (n,)
    delta1, delta2 : float
        The fixed target's values (Eq. 2: 1 and 0), ``delta1 > delta2``.
    objective_max_n : int or None
        Above this ``n``, ``info["eq4_objective"]`` is NaN and a row-sampled
        estimate is given (see
        :func:`~cvxmetric.slr.randomized.randomized_slr`).
    evaluate : bool
        Compute ``info["eq4_objective"]`` at all (False: NaN, no pass).
    block : int
    random_state : int, RandomState or None
        Only for the rows of that estimate.

    Returns
    -------
    SolverResult
        ``M`` (d, d), symmetric.  ``objective`` is Eq. 1,
        ``||X M X^T - D||_F^2``, recomputed from ``M``; the certificate's
        lower bound is the optimum of Eq. 1 by Pythagoras,
        ``||D||_F^2 - ||U^T D U||_F^2`` (``X = U S V^T``), so
        ``status`` is ``optimal`` when they agree.  ``info``:
        ``eq4_objective``, ``G`` (``X^+ E``), ``g`` (``X^+ 1``).
    """
    from sklearn.utils import check_random_state

    t_start = time.perf_counter()
    X, codes, delta1, delta2 = _check_problem(X, y, delta1, delta2, "slr_whole")
    if objective_max_n is not None:
        objective_max_n = _check_int(objective_max_n, "objective_max_n", 0)
    block = _check_int(block, "block", 1)
    n, d = X.shape
    n_classes = int(codes.max()) + 1
    E = np.zeros((n, n_classes))
    E[np.arange(n), codes] = 1.0
    _, s, Vt = _thin_svd(X, need_u=False)
    # U^T Z = s^{-1} V^T X^T Z: the (n, r) factor U is never formed
    UE = (Vt @ (X.T @ E)) / s[:, None]  # (r, c)
    U1 = (Vt @ X.sum(axis=0)) / s  # (r,) = U^T 1
    G = Vt.T @ (UE / s[:, None])  # (d, c) = X^+ E
    g = Vt.T @ (U1 / s)  # (d,) = X^+ 1
    gap_ = delta1 - delta2
    M = delta2 * np.outer(g, g) + gap_ * (G @ G.T)
    # Eq. 1 at M from factors: X M X^T = delta2 (Xg)(Xg)^T + gap (XG)(XG)^T
    Pf = np.hstack([X @ g[:, None], X @ G])  # (n, c + 1)
    w = np.concatenate([[delta2], np.full(n_classes, gap_)])
    PtP = Pf.T @ Pf
    kk = float(np.sum((PtP * w[:, None]) * (PtP * w[None, :])))  # ||K||_F^2
    counts = np.bincount(codes, minlength=n_classes).astype(float)
    # K = sum_a w_a p_a p_a^T, so <K, D> = sum_a w_a p_a^T D p_a with
    # p^T D p = delta2 (1^T p)^2 + gap ||E^T p||^2
    EP = E.T @ Pf  # (c, c + 1)
    pdp = delta2 * Pf.sum(axis=0) ** 2 + gap_ * np.sum(EP * EP, axis=0)
    kd = float(w @ pdp)
    dd = delta2 ** 2 * n ** 2 + (delta1 ** 2 - delta2 ** 2) * float(np.sum(counts ** 2))
    eq1 = max(0.0, kk - 2.0 * kd + dd)
    # optimum of Eq. 1: ||D||^2 - ||U^T D U||^2, U^T D U = delta2 u u^T + gap UE UE^T
    UDU = delta2 * np.outer(U1, U1) + gap_ * (UE @ UE.T)
    opt = max(0.0, dd - float(np.sum(UDU * UDU)))
    eq4, oinfo = _objective_report(X, codes, M, np.eye(d), delta1, delta2,
                                   objective_max_n=objective_max_n,
                                   rng=check_random_state(random_state),
                                   block=block, evaluate=evaluate)
    from ... import __version__

    total = time.perf_counter() - t_start
    cert = Certificate.from_bound(
        eq1, opt, max_violation=0.0, min_eig=float("nan"), solver="slr-whole",
        solver_version=__version__, times={"total": total})
    status = Status.OPTIMAL if cert.passed else Status.OPTIMAL_INACCURATE
    info = {"algorithm": "Eq. 3 (closed form on the Eq. 2 target)",
            "problem": "Eq. 1 (fixed Eq. 2 target)", "eq4_objective": eq4,
            "G": G, "g": g, "rank_X": int(s.size)}
    info.update(oinfo)
    return SolverResult(M=M, status=status, objective=eq1, n_iter=1,
                        certificate=cert, method="slr-whole", info=info,
                        time=total)


def slr_fixed(X, y, rank, n_iter=10, delta1=1.0, delta2=0.0, random_state=None,
              **kwargs):
    """SLR-Fixed: Algorithm 3 on the fixed Eq. 2 target (Eq. 1, ``M = L R^T``).

    ``lowrank_slr(..., target="fixed")``; see
    :func:`~cvxmetric.slr.lowrank.lowrank_slr` for the parameters and the
    result (``objective`` is Eq. 1, ``info["eq4_objective"]`` Eq. 4).
    """
    return lowrank_slr(X, y, rank, n_iter=n_iter, delta1=delta1, delta2=delta2,
                       random_state=random_state, target="fixed", **kwargs)

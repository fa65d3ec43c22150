"""The papers' LMNN baseline: cvxmetric's certified LMNN, fitted in the span
of the training data.

The OMDML paper (Table 2, -B / -C / -U fusions) and the SLR paper (Tables
1-3) compare against LMNN (Weinberger and Saul, "Distance metric learning
for large margin nearest neighbor classification", JMLR 2009).  Here it is
:class:`cvxmetric.LMNN` at its defaults (``k = 3`` target neighbours,
``regularization = 0.5``, the certified solver), with one reduction that
changes no optimum:

* **The span of the training data.**  LMNN's objective depends on ``M``
  only through the differences ``x_i - x_j`` of training samples, which
  lie in the span ``B`` of the centred training data: with ``X B`` (``B``
  of shape ``(d, r)``, orthonormal, ``r`` the numerical rank), the optimum
  over ``M_r`` (``r x r``) is the optimum over ``M = B M_r B^T`` and has the
  same certificate.  Features that sum to a constant (a histogram's bins)
  or never vary (blank pixels) leave such a null direction; the reduction
  removes it before the solver sees it, and the metric ranks any other
  sample by its component in the span.
* **The rank.**  ``n_components`` (the SLR paper's rank 100 for the
  methods that "can optimize the low rank part of the metric") keeps that
  many top eigen-directions of the certified ``M``, as
  :class:`cvxmetric.LMNN` documents; at or above ``r`` the full ``M``.
"""

import time
from typing import NamedTuple

import numpy as np

from .._linalg import span_basis
from .._validation import check_finite

__all__ = ["LMNNFit", "fit_lmnn", "summary", "training_span"]


class LMNNFit(NamedTuple):
    """What :func:`fit_lmnn` learned and how the solve ended."""

    #: ``(c, d)`` factor: the learned squared distance is ``|L a - L b|^2``
    L: np.ndarray
    #: the estimator's ``status_`` (``"optimal"``: certified)
    status: str
    #: certified relative gap of the full metric
    rel_gap: float
    #: Eq. 13's objective at the certified metric
    objective: float
    #: ``r``, the dimension LMNN was solved in (the span of the data)
    span: int
    #: the solver that ran (``exact`` or ``fast`` under ``auto``)
    method: str
    #: wall-clock seconds of the fit (the span included)
    seconds: float

    @property
    def M(self):
        """The learned ``(d, d)`` metric ``L^T L``."""
        return self.L.T @ self.L


def training_span(X):
    """Orthonormal ``(d, r)`` basis of the span of the centred rows of ``X``.

    ``r`` is the numerical rank: singular values above
    ``s_max max(n, d) eps`` (numpy's ``matrix_rank`` rule).
    """
    B = span_basis(check_finite(X, "X", ndim=2))
    if B.shape[1] == 0:
        raise ValueError("X: every training sample is the same point; LMNN has "
                         "nothing to learn.")
    return B


def fit_lmnn(X, y, *, k=3, regularization=0.5, n_components=None, solver="auto",
             max_time=None):
    """cvxmetric's LMNN on ``(X, y)``, solved in the span of ``X``.

    Parameters
    ----------
    X : array_like of shape (n, d)
    y : array_like of shape (n,)
    k : int
        Target neighbours.
    regularization : float in (0, 1)
        metric-learn's weight of the pull term (``mu = 1 - regularization``).
    n_components : int, optional
        Keep this many top eigen-directions of the certified metric (no
        effect at or above the span's dimension).
    solver : {"auto", "exact", "fast", "subgradient"}
    max_time : float, optional
        Wall-clock budget of the fast solvers (a solve it stops says so in
        ``status``).

    Returns
    -------
    LMNNFit
        A fit that ends without ``optimal`` also warns ``ConvergenceWarning``
        (from the estimator).
    """
    from ..lmnn.estimator import LMNN

    t0 = time.perf_counter()
    X = check_finite(X, "X", ndim=2)
    B = training_span(X)
    r = B.shape[1]
    keep = None if n_components is None or n_components >= r else n_components
    est = LMNN(k=k, regularization=regularization, solver=solver, n_components=keep,
               max_time=max_time)
    est.fit(X @ B, y)
    L = est.components_ @ B.T
    return LMNNFit(L=L, status=str(est.status_), rel_gap=float(est.certificate_.rel_gap),
                   objective=float(est.objective_), span=r, method=str(est.result_.method),
                   seconds=time.perf_counter() - t0)


def summary(fits):
    """One line: how many of the :class:`LMNNFit` ``fits`` are certified
    optimal, their statuses, the largest certified gap, the dimension they
    were solved in and the rank kept."""
    ok = sum(f.status == "optimal" for f in fits)
    return (f"LMNN: {ok}/{len(fits)} fits certified optimal "
            f"({', '.join(sorted({f.status for f in fits}))}; largest certified gap "
            f"{max(f.rel_gap for f in fits):.1e}; solved in {fits[0].span} of "
            f"{fits[0].L.shape[1]} dimensions, rank {fits[0].L.shape[0]})")

"""The OMDML estimator: online multi-modal metric learning on views.

:class:`OMDML` learns one Mahalanobis metric per view (modality) and a
Hedge combination ``theta`` of them, from triplets ``(p, p+, p-)`` given as
indices into the views.  ``rank=None`` runs Algorithm 1 (OMDML, full PSD
matrices), an integer runs Algorithm 2 (LOMDML, ``M_i = W_i^T W_i`` of
rank ``rank``); ``solver="exact"`` solves Eq. 3 at a fixed ``theta``
(uniform by default) with the certified CVXPY path instead.  Its input is
a list of views, so it is not a scikit-learn ``fit(X, y)`` estimator; it
follows the conventions (``__init__`` stores, parameters validated in
``fit``, ``_``-suffixed fitted attributes, ``get_params`` / ``clone``).
"""

import dataclasses
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._base import FitMixin, components_from_metric, solver_names, store_arguments
from .._docs import fill_doc
from .._solver import conic_verbose
from .._validation import check_indices
from ..result import Status
from ._problem import OMDMLData, check_theta, check_views
from .exact import declared_problem, solve_exact
from .fast import LowRankOMDML, OMDMLOnline, check_ranks

__all__ = ["OMDML"]


@fill_doc
class OMDML(FitMixin, BaseEstimator):
    """Online multi-modal distance metric learning (Wu, Hoi et al. 2016).

    The combined distance is ``d(p, q) = sum_i theta_i (x_p - x_q)^T M_i
    (x_p - x_q)`` over the views ``i``; Eq. 3 is

        min_theta min_{M_i PSD} 0.5 sum_i ||M_i||_F^2
                                + C sum_t max(0, d(p, p+) - d(p, p-) + 1).

    Parameters
    ----------
    C : float > 0, default=1.0
    beta : float in (0, 1), default=0.5
        Hedge discount (Eq. 6).
    gamma : float >= 0, default=1.0
        Online update threshold: a triplet updates when ``f_t + gamma > 0``.
    rank : int >= 1 or sequence of int >= 1, optional
        ``None``: OMDML (Algorithm 1); an integer, or one integer per view:
        LOMDML (Algorithm 2) with ``M_i = W_i^T W_i`` of that rank.  A rank
        above its view's dimension is capped at that dimension (the
        paper's ``r = 50`` on a 37-dimensional view is rank 37 there); the
        ranks used are in ``ranks_``.
    eta : float > 0, default=0.01
        LOMDML's learning rate (Eq. 7).
    project_every : int >= 1, default=1
        OMDML: PSD projection every ``k`` updates.
    projection : {"rank2", "full"}, default="rank2"
        OMDML's per-step projection: exact from one eigenpair, or a full
        eigendecomposition.
    n_passes : int >= 1, default=1
        Passes over the triplets (online solvers).
    solver : {"online", "exact"}, default="online"
    theta : array_like of shape (n_views,), optional
        ``"exact"``: the fixed combination (default uniform).  ``"online"``:
        the starting weights (default uniform, as printed).
    random_state : int, RandomState instance or None
        LOMDML's starting ``W_i``.
    verbose : bool or int, default=False
        ``True`` / ``1``: the online passes' progress and a summary at INFO
        on the ``cvxmetric`` logger (shown on standard error when
        ``logging`` is not configured); ``2``: also the conic solver's own
        log (``"exact"``); ``3``: DEBUG.

    Attributes
    ----------
    theta_ : ndarray of shape (n_views,)
    metrics_ : list of ndarray (n_i, n_i)
        The per-view matrices ``M_i``.
    components_ : list of ndarray (r_i, n_i)
        ``L_i`` with ``M_i = L_i^T L_i``.
    mistakes_ : int
        Online: triplets whose combined ranking was wrong (``f_t > 0``) when
        they arrived; 0 for ``"exact"``.
    mistake_history_ : ndarray of int
        Cumulative mistakes after each triplet of the stream.
    objective_ : float
        Eq. 3 at ``theta_`` and ``metrics_``.
    status_, certificate_, result_, n_iter_
    n_features_in_ : list of int
        The dimension of each view.
    ranks_ : list of int or None
        LOMDML (``rank`` given, ``solver="online"``): the rank of each
        view's factor, ``min(rank_i, n_i)``; ``None`` otherwise.
    """

    _parameter_constraints = {
        "C": [Interval(Real, 0, None, closed="neither")],
        "beta": [Interval(Real, 0, 1, closed="neither")],
        "gamma": [Interval(Real, 0, None, closed="left")],
        "rank": "no_validation",  # int or one per view: check_ranks
        "eta": [Interval(Real, 0, None, closed="neither")],
        "project_every": [Interval(Integral, 1, None, closed="left")],
        "projection": [StrOptions({"rank2", "full"})],
        "n_passes": [Interval(Integral, 1, None, closed="left")],
        "solver": [StrOptions(set(solver_names("omdml")))],
        "theta": ["array-like", None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, C=1.0, beta=0.5, gamma=1.0, rank=None, eta=0.01, project_every=1,
                 projection="rank2", n_passes=1, solver="online", theta=None,
                 random_state=None, verbose=False):
        store_arguments(self, locals())

    def _ranks(self, data):
        """Per-view ranks (capped at the views' dimensions), or ``None``."""
        if self.rank is None:
            return None
        return check_ranks(self.rank, data.dims, cap=True)

    def _online(self, n_passes, ranks):
        common = dict(maxiter=n_passes, C=self.C, beta=self.beta, gamma=self.gamma,
                      theta0=self.theta)
        if ranks is None:
            return OMDMLOnline(project_every=self.project_every,
                               projection=self.projection, **common)
        return LowRankOMDML(rank=ranks, eta=self.eta,
                            random_state=self.random_state, **common)

    def fit(self, views, triplets):
        """Learn the per-view metrics and their combination.

        Parameters
        ----------
        views : list of array_like (n_samples, n_i)
            One array per modality, rows the same items.
        triplets : array_like of int, shape (n_triplets, 3)
            ``(p, p+, p-)``: ``p`` is closer to ``p+`` than to ``p-``.

        Returns
        -------
        self : OMDML
        """
        data = OMDMLData.from_views(views, triplets, C=self.C)
        ranks = self._ranks(data)
        if self.theta is not None:
            check_theta(self.theta, data.n_views)
        if self.solver == "exact":
            result = solve_exact(data, self.theta, verbose=conic_verbose(self.verbose))
            ranks = None
        else:
            result = self._online(self.n_passes, ranks).run(data, warn=False)
            if result.status != Status.OPTIMAL:
                # the paper's algorithm stops after its passes by design:
                # say so once per fit (partial_fit streams: no warning)
                warnings.warn(
                    f"OMDML: the online algorithm "
                    f"({'Algorithm 2, LOMDML' if ranks else 'Algorithm 1'}) made {self.n_passes} pass(es) over the triplets and stops "
                    f"there by design, not at Eq. 3's optimum: status "
                    f"{str(result.status)!r}, relative gap to the certified bound "
                    f"{result.certificate.rel_gap:.3g}. More passes (n_passes) "
                    f"approach it; solver='exact' solves Eq. 3 at fixed theta.",
                    ConvergenceWarning, stacklevel=3)
        return self._store(result, data, ranks)

    def declared_problem(self, views, triplets):
        """Eq. 3 at this estimator's ``theta`` (uniform when None) on this
        input, as declared, without solving it.

        Takes exactly what :meth:`fit` takes and validates it as ``fit``
        does; the estimator is not changed.  The declared problem is the
        convex one the exact path solves (full matrices ``M_i``) whatever
        ``solver`` and ``rank`` say: the online algorithms do not claim its
        optimum.

        {params_as_in_fit}

        Returns
        -------
        DeclaredProblem
            The problem in the user's units (:mod:`cvxmetric.model`): one
            metric per view (variables ``M_0`` .. ``M_{m-1}``), the
            contract's matrix their block-diagonal matrix, ``metric()`` the
            combined distance over ``np.hstack(views)``; its optimal value
            is the ``objective_`` of ``fit`` with ``solver="exact"``.
        """
        self._validate_params()
        data = OMDMLData.from_views(views, triplets, C=self.C)
        self._ranks(data)
        if self.theta is not None:
            check_theta(self.theta, data.n_views)
        return declared_problem(data, self.theta)

    def partial_fit(self, views, triplets):
        """Continue the stream with more triplets (one pass over them).

        The first call starts the stream as :meth:`fit` with ``n_passes=1``
        would; every call after it continues from the last state, so the
        calls over consecutive chunks equal one pass over their
        concatenation.

        Parameters
        ----------
        views, triplets
            As in :meth:`fit` (the same views every call).

        Returns
        -------
        self : OMDML
        """
        self._validate_params()
        if self.solver != "online":
            raise ValueError("solver: partial_fit streams triplets; it needs "
                             "solver='online'.")
        data = OMDMLData.from_views(views, triplets, C=self.C)
        ranks = self._ranks(data)
        state = getattr(self, "_stream_state", None)
        if state is not None and [M.shape[-1] for M in state.mats] != list(data.dims):
            raise ValueError("views: their dimensions differ from the earlier "
                             "partial_fit calls.")
        if state is not None and ranks != getattr(self, "_stream_ranks", None):
            def name(r):
                return "full matrices (rank=None)" if r is None else f"ranks {list(r)}"
            raise ValueError(
                f"rank: the stream was started with {name(self._stream_ranks)} and "
                f"rank={self.rank!r} now asks for {name(ranks)}; the learned "
                f"matrices cannot continue under another rank -- call fit to "
                f"start a new stream.")
        if self.theta is not None:
            check_theta(self.theta, data.n_views)
        result = self._online(1, ranks).run(data, init=state, warn=False)
        return self._store(result, data, ranks)

    def _store(self, result, data, ranks):
        self.result_ = dataclasses.replace(
            result, info={k: v for k, v in result.info.items() if k != "state"})
        self._stream_state = result.info.get("state")
        self._stream_ranks = ranks
        self.ranks_ = None if ranks is None else list(ranks)
        self.theta_ = np.asarray(result.info["theta"], dtype=float)
        self.metrics_ = [np.array(M) for M in result.info["metrics"]]
        if ranks is not None:
            self.components_ = [np.array(W) for W in result.info["factors"]]
        else:
            self.components_ = [components_from_metric(M) for M in self.metrics_]
        self.mistakes_ = int(result.info.get("mistakes", 0))
        self.mistake_history_ = np.asarray(result.info.get("mistake_history", []),
                                           dtype=int)
        self._store_outcome(result)
        self.n_features_in_ = list(data.dims)
        return self

    # -- the learned distance ------------------------------------------------

    def _check_views(self, views):
        check_is_fitted(self, "metrics_")
        views = check_views(views)
        if [V.shape[1] for V in views] != self.n_features_in_:
            raise ValueError(f"views: dimensions {[V.shape[1] for V in views]}, but "
                             f"{type(self).__name__} was fitted with "
                             f"{self.n_features_in_}.")
        return views

    def transform(self, views):
        """``[sqrt(theta_1) L_1 x_1, ..., sqrt(theta_m) L_m x_m]``: the
        squared Euclidean distance there is the combined distance.

        Parameters
        ----------
        views : list of array_like (n, n_i)

        Returns
        -------
        ndarray of shape (n, sum_i r_i)
        """
        views = self._check_views(views)
        return np.hstack([np.sqrt(th) * (V @ L.T)
                          for th, V, L in zip(self.theta_, views, self.components_)])

    def pair_distance(self, views, pairs):
        """The combined distance ``sum_i theta_i d_i(p, q)`` of index pairs.

        Parameters
        ----------
        views : list of array_like (n, n_i)
        pairs : array_like of int, shape (n_pairs, 2)

        Returns
        -------
        ndarray of shape (n_pairs,)
        """
        views = self._check_views(views)
        idx = check_indices(pairs, "pairs", views[0].shape[0], width=2)
        out = np.zeros(len(idx))
        for th, V, M in zip(self.theta_, views, self.metrics_):
            D = V[idx[:, 0]] - V[idx[:, 1]]
            out += th * np.einsum("tj,jk,tk->t", D, M, D)
        return out

    def score(self, views, triplets):
        """Fraction of ``triplets`` whose ranking the combined distance gets
        right (``d(p, p+) < d(p, p-)``)."""
        views = self._check_views(views)
        t = check_indices(triplets, "triplets", views[0].shape[0], width=3)
        near = self.pair_distance(views, t[:, [0, 1]])
        far = self.pair_distance(views, t[:, [0, 2]])
        return float(np.mean(near < far))



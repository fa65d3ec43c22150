"""LDML, MildML and LDML* estimators (scikit-learn / metric-learn conventions).

:class:`LDML` is a pairs learner: ``fit(pairs, y)`` with pairs as indices
into ``preprocessor=X`` or as points (n_pairs, 2, n_features) and ``y`` in
{+1 same, -1 different}.  :class:`LDMLSupervised` takes ``fit(X, y)`` and
uses every pair of samples (Eq. 2's sum over ``i, j``).  :class:`MildML`
takes ``fit(bags, bag_labels)`` (Eq. 7-8) and :class:`LDMLStar` the same
input, estimating instance labels by the constrained clustering of Sec. 2.3
and learning LDML on them, repeatedly.

``solver`` of the LDML estimators:

============  ==================================================  ===========
``solver``    what runs                                           guarantee
============  ==================================================  ===========
``"exact"``   :func:`~cvxmetric.ldml.solve_exact` (CVXPY)         certified
``"fast"``    :func:`~cvxmetric.ldml.solve_fast`                  certified
``"lowrank"`` :func:`~cvxmetric.ldml.fit_lowrank` (Eq. 4-6),      stationary;
              ``M = L^T L`` of rank ``n_components``              certified
                                                                  at full rank
============  ==================================================  ===========

Array API.  With scikit-learn's ``array_api_dispatch`` on, the solvers
whose passes over the pairs run on an array-API namespace keep a PyTorch,
CuPy or ``array-api-strict`` array where it is: ``LDMLSupervised`` with
``"fast"``, ``"lowrank"`` or ``"auto"`` (no kernel) its ``X``, ``LDML``
with ``"fast"`` or ``"lowrank"`` an array ``preprocessor`` or the pairs'
points.  Only scalars and (D, D) matrices come to the host (counted in
``result_.info["transfers"]``, with ``"backend"`` and ``"device"``); the
fitted attributes are NumPy arrays, and ``transform``, ``pair_distance``,
``predict`` and ``predict_proba`` of device input answer on its device.
``"exact"``, the kernel form, MildML and LDML* run on NumPy and refuse
such input by name (docs/backends.md).  With or without dispatch,
``LDMLSupervised`` with ``"lowrank"`` or ``"auto"`` (no kernel) keeps a
``dask.array`` ``X`` on its cluster: the all-pairs passes run as Dask tasks.

Threshold.  LDML learns ``b`` with it: ``p(same) = sigma(b - d_M)`` (Eq. 3),
``d_M`` the squared distance.  ``b_`` is that threshold; ``predict_proba``
uses it; ``threshold_`` is the same decision in the units of
:meth:`pair_distance` (``sqrt(max(b, 0))``): ``predict`` says +1 exactly
when ``p >= 1/2``.  :meth:`calibrate_threshold` (or ``calibration_params``
in ``fit``) moves ``threshold_`` only, as metric-learn does; ``b_`` and
``predict_proba`` keep the model's value.
"""

import functools
import math
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import PAIRWISE_KERNEL_FUNCTIONS, pairwise_kernels
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._backend import Device, Transfers, check_host_input, is_numpy, namespace
from .._base import (SOLVER_OPTION_CONSTRAINTS, LabelledMixin, MahalanobisMixin,
                     PairsClassifierMixin, components_from_metric, dispatched,
                     fit_tuples, given_options, host_labels, solver_names,
                     store_arguments, validate_labelled)
from .._docs import fill_doc
from .._solver import conic_verbose
from .._validation import check_finite, check_pair_labels, check_samples
from ..result import ProblemSizeError, Status
from ..constraints import tuples_to_indices
from ._budget import budget, expired, remaining
from ._mildml import BagPairs, check_bags, fit_mildml
from ._naming import label_instances
from .exact import REGULARIZERS, LDMLData, _sigmoid, declared_problem, solve_exact
from ._xp import sigmoid_xp
from ._scale import (
    auto_lam,
    scaled_lam,
    unit_scale,
    zero_point,
    zero_point_labels,
    zero_result,
)
from .fast import (
    CERTIFY_PAIRS,
    AllPairs,
    PairSet,
    ProjectedGradient,
    fit_lowrank,
    solve_fast,
)
from .._settings import PAIRS_MAX

__all__ = ["LDML", "LDMLSupervised", "MildML", "LDMLStar", "SOLVER_NAMES", "PAIRS_MAX"]

#: Values of the LDML estimators' ``solver`` (the registry's methods).
SOLVER_NAMES = solver_names("ldml")

#: The solvers whose passes over the pairs run on an array-API namespace
#: (``"auto"`` is ``"lowrank"``): a device ``X`` is kept under
#: scikit-learn's ``array_api_dispatch``.
_DEVICE_SOLVERS = ("fast", "lowrank", "auto")

_SHARED = {
    "lam": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
    "regularizer": [StrOptions(set(REGULARIZERS))],
    "n_components": [Interval(Integral, 1, None, closed="left"), None],
    "n_init": [Interval(Integral, 1, None, closed="left")],
    "max_time": [Interval(Real, 0, None, closed="neither"), None],
    **SOLVER_OPTION_CONSTRAINTS,
}


def _left(est):
    """What is left of the fit's ``max_time`` (``None`` without one)."""
    if est.max_time is None:
        return None
    return max(remaining(), 1e-9)


def _options(est):
    """The iterative solvers' keywords the estimator sets (``None`` keeps
    their defaults)."""
    return given_options(tol=est.tol, maxiter=est.max_iter, max_time=_left(est))


def _fast_options(est):
    """:func:`~cvxmetric.ldml.solve_fast`'s keywords from the estimator's."""
    return {"tol": est.tol, "maxiter": est.max_iter, "max_time": _left(est)}


def _check_pair_count(solver, n_pairs):
    """ProblemSizeError naming ``solver`` when the pairs of every sample are
    too many for it (``"exact"``: :data:`PAIRS_MAX`; ``"fast"``: its arrays
    over all pairs, :data:`~cvxmetric.ldml.fast.CERTIFY_PAIRS`)."""
    if solver == "exact" and n_pairs > PAIRS_MAX:
        raise ProblemSizeError(
            f"solver: 'exact' gives CVXPY one exponential cone per pair of "
            f"samples, so its problem grows with the {n_pairs} pairs (above "
            f"{PAIRS_MAX}, where the conic solvers stop being reliable); use "
            f"solver='fast', the same problem certified by the same duality gap.")
    if solver != "lowrank" and n_pairs > CERTIFY_PAIRS:
        raise ProblemSizeError(
            f"solver: {solver!r} keeps arrays over all {n_pairs} pairs "
            f"(above {CERTIFY_PAIRS:.0e}); use solver='lowrank', which "
            f"evaluates them block by block (n_components=None keeps the "
            f"full rank).")


def _rounding_error(loss, L):
    """A bound on the rounding error of ``F`` evaluated from ``M = L^T L``
    in float64 (``2 D eps sum_p |phi_p|^T |L|^T |L| |phi_p|``, slopes at
    most 1); pairs of :class:`AllPairs` through ``|phi_ij| <= |x_i| +
    |x_j|`` (``sum_{i<j}`` in closed form).  On a device loss the sums
    run there (:func:`_rounding_error_xp`)."""
    A = np.abs(L).T @ np.abs(L)
    if getattr(loss, "_backend", None) == "xp":
        return 2.0 * L.shape[1] * np.finfo(float).eps * _rounding_error_xp(loss, A)
    X = np.abs(loss.X)
    D = X.shape[1]
    if isinstance(loss, AllPairs):
        N = X.shape[0]
        q = np.einsum("nd,de,ne->n", X, A, X)
        t = X.sum(axis=0)
        total = (N - 2) * float(q.sum()) + float(t @ A @ t)
    else:
        Phi = np.abs(loss.X[loss.i] - loss.X[loss.j])
        total = float(np.einsum("pd,de,pe->", Phi, A, Phi))
    return 2.0 * D * np.finfo(float).eps * total


def _rounding_error_xp(loss, A):
    """``sum_p |phi_p|^T A |phi_p|`` of :func:`_rounding_error` on the
    device of ``loss``: ``A`` (D, D) moved there, one scalar (and for all
    pairs the column sums, D) back, counted in ``loss.transfers``."""
    where = loss.where
    xp, Ad = where.xp, where.dev(A)
    if isinstance(loss, AllPairs):
        X = xp.abs(loss.X)
        N = X.shape[0]
        q = where.scalars(xp.sum((X @ Ad) * X))[0]
        s = where.host(xp.sum(X, axis=0))
        return (N - 2) * q + float(s @ A @ s)
    total = None
    for _, _, Phi in loss._pxp.blocks():
        Phi = xp.abs(Phi)
        part = xp.sum((Phi @ Ad) * Phi)
        total = part if total is None else total + part
    return 0.0 if total is None else where.scalars(total)[0]


def _add_moves(loss, transfers):
    """The estimator's own counted moves (scaling, the point ``M = 0``)
    added to those of a device or cluster ``loss``, whose count the result
    reports."""
    if getattr(loss, "_backend", None) is not None:
        loss.transfers.add(transfers)


def _budgeted(fit):
    """``fit`` within the estimator's ``max_time``, every phase included
    (data preparation, solver, certificate, polish, rounds)."""
    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        with budget(self.max_time):
            return fit(self, *args, **kwargs)
    return wrapper


class _LDMLBase(MahalanobisMixin, BaseEstimator):
    """Solve, store, and the probability of Eq. 3: what the LDML-family
    estimators share."""

    def _rank(self, D):
        """``n_components`` checked against the input dimension ``D``."""
        d = D if self.n_components is None else int(self.n_components)
        if d > D:
            raise ValueError(f"n_components: {d} exceeds the {D} input dimensions.")
        return d

    def _check_solver(self, D, solver=None):
        solver = self.solver if solver is None else solver
        d = self._rank(D)
        if d < D and solver != "lowrank":
            raise ValueError(f"n_components: a rank below the input dimension ({d} < "
                             f"{D}) needs solver='lowrank', not {solver!r}.")
        return d

    def _units(self, X, name="X", transfers=None):
        """``(X_u, k)``: ``X`` centred and scaled by ``2^-k`` (exact) to unit
        spread (:func:`~cvxmetric.ldml._scale.unit_scale`); the solvers run on
        ``X_u`` at any finite scale of ``X``.  A device ``X`` (kept under
        ``array_api_dispatch``) or a ``dask.array`` is checked and scaled
        where it is, its scalars counted in ``transfers``."""
        if is_numpy(X):
            Xu, k = unit_scale(X)
            nonzero = np.any(Xu)
        else:
            where = Device.of(X, transfers)
            xp = where.xp
            if not bool(where.host(xp.all(xp.isfinite(X)))):
                raise ValueError(f"{name}: contains NaN or infinity.")
            Xu, k = unit_scale(X, where.transfers)
            nonzero = bool(where.host(xp.any(Xu != 0)))
        if not nonzero:
            raise ValueError(f"{name}: every sample is the same point, so every "
                             f"pair has distance 0 under any metric: there is no "
                             f"metric to learn.")
        return Xu, k

    def _lam(self, zp, k, gram=None):
        """The weight on the unit-scaled data (``lam="auto"``: from ``zp``,
        docs/ldml/formulation.md "Default regularisation"); sets ``lam_`` in the units
        of ``X``."""
        e = 2 * k if self.regularizer == "trace" else 4 * k
        if isinstance(self.lam, str):
            lam = auto_lam(zp, self.regularizer, gram=gram)
            try:
                self.lam_ = math.ldexp(lam, e)
            except OverflowError:
                self.lam_ = math.inf
            return lam
        self.lam_ = float(self.lam)
        return scaled_lam(self.lam, k, self.regularizer)

    def _store(self, result, D, L=None, k=0, loss=None):
        """Fitted attributes from a :class:`~cvxmetric.result.SolverResult`
        computed on ``2^-k``-scaled data (``M`` and ``L`` are mapped back).

        ``loss`` (an :class:`AllPairs` / :class:`PairSet` on the scaled data
        with the fit's weight) evaluates ``F`` at the returned ``(L, b)``:
        the reported objective is that point's, and its certificate is the
        solver's dual bound against it."""
        L = components_from_metric(result.M) if L is None else np.asarray(L, dtype=float)
        # (past max_time the solver's own value stands: the same point in its
        # coordinates, equal to round-off, without one more pass over the pairs)
        if loss is not None and np.isfinite(result.objective) and not expired() \
                and result.method != "zero" and math.isfinite(loss.lam):
            f = float(loss.value_grad(L, float(result.info["b"]), grad=False))
            if f != result.objective:
                c = result.certificate
                result.certificate = type(c).from_bound(
                    f, c.dual_bound, max_violation=c.max_violation, min_eig=c.min_eig,
                    solver=c.solver, solver_version=c.solver_version,
                    tolerances=c.tolerances, times=c.times, tol_gap=c.tol_gap,
                    tol_feas=c.tol_feas)
                result.objective = f
                if result.status == Status.OPTIMAL and not result.certificate.passed:
                    result.status = Status.OPTIMAL_INACCURATE
            # F evaluated in the units of X, from the returned M, is uncertain
            # by about this much: beyond the certificate's tolerance the
            # point is not certified there (nearly collinear features give
            # a metric with entries far larger than the data's)
            err = _rounding_error(loss, L)
            result.info["rounding_error"] = err
            if err > 0.5 * result.certificate.tol_gap * max(1.0, abs(f)) \
                    and result.status == Status.OPTIMAL:
                result.status = Status.OPTIMAL_INACCURATE
                result.info["unrepresentable"] = True
        Lu = np.ldexp(L, -k)
        Mu = Lu.T @ Lu
        top = float(np.max(np.abs(L))) if L.size else 0.0
        if top > 0 and not (np.all(np.isfinite(Mu))
                            and float(np.max(np.abs(Mu))) >= np.finfo(float).tiny):
            raise ValueError(
                f"X: the metric learned on features of scale about 2^{k} has entries "
                f"of scale about 2^{-2 * k + 2 * math.frexp(top)[1]}, outside the "
                f"float64 range; LDML depends on the scale of X only through lam "
                f"(X -> cX is lam -> lam / c^2), so rescale X (e.g. standardise it).")
        if getattr(loss, "_backend", None) is not None:  # a device or cluster fit
            result.info.update(loss.where.info())
        result.M = Mu
        result.info["L"] = Lu
        self.result_ = result
        self.components_ = Lu
        self.mahalanobis_matrix_ = Mu
        self.b_ = float(result.info["b"])
        self.threshold_ = math.sqrt(max(self.b_, 0.0))
        self._store_outcome(result)
        self.n_features_in_ = int(D)
        self._log_fit()
        if self.status_ != Status.OPTIMAL:
            warnings.warn(self._stop_message(result), ConvergenceWarning, stacklevel=3)
        return self

    def _stop_message(self, result):
        """Why the fit is not certified optimal, and what to change."""
        name, status = type(self).__name__, self.status_
        err = result.info.get("rounding_error")
        if result.info.get("unrepresentable"):
            what = (f"the optimum is certified on the solver's scaled data, but the "
                    f"returned metric's entries are so large against X's (nearly "
                    f"collinear features) that F evaluated in X's units is uncertain "
                    f"by up to {err:.3g}, beyond the certificate's tolerance; remove "
                    f"the collinear features (e.g. PCA) or set lam > 0")
        elif status == Status.MAX_ITER:
            what = (f"it stopped after {self.n_iter_} iterations (max_iter); raise "
                    f"max_iter")
        elif status == Status.TIME_LIMIT:
            what = "it stopped at max_time; raise max_time"
        elif isinstance(self, MildML):
            what = ("Eq. 8 is not convex, so its stationary point has no certificate; "
                    "this is MildML's normal end")
        elif self.components_.shape[0] < self.n_features_in_ or \
                getattr(self, "X_fit_", None) is not None:
            what = ("a stationary point of the low-rank (or kernel) problem, which is "
                    "not convex and has no certificate; n_components=None without a "
                    "kernel is the certified convex problem")
        else:
            what = (f"its certificate did not pass (relative gap "
                    f"{self.certificate_.rel_gap:.3g}); try solver='exact', a larger "
                    f"lam, or raise max_iter / max_time")
        return f"{name}: the fit ended with status {status!r}: {what}."

    def _solve_pairs(self, X, pairs, s):
        """LDML on explicit pairs with the chosen solver."""
        D = X.shape[1]
        d = self._check_solver(D)
        t = Transfers()
        Xu, k = self._units(X, transfers=t)
        zp = zero_point(Xu, pairs, s, t)
        lam = self._lam(zp, k)
        res = self._zero(zp, lam)
        if res is not None:
            return self._store(res, D, np.zeros((d, D)), k=k)
        loss = PairSet(Xu, pairs, s, lam=lam, regularizer=self.regularizer)
        _add_moves(loss, t)

        def data():
            if not is_numpy(Xu):  # the loss's pairs, on their device
                return loss.pair_data()
            return LDMLData(Xu, pairs, s, lam=lam, regularizer=self.regularizer)

        res = self._run_solver({
            "exact": lambda: solve_exact(data(), verbose=conic_verbose(self.verbose)),
            "fast": lambda: solve_fast(data(), warn=False, **_fast_options(self)),
            "lowrank": lambda: fit_lowrank(loss, d, n_init=self.n_init, warn=False,
                                           random_state=self.random_state, **_options(self)),
        })
        L = res.info["L"] if self.solver == "lowrank" else None
        return self._store(res, D, L, k=k, loss=loss)

    def _declared_rank(self, D):
        """The declared problem is the convex Eq. 2 at full rank: a lower
        ``n_components`` (the low-rank problem of Eq. 4-6, not convex) is
        refused."""
        d = self._rank(D)
        if d < D:
            raise ValueError(f"n_components: the declared problem is the convex Eq. 2 "
                             f"over full-rank M; n_components={d} < {D} is the "
                             f"low-rank problem of Eq. 4-6, which is not convex and "
                             f"has no declared problem (leave n_components=None).")

    def _zero(self, zp, lam):
        """The certified ``M = 0`` when the weight makes it optimal (a huge
        ``lam``, or tiny data: no solver needed), else ``None``."""
        return zero_result(zp, lam, self.regularizer)


@fill_doc
class _PairProba:
    """``predict_proba`` on pairs: Eq. 3 with the learned ``b_``."""

    def predict_proba(self, pairs):
        """Eq. 3: ``[p(different), p(same)]`` of each pair, ``p(same) =
        sigma(b_ - d_M)``.

        {pairs_parameters}

        Returns
        -------
        proba : ndarray of shape (n_pairs, 2)
            Columns in the order of ``classes_`` (``[-1, 1]``).
        """
        check_is_fitted(self, "b_")
        dist = self.pair_distance(pairs)
        if not is_numpy(dist):  # device pairs (array_api_dispatch): there
            xp, _ = namespace(dist)
            u = self.b_ - dist * dist
            return xp.stack([sigmoid_xp(xp, -u), sigmoid_xp(xp, u)], axis=1)
        u = self.b_ - dist ** 2
        return np.column_stack([_sigmoid(-u), _sigmoid(u)])


@fill_doc
class LDML(_PairProba, PairsClassifierMixin, _LDMLBase):
    """Logistic Discriminant Metric Learning (Guillaumin et al.), pairs learner.

    Minimises the negative log-likelihood of Eq. 2::

        sum_p log(1 + exp(s_p (d_M(x_i, x_j) - b))) + lam R(M)

    over ``M`` PSD and ``b``, with ``R = tr`` or ``0.5 ||.||_F^2``.  With
    ``lam = 0`` and pairs that a metric separates the maximum likelihood is
    not attained: ``"exact"`` and ``"fast"`` raise
    :class:`~cvxmetric.result.NotAttainedError` (set ``lam > 0``).

    Parameters
    ----------
    lam : float >= 0 or "auto", default="auto"
        The regulariser's weight.  ``"auto"``: 1 % of ``lam_max``, the
        smallest trace weight at which ``M = 0`` is optimal (scaled to the
        pairs and to the units of ``X``; for the Frobenius regulariser the
        weight with the same gradient at the isotropic metric of unit mean
        distance); docs/ldml/formulation.md, "Default regularisation".  ``0`` is Eq. 2
        as printed.  The weight used is ``lam_``.
    regularizer : {"trace", "frobenius"}, default="trace"
    n_components : int, optional
        Rank ``d`` of ``M = L^T L`` (``solver="lowrank"``; default full).
    solver : {"exact", "fast", "lowrank"}, default="fast"
    n_init : int >= 1, default=3
        Random starts of ``"lowrank"``.
    preprocessor : array_like of shape (n_samples, n_features), optional
    tol, max_iter, max_time : optional
        Of the iterative solvers (``None``: their defaults).
    random_state : int, RandomState instance or None
    {verbose_iterative}

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
    b_ : float
        The learned threshold of Eq. 3 (squared-distance units).
    threshold_ : float
        Of :meth:`predict`, in :meth:`pair_distance` units.
    lam_ : float
        The weight used, in the units of ``X``.
    objective_, status_, n_iter_, certificate_, result_, n_features_in_
        ``objective_`` is ``F`` at the returned ``(components_, b_)``.  A fit
        that does not end ``"optimal"`` emits a ``ConvergenceWarning``.

    Examples
    --------
    >>> import numpy as np
    >>> from cvxmetric import LDML
    >>> X = np.array([[0.0, 0.0], [0.3, 1.0], [1.0, 0.1], [1.2, 1.3], [0.1, 0.4]])
    >>> est = LDML(lam=0.1, preprocessor=X).fit(
    ...     [[0, 4], [1, 3], [0, 2], [1, 2], [3, 4]], [1, 1, -1, -1, -1])
    >>> est.predict_proba([[0, 4]]).shape
    (1, 2)
    """

    _parameter_constraints = {
        **_SHARED,
        "solver": [StrOptions(set(SOLVER_NAMES))],
        "preprocessor": ["array-like", None],
    }

    def __init__(self, lam="auto", regularizer="trace", n_components=None,
                 solver="fast", n_init=3, preprocessor=None, tol=None, max_iter=None,
                 max_time=None, random_state=None, verbose=False):
        store_arguments(self, locals())

    @_budgeted
    def fit(self, pairs, y, calibration_params=None):
        """Learn ``(M, b)`` from labelled pairs.

        Parameters
        ----------
        pairs : array_like
            Indices (n_pairs, 2) into ``preprocessor``, or points
            (n_pairs, 2, n_features).
        y : array_like of shape (n_pairs,)
            +1 same, -1 different; both must occur.
        calibration_params : dict, optional
            If given, :meth:`calibrate_threshold` on the training pairs with
            these arguments; by default ``threshold_`` is the learned ``b``.

        Returns
        -------
        self : LDML
        """
        X, idx, y = self._pairs_input(pairs, y, calibration_params)
        self._solve_pairs(X, idx, y)
        self.classes_ = np.array([-1, 1])
        if calibration_params is not None:
            self.calibrate_threshold(pairs, y, **calibration_params)
        return self

    def _pairs_input(self, pairs, y, calibration_params):
        """:meth:`fit`'s input validated: ``(X, idx, y)``."""
        if calibration_params is not None:
            self._check_calibration_params(calibration_params)
        # array_api_dispatch: "fast" and "lowrank" pass over the pairs where
        # their points are (an array preprocessor, or the pairs' points)
        found = fit_tuples(self, pairs, "pairs", 2,
                           keep_namespace=self.solver in _DEVICE_SOLVERS)
        if found is not None:
            X, idx, _ = found
            y = check_pair_labels(host_labels(y), idx.shape[0], "y")
            if np.all(y == y[0]):
                raise ValueError("y: both similar (+1) and dissimilar (-1) pairs are "
                                 "needed.")
            return X, idx, y
        X = self.preprocessor
        if X is not None:
            X = check_samples(X, "preprocessor")
        X, idx = tuples_to_indices(pairs, "pairs", width=2, preprocessor=X)
        y = check_pair_labels(y, idx.shape[0], "y")
        if np.all(y == y[0]):
            raise ValueError("y: both similar (+1) and dissimilar (-1) pairs are needed.")
        return X, idx, y

    def declared_problem(self, pairs, y, calibration_params=None):
        """Eq. 2 on these pairs, as printed (user's units), without solving it.

        Takes exactly what :meth:`fit` takes and validates it as ``fit``
        does (``calibration_params`` is checked, then unused); the
        estimator is not changed.  The parameter ``lam`` holds the weight
        ``fit`` would use: ``lam_``, so ``lam="auto"`` resolved to its
        number on these pairs, in the units of ``X``.  ``solver`` is not
        used (the problem is solved by ``dp.solve``); ``n_components``
        below the input dimension is refused (the low-rank problem is not
        convex).  ``dp.solve()`` gives the conic solver one exponential
        cone per pair.

        {params_as_in_fit}

        {declared_returns_ldml}

        Raises
        ------
        NotAttainedError
            From ``dp.solve()`` / ``dp.certificate()`` when ``lam = 0`` and
            a metric separates the pairs (no maximiser of the likelihood).
        """
        self._validate_params()
        X, idx, y = self._pairs_input(pairs, y, calibration_params)
        self._declared_rank(X.shape[1])
        twin = clone(self)  # lam_ is set on the twin, not on self
        Xu, k = twin._units(X)
        twin._lam(zero_point(Xu, idx, y), k)
        return declared_problem(LDMLData(X, idx, y, lam=twin.lam_,
                                         regularizer=self.regularizer))


@fill_doc
class LDMLSupervised(LabelledMixin, TransformerMixin, _LDMLBase):
    """LDML from class labels: every pair of samples, ``t_ij = [y_i = y_j]``.

    ``"exact"`` and ``"fast"`` hold the ``N (N - 1) / 2`` difference
    vectors (small data); ``"lowrank"`` evaluates all pairs block by block
    (:class:`~cvxmetric.ldml.AllPairs`) and scales to tens of thousands of
    samples.  ``kernel`` (``"lowrank"`` only) learns ``L = A X^T`` on the
    kernel matrix instead (Sec. 2.1); ``transform`` then maps through
    ``k(x, X_fit)``.

    Parameters
    ----------
    lam, regularizer, n_components, n_init, tol, max_iter, max_time, random_state, \
verbose
        As in :class:`LDML`.
    solver : {"auto", "exact", "fast", "lowrank"}, default="auto"
        ``"auto"``: ``"lowrank"`` (at full rank the fastest certified
        solver, docs/ldml/estimators.md), continued at full rank by ``"fast"``'s
        projected gradient when its stationary point is not certified.
        ``"exact"``: up to 5 000 pairs.
    kernel : str, optional
        A kernel of :func:`sklearn.metrics.pairwise.pairwise_kernels`
        (``"rbf"``, ``"poly"``, ...), with ``kernel_params``.
    kernel_params : dict, optional

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        ``L`` (``A`` in the kernel form: (n_components, n_samples_fit)).
    b_, threshold_, objective_, status_, n_iter_, certificate_, result_, \
n_features_in_
        As in :class:`LDML`.
    """

    _parameter_constraints = {
        **_SHARED,
        "solver": [StrOptions(set(SOLVER_NAMES) | {"auto"})],
        "kernel": [StrOptions(set(PAIRWISE_KERNEL_FUNCTIONS)), None],
        "kernel_params": [dict, None],
    }

    def __init__(self, lam="auto", regularizer="trace", n_components=None,
                 solver="auto", n_init=3, kernel=None, kernel_params=None, tol=None,
                 max_iter=None, max_time=None, random_state=None, verbose=False):
        store_arguments(self, locals())

    def _kernel(self, A, B):
        return pairwise_kernels(A, B, metric=self.kernel, filter_params=True,
                                **(self.kernel_params or {}))

    @_budgeted
    def _fit(self, X, y):
        """Learn ``(M, b)`` from every pair of samples."""
        if self.kernel is not None and dispatched(X):
            check_host_input(X, "X", f"LDMLSupervised(kernel={self.kernel!r})")
        # array_api_dispatch: the passes over all pairs run on X's namespace
        X, y, _, codes = validate_labelled(
            self, X, y, ensure_min_samples=2,
            keep_namespace=self.kernel is None and self.solver in _DEVICE_SOLVERS,
            keep_dask=self.kernel is None and self.solver in ("lowrank", "auto"))
        D = X.shape[1]
        solver = self.solver_ = self._solver(X.shape[0], D)
        if self.kernel_params is not None and self.kernel is None:
            raise ValueError("kernel_params: given without a kernel; set kernel "
                             "(e.g. kernel='rbf') or leave kernel_params None.")
        if self.kernel is not None:
            return self._fit_kernel(X, codes, solver)
        self.X_fit_ = None
        d = self._check_solver(D, solver)
        n_pairs = X.shape[0] * (X.shape[0] - 1) // 2
        _check_pair_count(solver, n_pairs)
        t = Transfers()
        Xu, k = self._units(X, transfers=t)
        # duplicate samples form no pair (their distance is 0 under any M)
        loss = AllPairs(Xu, codes, lam=0.0, regularizer=self.regularizer)
        _add_moves(loss, t)
        # the loss's X: Xu as the loss holds it (on Dask persisted, so its
        # graph -- the scaling above -- is not run again)
        zp = zero_point_labels(loss.X, loss.labels, loss._rows, loss.transfers)
        loss.lam = self._lam(zp, k)
        res = self._zero(zp, loss.lam)
        if res is not None:
            return self._store(res, D, np.zeros((d, D)), k=k)
        if solver == "lowrank":
            return self._fit_lowrank(loss, d, D, k, n_pairs)
        data = loss.pair_data()
        if solver == "exact":
            res = solve_exact(data, verbose=conic_verbose(self.verbose))
        else:
            res = solve_fast(data, loss=loss, warn=False, **_fast_options(self))
        return self._store(res, D, k=k, loss=loss)

    def _fit_kernel(self, X, codes, solver):
        """The kernel form (Sec. 2.1): low-rank LDML on ``k(X, X)``."""
        D = X.shape[1]
        if solver != "lowrank":
            raise ValueError(f"kernel: the kernel form needs solver='lowrank', not "
                             f"{solver!r}.")
        self._rank(D)
        self._check_kernel_params()
        self._units(X)  # identical samples: refused as without a kernel
        K = self._kernel(X, X)
        d = D if self.n_components is None else int(self.n_components)
        loss = AllPairs(K, codes, lam=0.0, regularizer=self.regularizer, gram=K)
        loss.lam = self._lam(zero_point_labels(K, loss.labels, loss._rows), 0, gram=K)
        res = fit_lowrank(loss, min(d, K.shape[1]), n_init=self.n_init,
                          random_state=self.random_state, warn=False,
                          **_options(self))
        self.X_fit_ = X
        self._store(res, D, res.info["L"], loss=loss)
        self.n_features_in_ = D
        return self

    def _fit_lowrank(self, loss, d, D, k, n_pairs):
        """Eq. 4-6 of rank ``d`` on every pair; with ``solver="auto"`` at full
        rank, a stationary point that is not certified is continued by the
        fast path's projected gradient."""
        res = fit_lowrank(loss, d, n_init=self.n_init, random_state=self.random_state,
                          warn=False, **_options(self))
        if self.solver == "auto" and d == D and res.raw_status == Status.OPTIMAL \
                and res.status != Status.OPTIMAL and n_pairs <= CERTIFY_PAIRS \
                and not expired():
            # stationary but not certified: the fast path's continuation
            # (accelerated projected gradient until the certificate passes)
            res = ProjectedGradient(max_time=_left(self), **given_options(
                maxiter=self.max_iter, tol=self.tol)).run(loss.pair_data(), res, warn=False)
            return self._store(res, D, k=k, loss=loss)
        return self._store(res, D, res.info["L"], k=k, loss=loss)

    def declared_problem(self, X, y):
        """Eq. 2 on every pair of samples, as printed (user's units), unsolved.

        Validates as :meth:`fit` does and uses the pairs ``fit`` uses (every
        pair of samples, pairs of identical samples left out); nothing is
        drawn at random, and the estimator is not changed.  The parameter
        ``lam`` holds the weight ``fit`` would use: ``lam_``, so
        ``lam="auto"`` resolved to its number on these samples, in the
        units of ``X``.  ``solver`` is not used; a ``kernel`` and
        ``n_components`` below the input dimension are refused (the
        declared problem is the convex Eq. 2 on the features, at full
        rank).

        The problem is built at any size, but ``dp.solve()`` gives the
        conic solver one exponential cone per pair, ``N (N - 1) / 2`` of
        them: ``solver="exact"`` refuses beyond 5 000 pairs
        (:data:`PAIRS_MAX`), where the conic solvers stop being reliable.

        {params_as_in_fit}

        {declared_returns_ldml}
        """
        self._validate_params()
        twin = clone(self)  # validate_labelled and lam_ set attributes
        X, y, _, codes = validate_labelled(twin, X, y, ensure_min_samples=2)
        if self.kernel is not None:
            raise ValueError(f"kernel: the declared problem is Eq. 2 on the features; "
                             f"the kernel form ({self.kernel!r}, learned by "
                             f"solver='lowrank') has none. Set kernel=None.")
        if self.kernel_params is not None:
            raise ValueError("kernel_params: given without a kernel; set kernel "
                             "(e.g. kernel='rbf') or leave kernel_params None.")
        D = X.shape[1]
        self._declared_rank(D)
        Xu, k = twin._units(X)
        loss = AllPairs(Xu, codes, lam=0.0, regularizer=self.regularizer)
        twin._lam(zero_point_labels(Xu, loss.labels, loss._rows), k)
        pairs = AllPairs(X, codes, lam=twin.lam_, regularizer=self.regularizer)
        return declared_problem(pairs.pair_data())

    def _solver(self, N, D):
        """``solver="auto"``: ``"lowrank"``, the fastest certified solver at
        full rank (docs/ldml/estimators.md, "LDMLSupervised's solvers"), continued by
        the fast path's projected gradient when its stationary point is not
        certified."""
        return "lowrank" if self.solver == "auto" else self.solver

    def _check_kernel_params(self):
        """``kernel_params`` must be keywords of ``kernel``."""
        if not self.kernel_params:
            return
        import inspect

        fn = PAIRWISE_KERNEL_FUNCTIONS[self.kernel]
        allowed = set(inspect.signature(fn).parameters) - {"X", "Y"}
        bad = sorted(set(self.kernel_params) - allowed)
        if bad:
            raise ValueError(f"kernel_params: {bad} are not parameters of the "
                             f"{self.kernel!r} kernel (it takes {sorted(allowed)}).")

    def transform(self, X):
        """``L x`` (``A k(x, X_fit)`` in the kernel form).

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components)
        """
        check_is_fitted(self, "components_")
        if self.X_fit_ is None:
            return super().transform(X)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self._embed(X)

    def _embed(self, X):
        if self.X_fit_ is None:
            return X @ self.components_.T
        return self._kernel(X, self.X_fit_) @ self.components_.T

    def _distances(self, points, a, b):
        if self.X_fit_ is None:
            return super()._distances(points, a, b)
        diff = self.transform(points[:, a]) - self.transform(points[:, b])
        return np.sqrt(np.sum(diff * diff, axis=1))


def _bag_input(bags, preprocessor):
    """``(X, bags as index arrays)`` from index arrays into ``preprocessor``
    or from a list of (n_d, n_features) point arrays."""
    if preprocessor is not None:
        X = check_samples(preprocessor, "preprocessor")
        return X, bags
    if not hasattr(bags, "__len__") or len(bags) == 0:
        raise ValueError("bags: expected a non-empty sequence of bags.")
    pts = []
    for k, B in enumerate(bags):
        B = np.asarray(B)
        if B.ndim != 2:
            raise ValueError(f"bags[{k}]: without preprocessor a bag is an array of "
                             f"points (n_instances, n_features); got {B.ndim} "
                             f"dimensions (index arrays need preprocessor=X).")
        if B.shape[0] == 0:
            raise ValueError(f"bags[{k}]: the bag is empty.")
        pts.append(check_finite(B, f"bags[{k}]", ndim=2))
    widths = {P.shape[1] for P in pts}
    if len(widths) != 1:
        raise ValueError(f"bags: the bags' points have different widths {sorted(widths)}.")
    X = np.vstack(pts)
    ends = np.cumsum([P.shape[0] for P in pts])
    return X, [np.arange(e - P.shape[0], e) for P, e in zip(pts, ends)]


class _BagsLearner(_PairProba, PairsClassifierMixin, _LDMLBase):
    """``fit(bags, bag_labels)``: shared input handling."""

    def _bags(self, bags, bag_labels):
        # array_api_dispatch: Eq. 7's selection and Eq. 11's matching run on
        # NumPy; device input is refused by name, not converted
        what = type(self).__name__
        if self.preprocessor is not None and dispatched(self.preprocessor):
            check_host_input(self.preprocessor, "preprocessor", what)
        if self.preprocessor is None and isinstance(bags, (list, tuple)):
            for k, B in enumerate(bags):
                if dispatched(B):
                    check_host_input(B, f"bags[{k}]", what)
        X, idx = _bag_input(bags, self.preprocessor)
        idx, sets, classes = check_bags(idx, bag_labels, X.shape[0])
        return X, idx, sets, classes


@fill_doc
class MildML(_BagsLearner):
    """Multiple-instance LDML (Guillaumin et al. 2010, Sec. 2.2, Eq. 7-8).

    Learns ``L`` (n_components, n_features) and ``b`` from bags of instances
    whose captions are label sets: two bags are a positive pair when their
    captions share a label; the bag distance is the smallest instance
    distance.  Alternates the selection of the closest instance pair of
    every bag pair with one line search along the negative gradient
    (:class:`~cvxmetric.ldml.MildMLSolver`).

    Parameters
    ----------
    n_components : int, optional
        Rank of the metric (default: the input dimension).
    lam : float >= 0 or "auto", default="auto"
        As in :class:`LDML`; ``"auto"`` from the instance pairs that Eq. 7
        selects in the Euclidean metric.
    regularizer : {"trace", "frobenius"}, default="trace"
    n_init : int >= 1, default=1
    preprocessor : array_like of shape (n_samples, n_features), optional
        When given, bags are index arrays into it.
    tol, max_iter, max_time : optional
    random_state : int, RandomState instance or None
    {verbose_iterative}

    Attributes
    ----------
    components_, b_, threshold_, objective_, status_, n_iter_, result_, \
n_features_in_
        As in :class:`LDML` (``status_`` is at best ``optimal_inaccurate``:
        Eq. 8 is not convex and has no certificate).
    """

    _parameter_constraints = {**_SHARED, "preprocessor": ["array-like", None]}

    def __init__(self, n_components=None, lam="auto", regularizer="trace", n_init=1,
                 preprocessor=None, tol=None, max_iter=None, max_time=None,
                 random_state=None, verbose=False):
        store_arguments(self, locals())

    @_budgeted
    def fit(self, bags, bag_labels):
        """Learn ``(L, b)`` from labelled bags.

        Parameters
        ----------
        bags : sequence
            Index arrays into ``preprocessor``, or (without it) arrays of
            points of shape (n_instances_d, n_features).
        bag_labels : sequence of sequences
            The label set of each bag's caption (any hashable labels; may
            be empty).

        Returns
        -------
        self : MildML
        """
        X, idx, sets, _ = self._bags(bags, bag_labels)
        D = X.shape[1]
        d = self._rank(D)
        Xu, k = self._units(X, "bags")
        data = BagPairs(Xu, idx, [s for s in sets], lam=0.0, regularizer=self.regularizer)
        # lam="auto": lam_max of the instance pairs Eq. 7 selects in the
        # Euclidean metric
        pairs, _ = data.select(Xu)
        data.loss.lam = self._lam(zero_point(Xu, pairs, data.s), k)
        res = fit_mildml(data, d, n_init=self.n_init, random_state=self.random_state,
                         **_options(self))
        # the objective of the returned point, selection included
        res.objective = float(data.objective(res.info["L"], float(res.info["b"])))
        res.certificate.objective = res.objective
        self.classes_ = np.array([-1, 1])
        return self._store(res, D, res.info["L"], k=k)


class LDMLStar(_BagsLearner):
    """LDML from labelled bags through instance labels (Sec. 2.3): LDML*.

    Names the instances by the constrained clustering of Eq. 11 (each bag
    solved exactly as a bipartite matching, :func:`~cvxmetric.ldml.label_instances`),
    first with the Euclidean metric, then learns low-rank LDML on every pair
    of instances with those labels (an instance left without a name is its
    own class), and -- LDML* -- re-estimates the labels with the learned
    metric and threshold and learns again, until the labels no longer
    change or ``n_rounds`` rounds.  ``n_rounds=1`` is the paper's "LDML"
    row of Table 1 (labels from the Euclidean clustering only).

    Parameters
    ----------
    n_components : int, optional
    lam, regularizer, n_init, tol, max_iter, max_time, random_state, verbose
        As in :class:`MildML`.
    n_rounds : int >= 1, default=5
    b0 : float, optional
        The threshold of Eq. 10 for the Euclidean clustering (default: the
        median squared distance of the instances).
    preprocessor : array_like, optional

    Attributes
    ----------
    labels_ : ndarray of int, shape (n_instances,)
        The instance labels of the last round, as indices into
        ``classes_seen_`` (``-1``: no name).
    classes_seen_ : ndarray
        The distinct caption labels.
    n_rounds_ : int
        LDML fits run (a round whose labels did not change is not counted).
    components_, b_, threshold_, objective_, status_, n_iter_, result_, \
n_features_in_
        As in :class:`LDML`.
    """

    _parameter_constraints = {
        **_SHARED,
        "n_rounds": [Interval(Integral, 1, None, closed="left")],
        "b0": [Interval(Real, None, None, closed="neither"), None],
        "preprocessor": ["array-like", None],
    }

    def __init__(self, n_components=None, lam="auto", regularizer="trace", n_init=1,
                 n_rounds=5, b0=None, preprocessor=None, tol=None, max_iter=None,
                 max_time=None, random_state=None, verbose=False):
        store_arguments(self, locals())

    @_budgeted
    def fit(self, bags, bag_labels):
        """Alternate instance labelling (Eq. 11) and low-rank LDML.

        Parameters
        ----------
        bags, bag_labels
            As in :meth:`MildML.fit`.

        Returns
        -------
        self : LDMLStar
        """
        X, idx, sets, classes = self._bags(bags, bag_labels)
        N, D = X.shape
        d = self._rank(D)
        X, k = self._units(X, "bags")  # the learning runs on unit-scale data
        rng = check_random_state(self.random_state)
        if self.b0 is None:
            sub = rng.choice(N, size=min(N, 2000), replace=False)
            Z = X[sub]
            sq = np.einsum("nd,nd->n", Z, Z)
            d2 = sq[:, None] + sq[None, :] - 2.0 * Z @ Z.T
            b = float(np.median(d2[np.triu_indices(len(sub), 1)]))
        else:
            b = math.ldexp(float(self.b0), -2 * k)  # squared distances of X_u
        Z, labels, res, rounds, loss = X, None, None, 0, None
        for _ in range(int(self.n_rounds)):
            new = label_instances(Z, idx, sets, b, name_all=True)
            if labels is not None and np.array_equal(new, labels):
                break  # the labels are a fixed point: no new fit
            if res is not None and expired():
                # max_time ran out in this labelling: the last round's fit
                # stands (a fit now would stop at its start)
                break
            labels = new
            rounds += 1
            # an unnamed instance is its own class (different from every other)
            train = labels.copy()
            free = np.flatnonzero(train < 0)
            train[free] = labels.max() + 1 + np.arange(free.size)
            loss = AllPairs(X, train, lam=0.0, regularizer=self.regularizer)
            zp = zero_point_labels(X, loss.labels, loss._rows)
            loss.lam = self._lam(zp, k)  # lam="auto": from this round's labels
            res = self._zero(zp, loss.lam)
            if res is None:
                res = fit_lowrank(loss, d, n_init=self.n_init, random_state=rng,
                                  warn=False, **_options(self))
            else:
                res.info["L"] = components_from_metric(res.M)[:d]
            L, b = res.info["L"], float(res.info["b"])
            Z = X @ L.T
            if expired():
                break  # max_time: the rounds so far
        self.n_rounds_ = rounds
        self.labels_ = labels
        self.classes_seen_ = classes
        self.classes_ = np.array([-1, 1])
        return self._store(res, D, res.info["L"], k=k, loss=loss)

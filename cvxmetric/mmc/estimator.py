"""MMC estimators: scikit-learn / metric-learn front ends of Xing et al.'s MMC.

:class:`MMC` is a *pairs learner* (metric-learn convention): ``fit(pairs, y)``
takes pairs as integer indices (n_pairs, 2) into ``preprocessor=X`` or as
points (n_pairs, 2, n_features), and labels ``y`` in {+1 (similar), -1
(dissimilar)}.  :class:`MMCSupervised` takes ``fit(X, y)`` with class labels
and samples the pairs itself with :func:`~cvxmetric.pairs_from_labels`.

Both build :class:`~cvxmetric.mmc.MMCData` and solve::

    min_{M PSD}  sum_S D2_M   s.t.   sum_D sqrt(D2_M) >= 1

(``M = diag(w)``, ``w >= 0`` with ``diagonal=True``) with the solver chosen by
``solver``:

==========  ==========  ==================================================  ===========
``solver``  diagonal    what runs                                           guarantee
==========  ==========  ==================================================  ===========
``exact``   either      :func:`~cvxmetric.mmc.solve_exact` (CVXPY)          certified
``fast``    ``False``   :class:`~cvxmetric.mmc.MMCProjectedGradient`        gap <= tol
``fast``    ``True``    :class:`~cvxmetric.mmc.MMCNewton` (Xing Sec. 2.2)   gap <= tol
==========  ==========  ==================================================  ===========

For a diagonal metric the fast solver is Xing's Newton method on
``h(w) = sum_S D2_w - log(sum_D sqrt D2_w)``: it has the same minimiser up
to scale and converges in 2-10 iterations on the collection (up to ~80 when
many weights end at 0), where projected gradient ascent needs tens.

``tol`` and ``max_iter`` go to the iterative solvers (``None`` keeps their
defaults); the exact path always solves to its certified accuracy.  The
learned ``M`` is scaled so that ``sum_D sqrt(D2_M) = 1``: ``objective_`` is
the paper's objective and equals ``scale_free_objective_``, the value
``sum_S D2 / (sum_D sqrt D2)^2`` that compares metrics of any scale.

Both take metric-learn 0.7's keywords, in metric-learn's order
(``max_iter, max_proj, tol, init, diagonal, diagonal_c, verbose,
preprocessor, random_state``, the deprecated ``convergence_threshold`` and
``num_constraints``), with metric-learn's meaning where it applies to a
certified solve; ``solver`` comes last.  ``init`` starts the fast solvers
(the exact solve needs no start); ``max_proj`` caps metric-learn's inner
loop of alternating projections, which the exact projection here replaces
(one ``eigh``), so it never binds; ``diagonal_c`` weights the dissimilarity
term of Xing's diagonal objective, which only scales its minimiser, and the
metric is returned at the scale ``sum_D sqrt(D2_M) = 1`` whatever its value.

With scikit-learn's ``array_api_dispatch`` on, ``MMCSupervised(solver="fast")``
keeps a PyTorch, CuPy or ``array-api-strict`` ``X`` on its namespace, and
``MMC(solver="fast")`` the same kind of array given as ``preprocessor`` or
as the pairs' points (n_pairs, 2, n_features): the sweeps over the pairs
run there (docs/backends.md), and ``pair_distance``, ``decision_function``
and ``predict`` of such pairs return arrays on that device.  The exact
path needs NumPy and refuses such input by name, as does a callable
``preprocessor`` that returns device arrays.

If a dissimilar difference has a component that no similar pair varies
along (the null space of ``A_S``), the optimum is 0, attained by any metric
that only sees such directions; the estimators then return the certified
projector onto them and emit a ``UserWarning`` saying so.
"""

import warnings
from numbers import Integral, Real
from types import SimpleNamespace

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.datasets import make_spd_matrix
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from .._backend import is_numpy, namespace, to_numpy
from .._base import (SOLVER_OPTION_CONSTRAINTS, LabelledMixin, MahalanobisMixin,
                     PairsClassifierMixin, _take_rows, fit_tuples, form_samples,
                     form_tuples, given_options, host_labels, renamed_keyword,
                     solver_names, store_arguments, validate_labelled)
from .._docs import fill_doc
from .._solver import conic_verbose
from .._validation import check_pair_labels, check_psd_matrix, check_samples
from ..constraints import LabeledPairs, pairs_from_labels, tuples_to_indices
from ..formulations import formulation
from ._problem import MMCData, labeled_pairs
from .exact import declared_problem
from .fast import MMCNewton, MMCProjectedGradient

__all__ = ["MMC", "MMCSupervised", "SOLVER_NAMES", "INIT_NAMES"]

#: Values of the estimators' ``solver`` parameter (the registry's methods).
SOLVER_NAMES = solver_names("mmc")

#: Values of ``init`` given by name (metric-learn's).
INIT_NAMES = ("identity", "covariance", "random")

_SHARED_CONSTRAINTS = {
    "max_proj": [Interval(Integral, 1, None, closed="left")],
    "init": [StrOptions(set(INIT_NAMES)), "array-like", None],
    "diagonal": ["boolean"],
    "diagonal_c": [Interval(Real, 0, None, closed="neither")],
    "preprocessor": ["array-like", callable, None],
    "convergence_threshold": [Interval(Real, 0, None, closed="neither"),
                              StrOptions({"deprecated"})],
    "solver": [StrOptions(set(SOLVER_NAMES))],
    **SOLVER_OPTION_CONSTRAINTS,
}


def _check_finite_params(est):
    """Refuse NaN and infinite real parameters by name (scikit-learn's
    Interval lets inf through an open bound)."""
    for name in ("tol", "diagonal_c", "convergence_threshold"):
        value = getattr(est, name)
        if isinstance(value, Real) and not np.isfinite(value):
            raise ValueError(f"{name}: must be finite, got {value!r}.")


class _MMCBase(MahalanobisMixin, BaseEstimator):
    """Solve and store: the part both MMC estimators share."""

    def _data(self, pairs):
        """The canonical :class:`MMCData` of validated labelled pairs."""
        return MMCData.from_pairs(pairs, diagonal=bool(self.diagonal))

    def _declared(self, data):
        """Eq. 2 on ``data``, unsolved; its certified solve sharpens the
        bound at its point as the exact path does (the registry's
        ``bound_polish``)."""
        return declared_problem(
            data, bound_polish=formulation("mmc").load("bound_polish"))

    def _initial_metric(self, pairs):
        """The starting metric ``init`` names, in the user's units (d, d):
        metric-learn's ``identity``, ``covariance`` (the pseudo-inverse of
        the covariance of the pairs' distinct points) and ``random``
        (:func:`~sklearn.datasets.make_spd_matrix` with ``random_state``),
        or a given symmetric PSD matrix; ``None`` for the solver's own."""
        init = self.init
        d = pairs.X.shape[1]
        if init is None:
            return None
        if isinstance(init, str):
            if init == "identity":
                return np.eye(d)
            if init == "covariance":
                points = to_numpy(_take_rows(pairs.X, np.unique(pairs.indices)))
                cov = np.atleast_2d(np.cov(points, rowvar=False))
                return np.linalg.pinv(cov, hermitian=True)
            if init == "random":
                return make_spd_matrix(d, random_state=check_random_state(self.random_state))
            raise ValueError(  # only reachable when validation was bypassed
                f"init: unknown option {init!r}; expected one of "
                f"{', '.join(map(repr, INIT_NAMES))} or a (d, d) matrix.")
        return check_psd_matrix(init, "init", d, tol=1e-8)

    def _solve(self, pairs):
        """Solve MMC on validated labelled pairs and store the fitted state."""
        _check_finite_params(self)
        tol = renamed_keyword("tol", self.tol, "convergence_threshold",
                       self.convergence_threshold)
        data = self._data(pairs)
        M0 = self._initial_metric(pairs)
        result = self._run_solver({
            "exact": lambda: formulation("mmc").solve_exact(
                data, verbose=conic_verbose(self.verbose)),
            "fast": lambda: self._solve_fast(data, M0, tol),
        })
        if "degenerate" in result.info:
            warnings.warn(result.info["degenerate"], UserWarning, stacklevel=4)
        self._store_result(result, data.n_features)
        self.scale_free_objective_ = float(result.info["scale_free"])
        self._log_fit(before=[("solver=%s", self.solver), ("diagonal=%s", self.diagonal)],
                      after=[("time=%.3gs", result.time)])
        return self

    def _solve_fast(self, data, M0, tol):
        """Xing's Newton method (diagonal) or projected gradient (full),
        started from ``M0`` when ``init`` gives one."""
        solver = MMCNewton if data.diagonal else MMCProjectedGradient
        start = None
        if M0 is not None:
            # the solvers' warm start: a result-like (M, info); a diagonal
            # problem starts from init's diagonal (metric-learn's rule)
            start = SimpleNamespace(M=M0, info={"w": np.diag(M0).copy()}
                                    if data.diagonal else {})
        result = solver(**given_options(tol=tol, maxiter=self.max_iter)).run(data, start)
        if not result.certificate.passed:
            # an uncertified point whose float matrix cannot carry its
            # own value: say so rather than report that value
            data.check_representable(result.M)
        return result


def _check_pair_labels(y, n_pairs):
    """``y`` as an int array of +1 / -1 with both labels present."""
    y = check_pair_labels(y, n_pairs, "y")
    if not np.any(y == 1):
        raise ValueError("y: no similar pair (label +1); MMC needs at least one.")
    if not np.any(y == -1):
        raise ValueError("y: no dissimilar pair (label -1); MMC needs at least one.")
    return y


@fill_doc(matrix="M")
class MMC(PairsClassifierMixin, _MMCBase):
    """Mahalanobis Metric for Clustering (Xing et al. 2002), pairs learner.

    Learns ``M`` solving::

        min_{M PSD}  sum_{(i,j) in S} D2_M(i, j)
        s.t.         sum_{(i,j) in D} sqrt(D2_M(i, j)) >= 1

    (Law et al. 2016, Eq. 2), with ``S`` the pairs labelled +1 and ``D``
    the pairs labelled -1.

    Parameters
    ----------
    max_iter : int >= 1, optional
        Iteration cap of the fast solvers (``None``: their default, 5 000
        projected-gradient or 200 Newton iterations; metric-learn's default
        is 100).  Ignored by ``"exact"``.
    max_proj : int >= 1, default=10000
        metric-learn's cap on its inner loop of alternating projections
        onto ``{sum_S D2 <= t}`` and the PSD cone.  The fast solver here
        projects exactly, with one ``eigh``, so the cap never binds;
        accepted for metric-learn scripts.
    tol : float > 0, optional
        Target certified relative gap of the fast solvers (``None``: their
        default).  Ignored by ``"exact"``.  metric-learn's ``tol`` bounds
        the relative step instead; the status here is ``optimal`` only
        when the certificate passes at the package's tolerance, whatever
        ``tol``.
    init : {"identity", "covariance", "random"}, array_like of shape \
(n_features, n_features) or None, default=None
        Starting metric of the fast solvers (metric-learn's meaning): the
        identity, the pseudo-inverse of the covariance of the pairs' points,
        a random SPD matrix (``make_spd_matrix`` with ``random_state``) or a
        symmetric PSD matrix; with ``diagonal=True`` its diagonal.  ``None``:
        the solver's own start (the whitened identity).  The problem is
        convex, so the start changes the iterations, not the certified
        optimum; the exact solve needs none (the value is still checked).
    diagonal : bool, default=False
        Learn a diagonal ``M = diag(w)``, ``w >= 0``.
    diagonal_c : float > 0, default=1.0
        metric-learn's weight ``c`` of the dissimilarity term of Xing's
        diagonal objective ``sum_S D2_w - c log(sum_D sqrt(D2_w))``.  Any
        ``c > 0`` has the same minimiser up to the factor ``c``, and the
        metric here is returned at the scale ``sum_D sqrt(D2_M) = 1``
        (Eq. 2's constraint), so the learned metric does not depend on it.
    verbose : bool or int, default=False
        ``True`` / ``1``: the fast solvers' progress lines and the fit's
        outcome (solver, status, objective, gap, iterations, time) at INFO
        on the ``cvxmetric`` logger (shown on standard error when
        ``logging`` is not configured); ``2``: also the conic solver's own
        log (``"exact"``); ``3``: DEBUG.
    preprocessor : array_like of shape (n_samples, n_features) or callable, \
optional
        Forms the points of pairs given as (n_pairs, 2) indicators: integer
        indices into an array, or any keys a callable turns into points
        (``preprocessor(pairs[:, k])`` is an (n_pairs, n_features) array,
        metric-learn's contract).
    random_state : int, RandomState instance or None, default=None
        Seeds ``init="random"``; no MMC solver is otherwise randomised.
    convergence_threshold : float > 0, optional
        Deprecated spelling of ``tol`` (metric-learn renamed it too):
        accepted with a ``FutureWarning``; giving both is an error.
    solver : {"exact", "fast"}, default="exact"
        Certified CVXPY solve, or the fast solver: projected gradient ascent
        with the exact projection (full), Xing's Newton method (diagonal).

    Attributes
    ----------
    {mahalanobis_attributes}
    objective_ : float
        ``sum_S D2_M`` at the learned ``M``, scaled so that
        ``sum_D sqrt(D2_M) = 1`` (the paper's units).
    scale_free_objective_ : float
        ``sum_S D2 / (sum_D sqrt D2)^2`` (equal to ``objective_``).
    {status_}
    n_iter_ : int
    certificate_ : Certificate
    {result_}
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from cvxmetric.mmc import MMC
    >>> X = np.array([[0.0, 0.0], [0.2, 1.0], [1.0, 0.0], [1.1, 1.3]])
    >>> est = MMC(preprocessor=X).fit([[0, 1], [2, 3], [0, 2], [1, 3]],
    ...                               [1, 1, -1, -1])
    >>> est.components_.shape
    (2, 2)
    """

    _parameter_constraints = {**_SHARED_CONSTRAINTS}

    def __init__(self, max_iter=None, max_proj=10000, tol=None, init=None,
                 diagonal=False, diagonal_c=1.0, verbose=False, preprocessor=None,
                 random_state=None, convergence_threshold="deprecated", solver="exact"):
        store_arguments(self, locals())

    def fit(self, pairs, y, calibration_params=None):
        """Learn ``M`` from labelled pairs, then calibrate ``threshold_``.

        Parameters
        ----------
        pairs : array_like
            Indicators (n_pairs, 2) formed by ``preprocessor`` (integer
            indices into an array, or keys of a callable), or points
            (n_pairs, 2, n_features).
        y : array_like of shape (n_pairs,)
            +1 (similar) or -1 (dissimilar); both must occur.
        {calibration_params}

        Returns
        -------
        self : MMC
        """
        labelled, y = self._fit_pairs(pairs, y, calibration_params)
        self._solve(labelled)
        return self._calibrate_after_fit(pairs, y, calibration_params)

    def _declare(self, pairs, y, calibration_params):
        """Eq. 2 on these pairs, as printed (user's units), unsolved."""
        labelled, _ = self._fit_pairs(pairs, y, calibration_params)
        return self._declared(self._data(labelled))

    def _fit_pairs(self, pairs, y, calibration_params):
        """Validate :meth:`fit`'s input: ``(LabeledPairs, labels)``."""
        self._check_calibration_params(calibration_params)
        # array_api_dispatch: the fast solvers sweep the pairs where their
        # points are (an array preprocessor, or the pairs' points)
        found = fit_tuples(self, pairs, "pairs", 2, keep_namespace=self.solver == "fast")
        if found is not None:
            X, idx, _ = found
            y = _check_pair_labels(host_labels(y), idx.shape[0])
            return labeled_pairs(X, idx, y), y
        X = self.preprocessor
        if callable(X):  # indicators formed into points (metric-learn)
            pairs, X = form_tuples(pairs, X, "pairs", 2), None
        elif X is not None:
            X = check_samples(X, "preprocessor")
        X, idx = tuples_to_indices(pairs, "pairs", width=2, preprocessor=X)
        y = _check_pair_labels(y, idx.shape[0])
        return LabeledPairs.create(X, idx, y), y


class MMCSupervised(LabelledMixin, TransformerMixin, _MMCBase):
    """MMC learned from class labels: ``fit(X, y)``.

    Samples ``n_constraints`` pairs with
    :func:`~cvxmetric.pairs_from_labels` (half same-class pairs, similar;
    half different-class pairs, dissimilar), drops pairs of identical
    points, and solves MMC as :class:`MMC` does.

    Parameters
    ----------
    max_iter, max_proj, tol
        As in :class:`MMC`.
    n_constraints : int >= 2, optional
        Number of pairs in all, half of each kind; default ``20 *
        n_classes^2``.  (metric-learn's ``MMC_Supervised`` draws that many
        pairs *of each kind*: pass twice the number to draw as many.)
    init, diagonal, diagonal_c, verbose
        As in :class:`MMC`.
    preprocessor : array_like of shape (n_samples, n_features) or callable, \
optional
        metric-learn's meaning: a 1-D ``X`` (in ``fit``, ``transform``,
        ``score``) holds indicators of samples, rows of an array
        ``preprocessor`` or keys a callable turns into an (n, n_features)
        array of points.  A 2-D ``X`` is the samples themselves.
    random_state : int, RandomState instance or None, default=None
        Seeds the pair sampling (and ``init="random"``).
    num_constraints : int >= 2, optional
        Deprecated spelling of ``n_constraints`` (metric-learn renamed it
        too): accepted with a ``FutureWarning``; giving both is an error.
    convergence_threshold : float > 0, optional
        Deprecated spelling of ``tol``, as in :class:`MMC`.
    solver : {"exact", "fast"}, default="exact"
        As in :class:`MMC`.

    Attributes
    ----------
    components_, mahalanobis_matrix_, objective_, scale_free_objective_, \
status_, n_iter_, certificate_, result_, n_features_in_
        As in :class:`MMC`.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from cvxmetric.mmc import MMCSupervised
    >>> X, y = load_iris(return_X_y=True)
    >>> MMCSupervised(n_constraints=100, random_state=0).fit_transform(X, y).shape
    (150, 4)
    """

    _parameter_constraints = {
        **_SHARED_CONSTRAINTS,
        "n_constraints": [Interval(Integral, 2, None, closed="left"), None],
        "num_constraints": [Interval(Integral, 2, None, closed="left"),
                            StrOptions({"deprecated"})],
    }

    def __init__(self, max_iter=None, max_proj=10000, tol=None, n_constraints=None,
                 init=None, diagonal=False, diagonal_c=1.0, verbose=False,
                 preprocessor=None, random_state=None, num_constraints="deprecated",
                 convergence_threshold="deprecated", solver="exact"):
        store_arguments(self, locals())

    def fit(self, X, y):
        """Sample labelled pairs from the classes and learn ``M``.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features) or (n_samples,)
            Samples, or indicators of samples (see ``preprocessor``).
        y : array_like of shape (n_samples,)
            Class labels (at least 2 classes, one with 2 samples).

        Returns
        -------
        self : MMCSupervised
        """
        return self._solve(self._sample(X, y))

    def _declare(self, X, y):
        """Eq. 2 on the constraints ``fit(X, y)`` samples."""
        return self._declared(self._data(self._sample(X, y)))

    def _sample(self, X, y):
        """Validate ``(X, y)`` and sample the labelled pairs."""
        X = form_samples(X, self.preprocessor)
        # the fast solvers run on X's namespace (array_api_dispatch)
        X, y, classes, _ = validate_labelled(self, X, y, ensure_min_samples=2,
                                             keep_namespace=self.solver == "fast")
        n_classes = classes.size
        n = renamed_keyword("n_constraints", self.n_constraints, "num_constraints",
                     self.num_constraints)
        if n is None:
            n = 20 * n_classes ** 2
        rng = check_random_state(self.random_state)
        idx, lab = pairs_from_labels(y, n, random_state=rng)
        i, j = idx.T
        keep = (i != j) & ~_identical_rows(X, i, j)
        idx, lab = idx[keep], lab[keep]
        for value, kind in ((1, "similar"), (-1, "dissimilar")):
            if not np.any(lab == value):
                raise ValueError(
                    f"X: every sampled {kind} pair joins identical points; "
                    f"MMC needs a {kind} pair with a nonzero difference.")
        return labeled_pairs(X, idx, lab)


def _identical_rows(X, i, j):
    """Whether rows ``i`` and ``j`` of ``X`` are equal, pair by pair (on
    ``X``'s namespace; the pair-sized answer comes to the host)."""
    if is_numpy(X):
        return np.all(X[i] == X[j], axis=1)
    xp, _ = namespace(X)
    same = xp.all(_take_rows(X, i) == _take_rows(X, j), axis=1)
    return np.asarray(to_numpy(same), dtype=bool)

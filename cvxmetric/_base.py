"""The Mahalanobis API every cvxmetric estimator shares (metric-learn conventions).

A learned Mahalanobis metric is a PSD matrix ``M`` (d, d); the squared
distance is ``D2_M(a, b) = (a - b)^T M (a - b)``.  Following metric-learn,
the fitted estimator exposes a factor ``L = components_`` with
``M = L^T L``, so that the metric is the Euclidean distance after the linear
map ``x -> L x`` (:meth:`MahalanobisMixin.transform`).

``L`` is computed from ``M`` by an eigendecomposition ``M = V diag(w) V^T``
with negative eigenvalues (round-off of the solver's PSD constraint) clipped
to zero: ``L = diag(sqrt(w_+)) V^T``, of shape (n_features, n_features) as
in metric-learn.  The matrix the estimator reports,
:meth:`MahalanobisMixin.get_mahalanobis_matrix`, is ``L^T L``, i.e. the
clipped ``M``, so that every method (transform, pair distances, the metric
callable) describes one and the same metric.  The unclipped solver output
stays available on the solver result.

Pairs are passed either as a 3-D array of points (n_pairs, 2, n_features) or,
when the estimator has a ``preprocessor``, as (n_pairs, 2) indicators: integer
indices into the sample matrix ``X``, or any keys a callable preprocessor
turns into points (metric-learn's contract, :func:`form_tuples`).
"""

import copy
import dataclasses
import logging
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import ClassNamePrefixFeaturesOutMixin, _fit_context, clone
from sklearn.metrics import precision_recall_curve, roc_auc_score, roc_curve
from sklearn.utils import ClassifierTags, TransformerTags, check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils._set_output import _SetOutputMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ._backend import (
    check_host_input,
    device_of,
    float64,
    is_dask,
    is_numpy,
    namespace,
    to_numpy,
)
from ._docs import fill_doc
from ._settings import _SCORE_CHUNK, MAX_SCORE_PAIRS, MAX_SCORE_REFERENCE
from ._solver import FitScopeMixin
from ._validation import check_finite, check_indices, check_pair_labels, check_samples
from .constraints import _row_ids, _zero_length, tuples_to_indices
from .formulations import formulation

__all__ = ["MahalanobisMixin", "BilinearMixin", "LabelledMixin", "PairsClassifierMixin",
           "TripletsClassifierMixin", "QuadrupletsClassifierMixin",
           "components_from_metric", "validate_labelled", "form_tuples",
           "device_tuples", "fit_tuples", "host_labels",
           "form_samples", "FitMixin", "store_arguments", "given_options",
           "solver_names", "array_ndim", "renamed_keyword", "default_n_constraints",
           "SOLVER_OPTION_CONSTRAINTS",
           "CALIBRATION_STRATEGIES", "MAX_SCORE_PAIRS", "MAX_SCORE_REFERENCE"]

logger = logging.getLogger("cvxmetric")

#: Strategies of :meth:`PairsClassifierMixin.calibrate_threshold`
#: (metric-learn's).
CALIBRATION_STRATEGIES = ("accuracy", "f_beta", "max_tpr", "max_tnr")

#: scikit-learn parameter constraints of the options most estimators take:
#: ``tol`` and ``max_iter`` of the iterative solvers (``None``: the solver's
#: own default), ``random_state`` and ``verbose``.
SOLVER_OPTION_CONSTRAINTS = {
    "tol": [Interval(Real, 0, None, closed="neither"), None],
    "max_iter": [Interval(Integral, 1, None, closed="left"), None],
    "random_state": ["random_state"],
    "verbose": ["verbose"],
}


def store_arguments(estimator, arguments):
    """Store the arguments of ``__init__`` as attributes of the same names.

    scikit-learn's rule: ``__init__`` stores its arguments, unchanged, and
    does nothing else (``get_params``, ``set_params`` and ``clone`` read
    them back by name; validation happens in ``fit``).  Every estimator's
    ``__init__`` is the one line ``store_arguments(self, locals())``: at
    that point ``locals()`` holds ``self`` and the parameters only.
    """
    for name, value in arguments.items():
        if name not in ("self", "__class__"):
            setattr(estimator, name, value)


def default_n_constraints(n_samples, n_constraints=None):
    """``n_constraints``, or the supervised tuple and pair learners' default
    sample, ``min(1000, 20 n_samples)``: enough to cover every sample a few
    times, bounded for the exact solvers."""
    return min(1000, 20 * n_samples) if n_constraints is None else n_constraints


def renamed_keyword(new_name, new_value, old_name, old_value, *, exclusive=True):
    """The value of a keyword metric-learn renamed: ``old_value`` (with a
    ``FutureWarning``) when the deprecated spelling is given, else
    ``new_value``; with ``exclusive``, both given (``new_value`` not None)
    is an error -- a keyword whose default is not None (ITML's ``tol``)
    cannot tell, and the deprecated spelling wins, as in metric-learn."""
    if isinstance(old_value, str) and old_value == "deprecated":
        return new_value
    if exclusive and new_value is not None:
        raise ValueError(f"{old_name}: deprecated spelling of {new_name}; "
                         f"give {new_name} only.")
    warnings.warn(f"{old_name} was renamed {new_name} (as in metric-learn); it "
                  f"will be removed in a future release.", FutureWarning,
                  stacklevel=4)
    return old_value


def array_ndim(a, name):
    """Number of dimensions of ``a``, or a ValueError naming ``name`` when
    it cannot be read as an array (ragged nested lists)."""
    try:
        return np.ndim(a)
    except Exception as exc:  # ragged nested lists
        raise ValueError(f"{name}: cannot be read as an array ({exc}).") from None


def given_options(**options):
    """The options the user set: those that are not ``None`` (``None``
    keeps the solver's own default, tuned per solver)."""
    return {name: value for name, value in options.items() if value is not None}


def solver_names(name):
    """The values of an estimator's ``solver`` parameter: the solvers of the
    registered formulation ``name``'s methods (:func:`cvxmetric.formulation`),
    each once, in the registry's order."""
    solvers = (m.params["solver"] for m in formulation(name).methods
               if "solver" in m.params)
    return tuple(dict.fromkeys(solvers))


class FitMixin(FitScopeMixin):
    """The plumbing every cvxmetric estimator's ``fit`` shares.

    * Each ``fit`` that a subclass with ``_parameter_constraints`` defines
      runs in scikit-learn's ``_fit_context`` (parameters validated first,
      nested validation skipped), and in the fit scope of
      :class:`~cvxmetric._solver.FitScopeMixin` around that: no ``fit``
      asks for either.
    * :meth:`_run_solver` runs the solver ``solver`` names;
      :meth:`_store_result` and :meth:`_store_outcome` store its result as
      ``_``-suffixed attributes; :meth:`_log_fit` logs the fit's summary.
    """

    def __init_subclass__(cls, **kwargs):
        fit = getattr(cls, "fit", None)  # inherited ones too (LabelledMixin's)
        # a fit already in the scope was wrapped in its own class
        if callable(fit) and hasattr(cls, "_parameter_constraints") \
                and not getattr(fit, "_cvxmetric_policy", False):
            cls.fit = _fit_context(prefer_skip_nested_validation=True)(fit)
        super().__init_subclass__(**kwargs)

    def _run_solver(self, solvers):
        """``solvers[self.solver]()``: the result of the solver the estimator's
        ``solver`` names (``solvers`` maps each name to a call without
        arguments); another value, reachable only when parameter validation
        was bypassed, is a ValueError naming ``solver``."""
        run = solvers.get(self.solver) if isinstance(self.solver, str) else None
        if run is None:
            raise ValueError(
                f"solver: unknown option {self.solver!r}; expected one of "
                f"{', '.join(repr(s) for s in solvers)}.")
        return run()

    def _store_outcome(self, result):
        """``objective_``, ``status_``, ``n_iter_`` and ``certificate_`` of a
        :class:`~cvxmetric.result.SolverResult`."""
        self.objective_ = float(result.objective)
        self.status_ = result.status
        self.n_iter_ = int(result.n_iter)
        self.certificate_ = result.certificate

    def _store_result(self, result, n_features=None):
        """The fitted state of a solver's result: ``result_`` (without the
        CVXPY model, too heavy to keep on an estimator and to pickle), the
        learned matrix (``_set_metric``), :meth:`_store_outcome`'s attributes
        and, given ``n_features`` (tuple learners: no ``validate_data``
        set it), ``n_features_in_``."""
        info = {k: v for k, v in result.info.items() if k != "model"}
        self.result_ = dataclasses.replace(result, info=info)
        self._set_metric(result.M)
        self._store_outcome(result)
        if n_features is not None:
            self.n_features_in_ = int(n_features)
        return self

    def _log_fit(self, before=(), after=()):
        """One line on the ``cvxmetric`` logger (INFO with ``verbose``, else
        DEBUG): the class, the fields ``before``, the outcome (status,
        objective, relative gap, iterations) and the fields ``after``; each
        field a ``(format, value)`` pair such as ``("solver=%s", solver)``."""
        fields = (*before, ("status=%s", self.status_), ("objective=%.6g", self.objective_),
                  ("rel_gap=%.3g", self.certificate_.rel_gap), ("n_iter=%d", self.n_iter_),
                  *after)
        log = logger.info if self.verbose else logger.debug
        log(" ".join(["%s:", *(f for f, _ in fields)]), type(self).__name__,
            *(v for _, v in fields))


def _reference_indices(codes, n_max, random_state):
    """Indices of a class-stratified sample of ``max(n_max, n_classes)``
    samples at most.

    Every sample when there are at most ``n_max``; otherwise each class
    gets a share proportional to its size (largest remainders), at least
    one sample, drawn without replacement.  ``random_state`` is read, not
    advanced: a ``RandomState`` instance is copied, so that the draws the
    fit makes after validation (pairs, tuples, starting points) are the
    ones it made before the reference existed.
    """
    n = codes.shape[0]
    if n <= n_max:
        return np.arange(n)
    counts = np.bincount(codes)
    exact = n_max * counts / n
    quota = np.floor(exact).astype(int)
    left = n_max - int(quota.sum())
    if left > 0:
        quota[np.argsort(-(exact - quota), kind="stable")[:left]] += 1
    quota = np.minimum(np.maximum(quota, 1), counts)
    quota[counts == 0] = 0
    rng = copy.deepcopy(check_random_state(random_state))
    chosen = [rng.choice(np.flatnonzero(codes == c), size=q, replace=False)
              for c, q in enumerate(quota) if q > 0]
    return np.sort(np.concatenate(chosen))


def _label_codes(y, y_ref):
    """One integer code per label of ``y`` followed by ``y_ref``: equal
    labels get equal codes (Python equality: ``1 == 1.0 == np.int64(1)``,
    ``"1" != 1``), whatever the two arrays' dtypes."""
    table = {}
    labels = np.concatenate([np.asarray(y, dtype=object).reshape(-1),
                             np.asarray(y_ref, dtype=object).reshape(-1)])
    return np.array([table.setdefault(v, len(table)) for v in labels], dtype=np.intp)


@fill_doc
class LabelledMixin:
    """Mixin of the ``fit(X, y)`` learners on class labels: ``y`` is required
    (scikit-learn tags); :meth:`fit` runs the estimator's ``_fit``;
    :func:`validate_labelled` checks ``y`` and keeps the reference set of
    :meth:`score`.

    On a Mahalanobis learner, :meth:`score` is the ROC-AUC of the pair
    classification "same class" vs "different class" by the learned
    distance, over the pairs of the samples given and their pairs with a
    class-stratified reference sample of the training set, so that any
    fold of a cross-validation, even one holding one class, is scored.
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags

    def fit(self, X, y):
        """Learn from samples and their class labels.

        Validates ``(X, y)``, forms from the labels the constraints of the
        estimator's problem (its class docstring says which; random draws
        take ``random_state``) and solves it.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)
        y : array_like of shape (n_samples,)
            Class labels; at least two classes.

        Returns
        -------
        self
        """
        return self._fit(X, y)

    def _fit(self, X, y):
        """The work of :meth:`fit` (parameters validated, in the fit's scope)."""
        raise NotImplementedError

    def declared_problem(self, X, y):
        """The problem :meth:`fit` solves on ``(X, y)``, as its paper prints
        it (user's units), unsolved.

        Validates as :meth:`fit` does and draws the same constraints as
        ``fit`` with the same ``random_state``; the estimator is not changed
        (a ``RandomState`` instance is not advanced either).  Which equation
        it is: the estimator's class docstring, or the registry's entry
        (:func:`cvxmetric.formulation`).

        {params_as_in_fit}

        {declared_returns}
        """
        self._validate_params()
        return clone(self)._declare(X, y)

    def _declare(self, X, y):
        """The declared problem of ``fit(X, y)``'s constraints (called on a
        clone: sampling may set attributes)."""
        raise NotImplementedError

    def _embed(self, X):
        """Validated samples in the learned coordinates (``X L^T``; a
        kernel learner overrides it)."""
        return X @ self.components_.T

    def _score_reference(self):
        """The reference samples and labels kept by ``fit``: ``(X, y)``,
        empty when the estimator was fitted without one."""
        X_ref = getattr(self, "_score_reference_X", None)
        if X_ref is None:
            return np.empty((0, self.n_features_in_)), np.empty(0)
        return X_ref, self._score_reference_y

    def _score_items(self, X, y):
        """``X`` followed by the reference samples, as ``(items, codes,
        ids)``: the stacked samples, integer label codes (equal labels,
        equal codes) and row ids (equal rows, equal ids)."""
        X_ref, y_ref = self._score_reference()
        items = np.vstack([X, X_ref])
        return items, _label_codes(y, y_ref), _row_ids(items)

    def _score_pairs(self, n, y_all, all_ids):
        """The pairs :meth:`score` ranks, as ``(left, right, same)``: indices
        into the items of :meth:`_score_items` (``left`` among the ``n``
        scored samples, ``right`` among them or the reference), and whether
        each pair shares a class; pairs of identical points are left out."""
        m = y_all.shape[0] - n
        n_inner, n_cross = n * (n - 1) // 2, n * m
        if n_inner + n_cross <= MAX_SCORE_PAIRS:
            i, j = np.triu_indices(n, k=1)
            a = np.repeat(np.arange(n), m)
            b = n + np.tile(np.arange(m), n)
            left, right = np.concatenate([i, a]), np.concatenate([j, b])
        else:
            # uniform over the pairs: each draw is an inner pair with
            # probability n_inner / (n_inner + n_cross)
            rng = check_random_state(getattr(self, "random_state", None))
            k = rng.binomial(MAX_SCORE_PAIRS, n_inner / (n_inner + n_cross))
            i = rng.randint(n, size=k)
            j = (i + 1 + rng.randint(max(n - 1, 1), size=k)) % n
            a = rng.randint(n, size=MAX_SCORE_PAIRS - k)
            b = n + rng.randint(max(m, 1), size=MAX_SCORE_PAIRS - k)
            left, right = np.concatenate([i, a]), np.concatenate([j, b])
        keep = ~_zero_length(all_ids, left, right)
        left, right = left[keep], right[keep]
        same = y_all[left] == y_all[right]
        return left, right, same

    def score(self, X, y):
        """ROC-AUC of same-class vs different-class pairs, with a reference.

        The pairs scored are every unordered pair of samples of ``X`` and
        every pair of a sample of ``X`` with a sample of the reference set
        that ``fit`` kept: the training samples, or a class-stratified
        sample of :data:`MAX_SCORE_REFERENCE` of them (drawn with
        ``random_state``).  Each pair is ranked by the learned similarity
        ``-D_M``; the score is the area under the ROC curve of "same class"
        (positive): 1 when every same-class pair is closer than every
        different-class pair, 0.5 for a metric that ranks pairs at random.

        The reference makes every fold of a cross-validation scorable,
        including one whose samples share one class (scikit-learn's default
        folds of class-sorted data): its samples are ranked by how they sit
        against the training classes, as a nearest-neighbour classifier
        would use them.  Pairs of identical points (equal in every feature,
        e.g. a training sample against its own copy in the reference) are
        left out: every metric gives them distance 0, so they say nothing
        about it.  On the training set itself, when the reference is the
        whole of it, each pair appears three times (once among ``X``, once
        each way against the reference) and the score is the in-sample pair
        ROC-AUC.  Beyond :data:`MAX_SCORE_PAIRS` pairs, a uniform sample of
        that many pairs (drawn with ``random_state``) is scored.  Used by
        ``GridSearchCV`` and ``cross_val_score`` when no ``scoring`` is
        given.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features) or (n_samples,)
            Samples, or (with a ``preprocessor``) 1-D indicators of samples.
        y : array_like of shape (n_samples,)
            Class labels, compared with the training labels.

        Returns
        -------
        score : float

        Raises
        ------
        ValueError
            When the pairs hold no same-class or no different-class pair
            (e.g. every label of ``y`` is absent from the training labels
            and ``y`` has one class).
        """
        check_is_fitted(self, "components_")
        X = form_samples(X, getattr(self, "preprocessor", None))
        X, y = validate_data(self, X, y, reset=False, dtype=np.float64)
        items, codes, ids = self._score_items(X, y)
        left, right, same = self._score_pairs(X.shape[0], codes, ids)
        if not same.any() or same.all():
            kind = "same-class" if not same.any() else "different-class"
            raise ValueError(
                f"y: scoring needs both same-class and different-class pairs; "
                f"the samples, with the training reference, form no {kind} "
                f"pair of distinct points (are the labels of y those seen in "
                f"fit?).")
        Z = self._embed(items)
        dist = np.empty(left.shape[0])
        for start in range(0, left.shape[0], _SCORE_CHUNK):
            stop = start + _SCORE_CHUNK
            diff = Z[left[start:stop]] - Z[right[start:stop]]
            dist[start:stop] = np.sqrt(np.einsum("ij,ij->i", diff, diff))
        return float(roc_auc_score(same, -dist))


def dispatched(X):
    """Whether a ``fit`` keeps ``X`` in its own array namespace: scikit-learn's
    ``array_api_dispatch`` is on (``sklearn.set_config``, which needs
    ``SCIPY_ARRAY_API=1``) and ``X`` is an array of another library than
    NumPy (PyTorch, CuPy, array-api-strict).  Lists and pandas frames are
    read as NumPy."""
    from sklearn import get_config

    return (bool(get_config().get("array_api_dispatch", False))
            and not is_numpy(X) and not isinstance(X, (list, tuple))
            and not hasattr(X, "iloc"))


def _take_rows(X, idx):
    """``X[idx]`` for a NumPy, array-API or ``dask.array`` ``X`` (integer
    rows)."""
    if is_numpy(X) or is_dask(X):
        return X[idx]
    xp, _ = namespace(X)
    return xp.take(X, xp.asarray(np.asarray(idx), device=device_of(X)), axis=0)


def _device_shape(X):
    """``X.shape`` of a 2-D device array (or ``dask.array``); a clear error
    otherwise."""
    if getattr(X, "ndim", None) != 2:
        raise ValueError(f"X: expected a 2-D array, got {getattr(X, 'ndim', None)} "
                         "dimensions.")
    if not all(isinstance(s, Integral) for s in X.shape):
        # a dask array of unknown chunk sizes (e.g. from a frame)
        raise ValueError("X: its shape is not known (a dask array of unknown chunk "
                         "sizes); call X.compute_chunk_sizes() first.")
    return X.shape


def _transform_device(estimator, X):
    """``X @ components_.T`` for an ``X`` kept on its device (see
    :func:`dispatched`), in ``X``'s namespace and float64: the checks of
    :func:`validate_data` with ``reset=False`` (2-D, the fitted number of
    features, finite), the result where ``X`` is, as scikit-learn's
    transformers return under ``array_api_dispatch``."""
    d = estimator.n_features_in_
    if _device_shape(X)[1] != d:
        raise ValueError(f"X has {X.shape[1]} features, but {type(estimator).__name__} "
                         f"is expecting {d} features as input.")
    xp, _ = namespace(X)
    X = float64(X, xp)
    if not bool(xp.all(xp.isfinite(X))):
        raise ValueError("X: contains NaN or infinity.")
    return X @ xp.asarray(estimator.components_.T, device=device_of(X))


def _validate_device(estimator, X, y):
    """What :func:`validate_data` checks, for an ``X`` kept on its device:
    2-D, non-empty, at least 2 samples; ``n_features_in_`` set; ``y`` (small)
    read on the host.  Finiteness and float64 are the data class's
    (checked on the device)."""
    n, d = _device_shape(X)
    if n < 2 or d < 1:
        raise ValueError(f"X: expected at least 2 samples and 1 feature, got shape "
                         f"({n}, {d}).")
    y = np.asarray(to_numpy(y)).reshape(-1)  # lists and tensors alike
    if y.shape[0] != n:
        raise ValueError(f"y: {y.shape[0]} labels for {n} samples.")
    estimator.n_features_in_ = int(d)
    return X, y


def validate_labelled(estimator, X, y, *, keep_namespace=False, keep_dask=False,
                      **kwargs):
    """Validate the ``(X, y)`` of a ``fit(X, y)`` learner on class labels.

    :func:`~sklearn.utils.validation.validate_data` (float64, keyword
    arguments passed on), classification targets and at least two classes,
    ``keep_namespace=True`` (learners whose fast path has an array-API back
    end): under scikit-learn's ``array_api_dispatch``, ``X`` of another
    array library is returned as it is (see :func:`dispatched`);
    ``keep_dask=True`` (learners whose chosen path runs as Dask tasks): a
    ``dask.array`` ``X`` is returned as it is, its values checked by the
    data class on the cluster (otherwise scikit-learn's validation computes
    it into memory); each error naming its argument.  Keeps on
    ``estimator`` the reference set of :meth:`LabelledMixin.score`
    (private attributes): the samples, or a class-stratified sample of
    :data:`MAX_SCORE_REFERENCE` of them drawn with a copy of the
    estimator's ``random_state`` (so that the fit's own draws are
    unchanged).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    classes : ndarray of shape (n_classes,)
    codes : ndarray of shape (n_samples,)
        ``classes[codes] == y``.
    """
    if (keep_namespace and dispatched(X)) or (keep_dask and is_dask(X)):
        X, y = _validate_device(estimator, X, y)
    else:
        if dispatched(X):
            # scikit-learn's validation would fail on it with a dtype error
            # that names nothing; this learner's chosen path runs on NumPy
            check_host_input(X, "X", _learner_name(estimator))
        X, y = validate_data(estimator, X, y, dtype=np.float64, **kwargs)
    try:
        check_classification_targets(y)
    except ValueError as exc:  # scikit-learn's message does not name y
        raise ValueError(f"y: {exc}") from None
    classes, codes = np.unique(y, return_inverse=True)
    if classes.size < 2:
        raise ValueError(
            f"y: {type(estimator).__name__} needs at least 2 classes, got 1 class.")
    codes = codes.reshape(-1)
    ref = _reference_indices(codes, MAX_SCORE_REFERENCE,
                             getattr(estimator, "random_state", None))
    estimator._score_reference_X = np.array(to_numpy(_take_rows(X, ref)), dtype=np.float64)
    estimator._score_reference_y = np.array(y[ref])
    return X, y, classes, codes


def _learner_name(estimator):
    """``Name(solver='...')`` for the messages that refuse device input."""
    solver = getattr(estimator, "solver", None)
    return type(estimator).__name__ + (f"(solver={solver!r})" if solver is not None else "")


def device_tuples(tuples, preprocessor, name, width):
    """Tuples whose points are on a device, under ``array_api_dispatch``.

    The points are the array ``preprocessor`` indexed by ``tuples``, or
    ``tuples`` of shape (n_tuples, width, n_features) themselves, when that
    array is of another library than NumPy (see :func:`dispatched`); the
    indices are checked on the host.  Points given as tuples are not merged
    when equal (NumPy's path keeps one row per distinct point): each tuple
    gets its own rows.

    Returns
    -------
    None, or (X, indices, argument)
        ``X`` (n_points, n_features) on the device, the (n_tuples, width)
        host indices into it, and the name of the argument that held it.
    """
    if preprocessor is not None and not callable(preprocessor) and dispatched(preprocessor):
        if getattr(preprocessor, "ndim", None) != 2 or 0 in tuple(preprocessor.shape):
            raise ValueError(f"preprocessor: expected a non-empty 2-D array, got shape "
                             f"{tuple(getattr(preprocessor, 'shape', ()))}.")
        idx = tuples if is_numpy(tuples) or isinstance(tuples, (list, tuple)) \
            else to_numpy(tuples)
        return preprocessor, check_indices(idx, name, preprocessor.shape[0],
                                           width=width), "preprocessor"
    if not dispatched(tuples) or getattr(tuples, "ndim", None) != 3:
        return None
    n, w, d = tuples.shape
    if w != width or n == 0 or d == 0:
        raise ValueError(f"{name}: expected a non-empty array of shape (n_{name}, "
                         f"{width}, n_features), got {tuple(tuples.shape)}.")
    xp, _ = namespace(tuples)
    return xp.reshape(tuples, (n * w, d)), np.arange(n * w).reshape(n, w), name


def fit_tuples(estimator, tuples, name, width, *, keep_namespace):
    """:func:`device_tuples` for a pairs learner's ``fit``: the device
    points where the chosen path runs on their namespace
    (``keep_namespace``), else a ``TypeError`` naming the argument and the
    learner; ``None`` for host input (the NumPy path)."""
    found = device_tuples(tuples, getattr(estimator, "preprocessor", None), name, width)
    if found is not None and not keep_namespace:
        check_host_input(found[0], found[2], _learner_name(estimator))
    return found


def _device_pair_distance(estimator, X, idx):
    """``||L (a - b)||`` of pairs of rows ``idx`` (host) of a device ``X``,
    in float64 on its device; the result stays there (scikit-learn's
    ``array_api_dispatch`` convention)."""
    if X.shape[1] != estimator.n_features_in_:
        raise ValueError(f"pairs: points have {X.shape[1]} features, but "
                         f"{type(estimator).__name__} was fitted with "
                         f"{estimator.n_features_in_}.")
    xp, _ = namespace(X)
    X, dev = float64(X, xp), device_of(X)
    if not bool(xp.all(xp.isfinite(X))):
        raise ValueError("pairs: the points contain NaN or infinity.")
    a, b = (xp.asarray(np.ascontiguousarray(idx[:, k]), device=dev) for k in (0, 1))
    diff = (xp.take(X, a, axis=0) - xp.take(X, b, axis=0)) \
        @ xp.asarray(estimator.components_.T, device=dev)
    return xp.sqrt(xp.sum(diff * diff, axis=1))


def host_labels(y):
    """Labels or scores (one per sample or pair) read on the host, from a
    device array too."""
    return y if is_numpy(y) or isinstance(y, (list, tuple)) else np.asarray(to_numpy(y))


def components_from_metric(M):
    """Factor ``L`` with ``L^T L = Pi_PSD(M)``.

    Parameters
    ----------
    M : ndarray of shape (d, d)
        A symmetric matrix, PSD up to round-off.

    Returns
    -------
    L : ndarray of shape (d, d)
        ``diag(sqrt(max(w, 0))) V^T`` for ``M = V diag(w) V^T``.  Negative
        eigenvalues are clipped to zero, so ``L^T L`` is the projection of
        ``M`` onto the PSD cone.
    """
    M = check_finite(M, "M", ndim=2)
    if M.shape[0] != M.shape[1]:
        raise ValueError(f"M: expected a square matrix, got shape {M.shape}.")
    w, V = np.linalg.eigh(0.5 * (M + M.T))
    return (V * np.sqrt(np.maximum(w, 0.0))).T


def _call_preprocessor(preprocessor, indicators, name):
    """Points ``preprocessor(indicators)`` of a callable preprocessor
    (metric-learn's contract: a 1-D array of indicators in, an
    (n, n_features) array of points out), checked finite."""
    try:
        points = preprocessor(indicators)
    except Exception as exc:  # the user's callable: say where it failed
        raise ValueError(
            f"preprocessor: the callable raised {type(exc).__name__} on the "
            f"indicators of {name} ({exc}).") from exc
    if dispatched(points):  # not converted silently: say which forms keep it
        # (device points are kept as preprocessor=X or as the tuples' points)
        check_host_input(points, "preprocessor", "a callable preprocessor")
    points = check_finite(points, "preprocessor", ndim=2)
    if points.shape[0] != len(indicators):
        raise ValueError(
            f"preprocessor: the callable returned {points.shape[0]} points for "
            f"{len(indicators)} indicators of {name}.")
    return points


def form_tuples(tuples, preprocessor, name, width):
    """Tuples of indicators formed into points by a callable preprocessor.

    metric-learn's meaning: with a callable ``preprocessor``, tuples of
    shape (n_tuples, width) hold indicators of points (indices, file names,
    any key the callable understands) and column ``k`` becomes
    ``preprocessor(tuples[:, k])``, an (n_tuples, n_features) array.
    Anything else is returned unchanged, for the array-preprocessor and
    3-D-points paths.

    Returns
    -------
    tuples : ndarray of shape (n_tuples, width, n_features), or the input
    """
    if not callable(preprocessor):
        return tuples
    try:
        arr = np.asarray(tuples)
    except Exception as exc:  # ragged nested lists
        raise ValueError(f"{name}: cannot be read as an array ({exc}).") from None
    if arr.ndim != 2:
        return tuples  # points, or a shape the checks after this refuse
    if arr.shape[1] != width:
        raise ValueError(
            f"{name}: expected shape (n_{name}, {width}) of indicators for the "
            f"preprocessor, got {arr.shape}.")
    if arr.shape[0] == 0:
        raise ValueError(f"{name}: none given.")
    columns = [_call_preprocessor(preprocessor, arr[:, k], name) for k in range(width)]
    if len({c.shape[1] for c in columns}) != 1:
        raise ValueError(f"preprocessor: the callable returned points of "
                         f"different dimensions for the columns of {name}.")
    return np.stack(columns, axis=1)


def form_samples(X, preprocessor, name="X"):
    """Samples given as indicators, formed by ``preprocessor``.

    metric-learn's meaning for the supervised learners: a 1-D ``X`` holds
    indicators of samples, formed by a callable ``preprocessor`` or taken
    as integer row indices into an array one.  A 2-D ``X`` (the samples
    themselves) and ``preprocessor=None`` leave ``X`` unchanged.
    """
    if preprocessor is None or np.ndim(X) != 1:
        return X
    if callable(preprocessor):
        return _call_preprocessor(preprocessor, np.asarray(X), name)
    samples = check_samples(preprocessor, "preprocessor")
    idx = check_indices(np.asarray(X).reshape(-1, 1), name, samples.shape[0])
    return samples[idx[:, 0]]


@fill_doc
class MahalanobisMixin(FitMixin, ClassNamePrefixFeaturesOutMixin, _SetOutputMixin):
    """Mahalanobis-metric methods for a fitted estimator (metric-learn API).

    A subclass sets ``components_`` (via :meth:`_set_metric`) and
    ``n_features_in_`` in ``fit``.  If it has a ``preprocessor`` parameter
    (the sample matrix ``X``), pairs may be given as indices into it.

    ``transform`` supports scikit-learn's ``set_output`` (e.g. pandas
    output; the columns are ``get_feature_names_out()``, the lowercased
    class name and an index).  The tuple learners get it from here rather
    than from ``TransformerMixin``, whose ``fit_transform(X, y)`` would
    transform the tuples they are fitted on.

    Attributes
    ----------
    components_ : ndarray of shape (n_features, n_features)
        ``L`` with ``M = L^T L``.
    mahalanobis_matrix_ : ndarray of shape (n_features, n_features)
        ``L^T L``: the learned PSD matrix with round-off negative eigenvalues
        clipped.
    n_features_in_ : int
        Number of features seen in ``fit``.
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        if tags.transformer_tags is None:  # tuple learners: transform, no fit_transform
            tags.transformer_tags = TransformerTags()
        return tags

    @property
    def _n_features_out(self):
        """Number of output features of :meth:`transform` (rows of ``components_``)."""
        return self.components_.shape[0]

    def _set_metric(self, M):
        """Store ``components_`` and ``mahalanobis_matrix_`` from a PSD ``M``."""
        L = components_from_metric(M)
        self.components_ = L
        self.mahalanobis_matrix_ = L.T @ L
        return self

    def get_mahalanobis_matrix(self):
        """The learned matrix ``M = components_.T @ components_``.

        {matrix_returns}
        """
        check_is_fitted(self, "components_")
        return self.components_.T @ self.components_

    def transform(self, X):
        """Map samples to the space where the metric is Euclidean.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features) or (n_samples,)
            Samples, or (with a ``preprocessor``) 1-D indicators of samples
            formed by it, as in metric-learn.

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_features)
            ``X @ components_.T``.
        """
        check_is_fitted(self, "components_")
        X = form_samples(X, getattr(self, "preprocessor", None))
        if dispatched(X):
            return _transform_device(self, X)
        # scikit-learn's validation: standard messages for NaN, sparse input
        # and a wrong number of features ("X has 3 features, but ...")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return X @ self.components_.T

    def _pair_points(self, pairs):
        """Validate ``pairs`` and return the points, shape (n_pairs, 2, d)."""
        return self._tuple_points(pairs, "pairs", 2)

    def _tuple_points(self, tuples, name, width):
        """Validate ``tuples`` of ``width`` points (3-D points, or indices
        into ``preprocessor``) and return the points, (n_tuples, width, d)."""
        check_is_fitted(self, "components_")
        preprocessor = getattr(self, "preprocessor", None)
        tuples = form_tuples(tuples, preprocessor, name, width)
        ndim = array_ndim(tuples, name)
        expected = f"(n_{name}, {width}, n_features)"
        if ndim == 3:
            points = check_finite(tuples, name, ndim=3)
            if points.shape[1] != width:
                raise ValueError(
                    f"{name}: expected shape {expected}, got {points.shape}.")
        elif preprocessor is None:
            # tuples_to_indices raises the message that explains integer
            # indices need a preprocessor (or that points must be 3-D)
            tuples_to_indices(tuples, name, width=width)
            raise ValueError(
                f"{name}: expected shape {expected}, got {np.shape(tuples)}.")
        else:
            X = check_samples(preprocessor, "preprocessor")
            X, idx = tuples_to_indices(tuples, name, width=width, preprocessor=X)
            points = X[idx]  # (n_tuples, width, d)
        if points.shape[0] == 0:
            raise ValueError(f"{name}: none given.")
        if points.shape[2] != self.n_features_in_:
            raise ValueError(
                f"{name}: points have {points.shape[2]} features, but "
                f"{type(self).__name__} was fitted with {self.n_features_in_}."
            )
        return points

    def _distances(self, points, a, b):
        """``D_M`` between columns ``a`` and ``b`` of ``points`` (n, width, d)."""
        diff = (points[:, a] - points[:, b]) @ self.components_.T
        return np.sqrt(np.sum(diff * diff, axis=1))

    def pair_distance(self, pairs):
        """Learned distance ``sqrt(D2_M(a, b))`` of each pair.

        {pairs_parameters}

        Returns
        -------
        distances : ndarray of shape (n_pairs,)
        """
        # ||L (a - b)||: the distance of the transformed points, without
        # cancellation from transforming a and b separately
        found = device_tuples(pairs, getattr(self, "preprocessor", None), "pairs", 2)
        if found is not None:  # array_api_dispatch: where the points are
            check_is_fitted(self, "components_")
            return _device_pair_distance(self, *found[:2])
        return self._distances(self._pair_points(pairs), 0, 1)

    def score_pairs(self, pairs):
        """Learned distance of each pair (deprecated: metric-learn's name).

        metric-learn 0.7 deprecated ``score_pairs`` in favour of
        :meth:`pair_distance` (distances) and :meth:`pair_score`
        (similarities); as there, it returns :meth:`pair_distance` with a
        ``FutureWarning``.

        {pairs_parameters}

        Returns
        -------
        distances : ndarray of shape (n_pairs,)
        """
        warnings.warn(
            "score_pairs is deprecated (as in metric-learn 0.7): use "
            "pair_distance for distances or pair_score for similarity scores.",
            FutureWarning, stacklevel=2)
        return self.pair_distance(pairs)

    def pair_score(self, pairs):
        """Similarity score of each pair: ``-pair_distance(pairs)``.

        Higher means more similar (the scikit-learn scoring convention).

        {pairs_parameters}

        Returns
        -------
        scores : ndarray of shape (n_pairs,)
        """
        return -self.pair_distance(pairs)

    def get_metric(self):
        """A callable ``metric(u, v, squared=False)`` on two 1-D points.

        The returned function holds a copy of ``components_``: refitting the
        estimator does not change it.  It can be passed as ``metric=`` to
        scikit-learn's neighbours and clustering estimators.

        Returns
        -------
        metric : callable
        """
        check_is_fitted(self, "components_")
        L = self.components_.copy()
        d = L.shape[1]

        def metric(u, v, squared=False):
            """Learned (squared if ``squared``) distance between ``u`` and ``v``."""
            u = check_finite(u, "u", shape=(d,))
            v = check_finite(v, "v", shape=(d,))
            z = L @ (u - v)
            d2 = float(z @ z)
            return d2 if squared else float(np.sqrt(d2))

        return metric


@fill_doc
class BilinearMixin(FitMixin):
    """Methods of a fitted bilinear similarity ``s(a, b) = a^T M b``.

    A subclass sets ``bilinear_matrix_`` (d, d), a general matrix (neither
    symmetric nor PSD), and ``n_features_in_``.  Shared by SLR and
    :class:`~cvxmetric.model.BilinearMetric`.
    """

    def _set_metric(self, M):
        """Store ``bilinear_matrix_``: the general ``M``, as it is."""
        self.bilinear_matrix_ = np.asarray(M, dtype=float)
        return self

    def get_bilinear_matrix(self):
        """The learned ``M`` (a copy): ``similarity(a, b) = a^T M b``.

        {matrix_returns}
        """
        check_is_fitted(self, "bilinear_matrix_")
        return self.bilinear_matrix_.copy()

    def pair_score(self, pairs):
        """Bilinear similarity ``a^T M b`` of each pair ``(a, b)``.

        Higher means more similar.  Not symmetric in general:
        ``score(a, b) != score(b, a)`` unless ``M`` is symmetric.

        Parameters
        ----------
        pairs : array_like of shape (n_pairs, 2, n_features)

        Returns
        -------
        scores : ndarray of shape (n_pairs,)
        """
        check_is_fitted(self, "bilinear_matrix_")
        points = check_finite(pairs, "pairs", ndim=3)
        d = self.n_features_in_
        if points.shape[1] != 2 or points.shape[2] != d:
            raise ValueError(
                f"pairs: expected shape (n_pairs, 2, {d}), got {points.shape}."
            )
        if points.shape[0] == 0:
            raise ValueError("pairs: no pairs given.")
        return np.einsum("pi,pi->p", points[:, 0] @ self.bilinear_matrix_,
                         points[:, 1])

    def pairwise_similarity(self, X, Y=None):
        """Similarities ``X M Y^T`` of every row of ``X`` with every row of ``Y``.

        Parameters
        ----------
        X : array_like of shape (n_a, n_features)
            Queries (left argument).
        Y : array_like of shape (n_b, n_features), optional
            Items (right argument); default ``X``.

        Returns
        -------
        S : ndarray of shape (n_a, n_b)
            ``S[a, b] = X[a]^T M Y[b]``: rank items for query ``a`` by
            ``S[a]`` in decreasing order.
        """
        check_is_fitted(self, "bilinear_matrix_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        Y = X if Y is None else validate_data(self, Y, reset=False, dtype=np.float64)
        return (X @ self.bilinear_matrix_) @ Y.T


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def _check_calibration(strategy="accuracy", min_rate=None, beta=1.0):
    """ValueError naming the argument of a bad calibration setting."""
    if strategy not in CALIBRATION_STRATEGIES:
        raise ValueError(f"strategy: unknown {strategy!r}; expected one of "
                         f"{', '.join(map(repr, CALIBRATION_STRATEGIES))}.")
    if strategy in ("max_tpr", "max_tnr") and not (
            _is_real(min_rate) and 0 <= min_rate <= 1):
        raise ValueError(f"min_rate: strategy {strategy!r} needs a number in "
                         f"[0, 1], got {min_rate!r}.")
    if strategy == "f_beta" and not (_is_real(beta) and np.isfinite(beta) and beta > 0):
        raise ValueError(f"beta: expected a finite number > 0, got {beta!r}.")


@fill_doc
class PairsClassifierMixin:
    """Pair classification by a distance threshold (metric-learn's API).

    A pair is predicted similar (+1) when its learned distance is at most
    ``threshold_``, dissimilar (-1) otherwise.  ``fit`` calibrates the
    threshold on the training pairs (strategy ``"accuracy"``, or
    ``calibration_params``); :meth:`set_threshold` and
    :meth:`calibrate_threshold` change it.  :meth:`score` is the ROC-AUC of
    :meth:`decision_function` (it does not depend on the threshold), so
    ``GridSearchCV`` and ``cross_val_score`` need no ``scoring``.

    Attributes
    ----------
    threshold_ : float
        Distance threshold of :meth:`predict`.
    classes_ : ndarray of shape (2,)
        ``[-1, 1]``.
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.estimator_type = "classifier"
        # two classes of pairs, +1 and -1
        tags.classifier_tags = ClassifierTags(multi_class=False)
        return tags

    @staticmethod
    def _check_calibration_params(calibration_params):
        """The ``calibration_params`` of ``fit`` as a dict (checked before
        the solve, so that a typo does not cost one)."""
        params = {} if calibration_params is None else calibration_params
        if not isinstance(params, dict):
            raise ValueError(
                f"calibration_params: expected a dict of calibrate_threshold "
                f"arguments or None, got {type(params).__name__}.")
        unknown = sorted(map(str, set(params) - {"strategy", "min_rate", "beta"}))
        if unknown:
            raise ValueError(f"calibration_params: unknown keys {unknown}; "
                             f"expected strategy, min_rate, beta.")
        _check_calibration(**params)
        return params

    def declared_problem(self, pairs, y, calibration_params=None):
        """The problem :meth:`fit` solves on these pairs, as its paper prints
        it (user's units), unsolved.

        Takes exactly what :meth:`fit` takes and validates it as ``fit``
        does (``calibration_params`` is checked, then unused); the estimator
        is not changed.  Which equation it is: the estimator's class
        docstring, or the registry's entry (:func:`cvxmetric.formulation`).
        A problem that no metric satisfies (an infeasible one, e.g. a
        cannot-link of identical points) is returned as declared; its
        ``solve()`` raises the error of :mod:`cvxmetric.result` that says so
        (:class:`~cvxmetric.result.InfeasibleError`).

        {params_as_in_fit}

        {declared_returns}
        """
        self._validate_params()
        return self._declare(pairs, y, calibration_params)

    def _declare(self, pairs, y, calibration_params):
        """The declared problem of validated :meth:`fit` input."""
        raise NotImplementedError

    def _calibrate_after_fit(self, pairs, y, calibration_params):
        """Set ``classes_`` and the threshold at the end of ``fit``."""
        self.classes_ = np.array([-1, 1])
        params = self._check_calibration_params(calibration_params)
        return self.calibrate_threshold(pairs, y, **params)

    def decision_function(self, pairs):
        """``-D_M`` of each pair: higher means more similar.

        {pairs_parameters}

        Returns
        -------
        scores : ndarray of shape (n_pairs,)
        """
        return -self.pair_distance(pairs)

    def predict(self, pairs):
        """+1 (similar) where ``D_M <= threshold_``, else -1.

        {pairs_parameters}

        Returns
        -------
        y_pred : ndarray of int, shape (n_pairs,)
        """
        check_is_fitted(self, "threshold_")
        dist = self.pair_distance(pairs)
        if not is_numpy(dist):  # on the device of the pairs' points
            xp, _ = namespace(dist)
            return 2 * xp.astype(dist <= self.threshold_, xp.int64) - 1
        return np.where(dist <= self.threshold_, 1, -1)

    def score(self, pairs, y):
        """ROC-AUC of :meth:`decision_function` against the labels ``y``.

        Parameters
        ----------
        {pairs_parameter}
        y : array_like of shape (n_pairs,)
            +1 (similar) or -1 (dissimilar), both present.

        Returns
        -------
        score : float
        """
        scores = host_labels(self.decision_function(pairs))
        y = check_pair_labels(host_labels(y), scores.shape[0])
        if np.all(y == y[0]):
            raise ValueError("y: ROC-AUC needs both similar (+1) and dissimilar "
                             "(-1) pairs.")
        return float(roc_auc_score(y, scores))

    def set_threshold(self, threshold):
        """Set the distance threshold of :meth:`predict`.

        Parameters
        ----------
        threshold : float
            Finite.

        Returns
        -------
        self
        """
        check_is_fitted(self, "components_")
        try:
            value = float(threshold)
        except (TypeError, ValueError):
            raise ValueError(f"threshold: expected a real number, got "
                             f"{type(threshold).__name__}.") from None
        if not np.isfinite(value):
            raise ValueError(f"threshold: must be finite, got {value}.")
        self.threshold_ = value
        return self

    def calibrate_threshold(self, pairs_valid, y_valid, strategy="accuracy",
                            min_rate=None, beta=1.0):
        """Choose ``threshold_`` on labelled pairs (metric-learn's strategies).

        Parameters
        ----------
        pairs_valid : array_like
            As in :meth:`decision_function`.
        y_valid : array_like of shape (n_pairs,)
            +1 / -1.
        strategy : {"accuracy", "f_beta", "max_tpr", "max_tnr"}
            Maximise the accuracy; the F-beta score; the true positive rate
            subject to a true negative rate of at least ``min_rate``; the
            true negative rate subject to a true positive rate of at least
            ``min_rate``.
        min_rate : float in [0, 1], optional
            Required by ``"max_tpr"`` and ``"max_tnr"``.
        beta : float > 0
            Of ``"f_beta"``.

        Returns
        -------
        self
        """
        _check_calibration(strategy, min_rate, beta)
        # -D, higher = similar (on the host: the search is over P scores)
        scores = host_labels(self.decision_function(pairs_valid))
        y = check_pair_labels(host_labels(y_valid), scores.shape[0], "y_valid")
        if strategy == "accuracy":
            order = np.argsort(-scores, kind="stable")
            s, yo = scores[order], y[order]
            # accept the first k pairs (k = 0..n): positives accepted plus
            # negatives rejected
            tp = np.concatenate([[0], np.cumsum(yo == 1)])
            tn = np.concatenate([np.cumsum((yo == -1)[::-1])[::-1], [0]])
            k = int(np.argmax(tp + tn))
            # a threshold between the k-th and (k+1)-th distances
            dist = -s
            if k == 0:
                self.threshold_ = float(dist[0] - 1.0)
            elif k == len(dist):
                self.threshold_ = float(dist[-1])
            else:
                self.threshold_ = float(dist[k - 1])
            return self
        if strategy == "f_beta":
            precision, recall, thr = precision_recall_curve(y, scores, pos_label=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                f = (1 + beta ** 2) * precision * recall / (beta ** 2 * precision + recall)
            f = np.nan_to_num(f[:-1])  # the last point has no threshold
            self.threshold_ = float(-thr[int(np.argmax(f))])
            return self
        fpr, tpr, thr = roc_curve(y, scores, pos_label=1, drop_intermediate=False)
        if strategy == "max_tpr":
            ok = np.flatnonzero(1 - fpr >= min_rate)
            best = ok[np.argmax(tpr[ok])]
        else:
            ok = np.flatnonzero(tpr >= min_rate)
            best = ok[np.argmax(1 - fpr[ok])]
        # thr[0] is +inf (accept nothing): a threshold below every distance
        t = thr[best]
        self.threshold_ = float(-t) if np.isfinite(t) else float(np.min(-scores) - 1.0)
        return self


class _OrderedTuplesMixin:
    """``predict`` / ``decision_function`` / ``score`` of tuple learners whose
    tuples state "the second pair is farther apart than the first"."""

    _tuple_name = "tuples"
    _width = 0

    def _near_far(self, tuples):
        points = self._tuple_points(tuples, self._tuple_name, self._width)
        if self._width == 3:  # (a, b, c): D(a, b) < D(a, c)
            return self._distances(points, 0, 1), self._distances(points, 0, 2)
        return self._distances(points, 0, 1), self._distances(points, 2, 3)

    def decision_function(self, tuples):
        """Far distance minus near distance: positive when the tuple holds."""
        near, far = self._near_far(tuples)
        return far - near

    def predict(self, tuples):
        """+1 where the tuple's ordering holds (strictly), else -1."""
        return np.where(self.decision_function(tuples) > 0, 1, -1)

    def score(self, tuples, y=None):
        """Fraction of the tuples whose ordering the learned metric satisfies.

        As metric-learn: a tuple is satisfied when its second pair is
        strictly farther apart than its first (margins are not asked for).
        ``y`` is accepted for scikit-learn and must be None.
        """
        if y is not None:
            raise ValueError(f"y: {type(self).__name__}.score takes no labels "
                             f"(the order within each tuple is the label).")
        return float(np.mean(self.decision_function(tuples) > 0))


class TripletsClassifierMixin(_OrderedTuplesMixin):
    """Triplets ``(a, b, c)`` meaning ``D(a, b) < D(a, c)`` (metric-learn's API).

    ``decision_function`` is ``D(a, c) - D(a, b)``, ``predict`` its sign
    (+1 when the triplet holds), ``score`` the fraction of triplets held.
    Triplets are points (n, 3, n_features) or indices (n, 3) into
    ``preprocessor``.
    """

    _tuple_name = "triplets"
    _width = 3

    # metric-learn's argument names, so that keyword calls bind
    def decision_function(self, triplets):
        """``D(a, c) - D(a, b)``: positive when the triplet holds."""
        return super().decision_function(triplets)

    def predict(self, triplets):
        """+1 where ``D(a, b) < D(a, c)`` (strictly), else -1."""
        return super().predict(triplets)

    def score(self, triplets, y=None):
        """Fraction of the triplets the learned metric satisfies (strictly);
        ``y`` must be None."""
        return super().score(triplets, y)


class QuadrupletsClassifierMixin(_OrderedTuplesMixin):
    """Quadruplets ``(a, b, c, d)`` meaning ``D(a, b) < D(c, d)`` (metric-learn's API).

    ``decision_function`` is ``D(c, d) - D(a, b)``, ``predict`` its sign
    (+1 when the quadruplet holds), ``score`` the fraction held.
    Quadruplets are points (n, 4, n_features) or indices (n, 4) into
    ``preprocessor``.
    """

    _tuple_name = "quadruplets"
    _width = 4

    # metric-learn's argument names, so that keyword calls bind
    def decision_function(self, quadruplets):
        """``D(c, d) - D(a, b)``: positive when the quadruplet holds."""
        return super().decision_function(quadruplets)

    def predict(self, quadruplets):
        """+1 where ``D(a, b) < D(c, d)`` (strictly), else -1."""
        return super().predict(quadruplets)

    def score(self, quadruplets, y=None):
        """Fraction of the quadruplets the learned metric satisfies
        (strictly); ``y`` must be None."""
        return super().score(quadruplets, y)

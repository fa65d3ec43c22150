"""Qwise estimators: scikit-learn / metric-learn front ends of Eq. 8 and Eq. 11.

:class:`Qwise` is a *tuple learner* (metric-learn convention): ``fit`` takes
quadruplets ``(i, j, k, l)`` -- "pair (k, l) should be farther apart than
pair (i, j) by the margin delta" -- and optionally labelled pairs, as integer
indices into ``preprocessor=X`` or as 3-D arrays of points.
:class:`QwiseSupervised` takes ``fit(X, y)`` with class labels and samples
the quadruplets itself (same-class pair closer than a different-class pair).

Both build :class:`~cvxmetric.qwise.QwiseData` and hand it to one of the
Qwise solvers, selected by ``solver``:

==================  ===============================================  ===========
``solver``          what runs                                        guarantee
==================  ===============================================  ===========
``"fast"``          :class:`~cvxmetric.qwise.QwiseDualSolver`        certified
                    (default)
``"exact"``         :func:`~cvxmetric.qwise.solve_exact` (CVXPY)     certified
``"subgradient"``   :class:`~cvxmetric.qwise.ProjectedSubgradient`   Algorithm 1
==================  ===============================================  ===========

``tol`` and ``max_iter`` go to the iterative solvers only (``None`` keeps
their defaults); the exact path always solves to its certified accuracy.
A failed solve raises the solver's :class:`~cvxmetric.result.SolverError`;
an iterative solver stopping on ``max_iter`` emits a ``ConvergenceWarning``
and the estimator keeps its last iterate with ``status_ == "max_iter_reached"``.

Under scikit-learn's ``array_api_dispatch``, ``solver="fast"`` keeps a
PyTorch, CuPy or ``array-api-strict`` ``X`` (for :class:`Qwise`: an array
``preprocessor``, or the tuples' points) on its namespace: the constraints
are sampled or indexed on a host copy, the dual solver's passes run on the
device (:meth:`QwiseData.on_device <cvxmetric.qwise.QwiseData.on_device>`)
and the fitted attributes are NumPy arrays.  The exact and subgradient
paths run on NumPy and refuse such input by name.  With or without
dispatch, :class:`QwiseSupervised` keeps a ``dask.array`` ``X`` on its
cluster for ``solver="fast"``: the full passes run as Dask tasks.
"""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from .._backend import is_numpy, namespace, to_numpy
from .._base import (SOLVER_OPTION_CONSTRAINTS, LabelledMixin, MahalanobisMixin,
                     QuadrupletsClassifierMixin, array_ndim, default_n_constraints,
                     given_options, solver_names, store_arguments, validate_labelled)
from .._base import fit_tuples
from .._docs import fill_doc
from .._solver import conic_verbose
from .._validation import check_samples
from ..constraints import (
    LabeledPairs,
    Quadruplets,
    informative,
    pairs_from_labels,
    quadruplets_from_labels,
    tuples_to_indices,
)
from ..formulations import formulation
from ._problem import REGULARIZERS, QwiseData
from .exact import declared_problem
from .fast import ProjectedSubgradient, QwiseDualSolver

__all__ = ["Qwise", "QwiseSupervised", "SOLVER_NAMES"]

#: Values of the estimators' ``solver`` parameter (the registry's methods).
SOLVER_NAMES = solver_names("qwise")

# Parameters shared by both estimators (scikit-learn parameter validation).
_SHARED_CONSTRAINTS = {
    "regularizer": [StrOptions(set(REGULARIZERS))],
    "C_q": [Interval(Real, 0, None, closed="left")],
    "C_p": [Interval(Real, 0, None, closed="left")],
    "u": [Interval(Real, 0, None, closed="left"), None],
    "l": [Interval(Real, 0, None, closed="left"), None],
    "solver": [StrOptions(set(SOLVER_NAMES))],
    **SOLVER_OPTION_CONSTRAINTS,
}


class _QwiseBase(MahalanobisMixin, BaseEstimator):
    """Solve and store: the part both Qwise estimators share."""

    def _data(self, quadruplets, pairs=None):
        """The canonical :class:`QwiseData` of validated sets."""
        return QwiseData.from_sets(
            quadruplets, pairs, regularizer=self.regularizer, C_q=self.C_q,
            C_p=self.C_p, u=self.u, l=self.l,
        )

    def _solve(self, quadruplets, pairs=None, device_X=None):
        """Solve Eq. 8 / Eq. 11 on validated sets and store the fitted state.

        Parameters
        ----------
        quadruplets : Quadruplets
        pairs : LabeledPairs, optional
            Over the same ``X`` as ``quadruplets``.
        device_X : array, optional
            The samples on their array-API device (``array_api_dispatch``)
            or a ``dask.array``, holding the values of ``quadruplets.X``:
            the fast solver's passes run there (:meth:`QwiseData.on_device`);
            the fitted attributes are NumPy.
        """
        data = self._data(quadruplets, pairs)
        # the host copy of device_X the sets were built on: checked, counted
        fast_data = (data if device_X is None
                     else data.on_device(device_X, host_copy=quadruplets.X))
        # only the hyperparameters the user set: None keeps the solver's own
        # defaults, which are tuned per solver
        options = given_options(tol=self.tol, maxiter=self.max_iter)
        result = self._run_solver({
            # the registry's exact path: it hands over the fast warm start
            "exact": lambda: formulation("qwise").solve_exact(
                data, verbose=conic_verbose(self.verbose)),
            "fast": lambda: QwiseDualSolver(**options).run(fast_data),
            "subgradient": lambda: ProjectedSubgradient(**options).run(data),
        })
        self._store_result(result, data.n_features)
        self._log_fit(before=[("solver=%s", self.solver)],
                      after=[("n_constraints=%d", data.n_constraints)])
        return self


@fill_doc(matrix="M")
class Qwise(QuadrupletsClassifierMixin, _QwiseBase):
    """Quadruplet-wise metric learning (Law, Thome, Cord 2016), tuple learner.

    Learns a PSD matrix ``M`` solving Eq. 8, or Eq. 11 when labelled pairs
    are given::

        min_{M PSD}  Omega(M) + C_q sum_q [delta_q + D2_M(i, j) - D2_M(k, l)]_+
                     + C_p sum_S [D2_M(i, j) - u]_+ + C_p sum_D [l - D2_M(i, j)]_+

    Parameters
    ----------
    regularizer : {"trace", "frobenius", "similar"}, default="trace"
        ``Omega(M)``: ``tr(M)``, ``0.5 ||M||_F^2`` or ``tr(M A_S)`` with
        ``A_S`` the sum of ``C_ij`` over the similar pairs (or, without
        pairs, over the closer pairs of the quadruplets).
    C_q : float >= 0, default=1.0
        Weight of the quadruplet hinge losses.
    C_p : float >= 0, default=1.0
        Weight of the pair hinge losses (Eq. 11; unused without pairs).
    u, l : float >= 0, optional
        Upper bound for similar and lower bound for dissimilar squared
        distances, ``u <= l``.  Required when ``pairs`` are given to ``fit``,
        ignored otherwise.
    solver : {"exact", "fast", "subgradient"}, default="fast"
        The restarted primal-dual solver (certified by its duality gap),
        the certified CVXPY solve, or the paper's Algorithm 1.  ``"fast"``
        is the default as the fastest certified solver on scikit-learn's
        bundled data as loaded (iris 0.14 s, wine 6.2 s, digits 6.0 s,
        digits PCA-30 1.2 s; raw breast cancer, features from 1e-3 to 4e3,
        certified in 13 s of CPU where the exact path's Clarabel fails and
        its SCS fallback ran past 20 minutes).
    tol : float > 0, optional
        Stopping tolerance of the iterative solvers (``None``: their
        default).  Ignored by ``"exact"``.
    max_iter : int >= 1, optional
        Iteration cap of the iterative solvers (``None``: their default).
        Ignored by ``"exact"``.
    preprocessor : array_like of shape (n_samples, n_features), optional
        The sample matrix ``X`` that integer tuples index into.  Callables
        are not supported.
    random_state : int, RandomState instance or None, default=None
        No Qwise solver is randomised today; the parameter is kept so that
        :class:`Qwise` and :class:`QwiseSupervised` share hyperparameters
        (metric-learn convention).
    {verbose}

    Attributes
    ----------
    {mahalanobis_attributes}
    objective_ : float
        Eq. 8 / Eq. 11 objective at the solver's ``M``, in the paper's units.
    {status_}
    n_iter_ : int
        Solver iterations (interior-point iterations for ``"exact"``).
    certificate_ : Certificate
        Dual bound, gap, violation and smallest eigenvalue of the solution.
    {result_}
    n_features_in_ : int

    Notes
    -----
    Tuples are given in one of two ways, the same for quadruplets and pairs:

    * integer indices, quadruplets (n_quadruplets, 4) and pairs (n_pairs, 2),
      into ``preprocessor``;
    * 3-D arrays of points, quadruplets (n_quadruplets, 4, n_features) and
      pairs (n_pairs, 2, n_features).  Identical points are merged and one
      sample matrix is built from the points of *both* sets, so that
      quadruplets and pairs refer to the same ``X``; ``preprocessor`` is not
      used by ``fit`` then.

    Mixing the two ways in one call is an error.

    {quadruplets_example}
    >>> est.components_.shape
    (2, 2)
    """

    _parameter_constraints = {
        **_SHARED_CONSTRAINTS,
        "preprocessor": ["array-like", None],
    }

    def __init__(self, regularizer="trace", C_q=1.0, C_p=1.0, u=None, l=None,
                 solver="fast", tol=None, max_iter=None, preprocessor=None,
                 random_state=None, verbose=False):
        store_arguments(self, locals())

    def fit(self, quadruplets, y=None, *, delta=1.0, pairs=None, pair_labels=None):
        """Learn ``M`` from quadruplets (Eq. 8) and optional pairs (Eq. 11).

        Parameters
        ----------
        quadruplets : array_like
            Integer indices (n_quadruplets, 4) into ``preprocessor``, or
            points (n_quadruplets, 4, n_features).  ``(i, j, k, l)`` asks for
            ``D2_M(k, l) >= D2_M(i, j) + delta``.
        y : None
            Not used (the order within each quadruplet is its label, as in
            metric-learn); present for scikit-learn's ``fit(X, y)``.  A
            value other than None is refused: margins go by keyword,
            ``delta=``.
        delta : float or array_like of shape (n_quadruplets,), default=1.0
            Margins (keyword only).
        pairs : array_like, optional
            Integer indices (n_pairs, 2) or points (n_pairs, 2, n_features),
            given the same way as ``quadruplets``.
        pair_labels : array_like of shape (n_pairs,), optional
            +1 (similar) or -1 (dissimilar); required with ``pairs``.

        Returns
        -------
        self : Qwise
        """
        quads, labelled, device_X = self._fit_sets(quadruplets, y, delta, pairs,
                                                   pair_labels)
        return self._solve(quads, labelled, device_X)

    def declared_problem(self, quadruplets, y=None, *, delta=1.0, pairs=None,
                         pair_labels=None):
        """Eq. 8 / Eq. 11 on this input, as declared, without solving it.

        {takes_what_fit_takes}

        {params_as_in_fit}

        {declared_returns_units}
        """
        self._validate_params()
        quads, labelled, _ = self._fit_sets(quadruplets, y, delta, pairs, pair_labels)
        return declared_problem(self._data(quads, labelled))

    def _fit_sets(self, quadruplets, y, delta, pairs, pair_labels):
        """Validate :meth:`fit`'s input; the quadruplets, the pairs and the
        samples on their device (``None`` on NumPy's path)."""
        if y is not None:
            raise ValueError(
                "y: Qwise.fit takes no labels (each quadruplet (i, j, k, l) "
                "already says D(k, l) >= D(i, j) + delta); pass margins by "
                "keyword, fit(quadruplets, delta=...).")
        if (pairs is None) != (pair_labels is None):
            missing = "pair_labels" if pair_labels is None else "pairs"
            raise ValueError(
                f"{missing}: pairs and pair_labels must be given together."
            )
        if pairs is not None:
            if self.u is None or self.l is None:
                raise ValueError(
                    "u, l: both bounds are required when pairs are given "
                    f"(got u={self.u!r}, l={self.l!r}); set them with "
                    "Qwise(u=..., l=...)."
                )
            pair_labels = self._check_pair_labels(pair_labels)
        if self.solver == "fast":
            # the dual solver's passes run on the points' namespace
            # (array_api_dispatch)
            found = self._device_sets(quadruplets, delta, pairs, pair_labels)
            if found is not None:
                return found
        return (*self._build_sets(quadruplets, delta, pairs, pair_labels), None)

    def _device_sets(self, quadruplets, delta, pairs, pair_labels):
        """The sets of points on a device (an array ``preprocessor``, or
        tuples of points) over a host copy of their sample matrix, and that
        matrix on its device; ``None`` for host input."""
        found_q = fit_tuples(self, quadruplets, "quadruplets", 4, keep_namespace=True)
        found_p = None if pairs is None else fit_tuples(self, pairs, "pairs", 2,
                                                        keep_namespace=True)
        if found_q is None and found_p is None:
            return None
        if found_q is None or (pairs is not None and found_p is None):
            raise ValueError(
                "pairs: must be given the same way as quadruplets (both indices "
                "into one preprocessor, or both points of one array library).")
        X, q_idx, arg = found_q
        p_idx = None
        if found_p is not None:
            Xp, p_idx, _ = found_p
            if arg != "preprocessor":
                # points given as tuples: one X of both sets' rows (not merged)
                if Xp.shape[1] != X.shape[1]:
                    raise ValueError(f"pairs: points have {Xp.shape[1]} features, "
                                     f"quadruplets have {X.shape[1]}.")
                xp, _ = namespace(X)
                p_idx = p_idx + X.shape[0]
                X = xp.concat([X, Xp], axis=0)
        host = np.asarray(to_numpy(X), dtype=np.float64)
        return (*_index_sets(host, q_idx, delta, p_idx, pair_labels), X)

    @staticmethod
    def _check_pair_labels(pair_labels):
        """Labels as an int array of +1 / -1, or a ValueError naming them."""
        y = np.asarray(pair_labels)
        if y.ndim != 1:
            raise ValueError(
                f"pair_labels: expected a 1-D array, got shape {y.shape}."
            )
        if y.dtype == object or y.dtype.kind not in "iuf" or not np.all(
            np.isin(y, (-1, 1))
        ):
            raise ValueError(
                "pair_labels: must be +1 (similar) or -1 (dissimilar), got "
                f"values {np.unique(y.astype(str))[:5].tolist()}."
            )
        return y.astype(int)

    def _build_sets(self, quadruplets, delta, pairs, pair_labels):
        """Quadruplets and pairs over one sample matrix."""
        fit_tuples(self, quadruplets, "quadruplets", 4, keep_namespace=False)
        if pairs is not None:
            fit_tuples(self, pairs, "pairs", 2, keep_namespace=False)
        q_points = array_ndim(quadruplets, "quadruplets") == 3
        if pairs is not None and (array_ndim(pairs, "pairs") == 3) != q_points:
            raise ValueError(
                "pairs: must be given the same way as quadruplets (both "
                "integer indices into preprocessor, or both 3-D arrays of "
                "points)."
            )
        if not q_points:
            X = self.preprocessor
            if X is not None:
                # validate once so that both sets share the same array object
                X = check_samples(X, "preprocessor")
            X, q_idx = tuples_to_indices(
                quadruplets, "quadruplets", width=4, preprocessor=X
            )
            p_idx = None
            if pairs is not None:
                _, p_idx = tuples_to_indices(pairs, "pairs", width=2, preprocessor=X)
        else:
            Xq, q_idx = tuples_to_indices(quadruplets, "quadruplets", width=4)
            X, p_idx = Xq, None
            if pairs is not None:
                Xp, p_idx = tuples_to_indices(pairs, "pairs", width=2)
                if Xp.shape[1] != Xq.shape[1]:
                    raise ValueError(
                        f"pairs: points have {Xp.shape[1]} features, "
                        f"quadruplets have {Xq.shape[1]}."
                    )
                # one X from the distinct points of both sets
                X, inv = np.unique(np.vstack([Xq, Xp]), axis=0, return_inverse=True)
                inv = inv.reshape(-1)
                q_idx = inv[: len(Xq)][q_idx]
                p_idx = inv[len(Xq):][p_idx]
        return _index_sets(X, q_idx, delta, p_idx, pair_labels)


@fill_doc(learner="Qwise")
class QwiseSupervised(LabelledMixin, TransformerMixin, _QwiseBase):
    """Qwise learned from class labels: ``fit(X, y)``.

    Samples ``n_constraints`` quadruplets ``(i, j, k, l)`` with
    ``y_i == y_j`` and ``y_k != y_l`` (a same-class pair should be closer,
    by margin 1, than a different-class pair) with
    :func:`~cvxmetric.quadruplets_from_labels`, then solves Eq. 8 as
    :class:`Qwise` does.  When both ``u`` and ``l`` are set it also samples
    ``n_constraints`` labelled pairs (:func:`~cvxmetric.pairs_from_labels`,
    half similar, half dissimilar) and solves Eq. 11.

    Parameters
    ----------
    n_constraints : int >= 1, optional
        Number of quadruplets (and of pairs).  Default
        ``min(1000, 20 * n_samples)``: enough to cover every sample a few
        times on small data, and a size the exact solver handles in seconds.
    regularizer, C_q, C_p, solver, tol, max_iter, verbose
        As in :class:`Qwise`.
    u, l : float >= 0, optional
        Set both to add pair constraints (Eq. 11); leave both unset for
        Eq. 8.  Setting only one is an error.
    random_state : int, RandomState instance or None, default=None
        Seeds the constraint sampling.

    Attributes
    ----------
    {supervised_attributes}

    Notes
    -----
    Sampled quadruplets whose two pairs are both identical points, or whose
    two pairs join the same two points (possible only with rows of ``X``
    duplicated across classes), do not depend on ``M`` and are dropped, as
    are sampled similar / dissimilar pairs of identical points.
    ``objective_`` is the objective over the kept constraints.

    {iris_example}
    """

    _parameter_constraints = {
        **_SHARED_CONSTRAINTS,
        "n_constraints": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(self, n_constraints=None, regularizer="trace", C_q=1.0, C_p=1.0,
                 u=None, l=None, solver="fast", tol=None, max_iter=None,
                 random_state=None, verbose=False):
        store_arguments(self, locals())

    def _fit(self, X, y):
        """Sample the quadruplets (and pairs) and solve Eq. 8 / Eq. 11."""
        quads, labelled, device_X = self._sample(X, y)
        return self._solve(quads, labelled, device_X)

    def _declare(self, X, y):
        """Eq. 8 / Eq. 11 on the constraints ``fit(X, y)`` samples."""
        quads, labelled, _ = self._sample(X, y)
        return declared_problem(self._data(quads, labelled))

    def _sample(self, X, y):
        """Validate ``(X, y)`` and sample the quadruplets (and pairs);
        ``(Quadruplets, LabeledPairs or None, device X or None)``."""
        # the fast solver's passes run on X's namespace (array_api_dispatch),
        # its full passes as Dask tasks on a dask X
        X, y, _, _ = validate_labelled(self, X, y, ensure_min_samples=2,
                                       keep_namespace=self.solver == "fast",
                                       keep_dask=self.solver == "fast")
        if (self.u is None) != (self.l is None):
            raise ValueError(
                f"u, l: set both (Eq. 11 with pairs) or neither (Eq. 8), got "
                f"u={self.u!r}, l={self.l!r}."
            )
        device_X = None
        if not is_numpy(X):
            # the constraints' bookkeeping (sampling, identical points,
            # canonical sets) is on the host: one host copy of X
            device_X, X = X, np.asarray(to_numpy(X), dtype=np.float64)
        quads, labelled = _label_sets(X, y, self.n_constraints, self.random_state,
                                      with_pairs=self.u is not None)
        return quads, labelled, device_X


def _index_sets(X, q_idx, delta, p_idx, pair_labels):
    """:class:`Quadruplets` and (``p_idx`` given) :class:`LabeledPairs`
    over ``X``: ``(Quadruplets, LabeledPairs or None)``."""
    quads = Quadruplets.create(X, q_idx, delta)
    if p_idx is None:
        return quads, None
    if len(pair_labels) != len(p_idx):
        raise ValueError(
            f"pair_labels: expected shape ({len(p_idx)},), got "
            f"({len(pair_labels)},)."
        )
    return quads, LabeledPairs.create(X, p_idx, pair_labels)


def _label_sets(X, y, n_constraints, random_state, *, with_pairs):
    """Quadruplets (margin 1) and, ``with_pairs``, labelled pairs sampled
    from class labels: ``(Quadruplets, LabeledPairs or None)``.

    ``n_constraints`` of each (default ``min(1000, 20 * n_samples)``).
    """
    n = default_n_constraints(X.shape[0], n_constraints)
    rng = check_random_state(random_state)
    quads = quadruplets_from_labels(y, n, random_state=rng)
    # with rows duplicated across classes the label sampler can draw
    # quadruplets that compare nothing: both pairs of zero length, or
    # both pairs joining the same two points
    useful = informative(X, quads)
    if not np.any(useful):
        raise ValueError(
            "X: every sampled quadruplet compares identical points or a "
            "distance with itself; the data has no information on the "
            "metric."
        )
    quads = Quadruplets.create(X, quads[useful], 1.0)
    labelled = None
    if with_pairs:
        p_idx, p_lab = pairs_from_labels(y, max(n, 2), random_state=rng)
        keep = ~_same_point(X, p_idx[:, 0], p_idx[:, 1])
        if np.any(keep):
            labelled = LabeledPairs.create(X, p_idx[keep], p_lab[keep])
    return quads, labelled


def _same_point(X, i, j):
    """Boolean mask: rows ``i`` and ``j`` of ``X`` are identical points."""
    return (i == j) | np.all(X[i] == X[j], axis=1)

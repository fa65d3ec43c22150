"""Qwise structural estimators: scikit-learn / metric-learn front ends of
Eq. 16 (Sec. 4.4).

:class:`QwiseStructural` is a tuple learner (quadruplets, or triplets with
``reading="triplets"``); :class:`QwiseStructuralSupervised` takes ``fit(X,
y)`` and samples its tuples from the labels.  Both build
:class:`~cvxmetric.qwise_structural.StructuralData` and hand it to the
solver selected by ``solver``: ``"cutting_plane"``
(:class:`~cvxmetric.qwise_structural.StructuralCuttingPlane`), ``"exact"``
(:func:`~cvxmetric.qwise_structural.solve_exact`) or ``"fast"``
(:func:`~cvxmetric.qwise_structural.solve_structural_fast`).
"""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from .._base import (
    LabelledMixin,
    MahalanobisMixin,
    _OrderedTuplesMixin,
    array_ndim,
    default_n_constraints,
    given_options,
    store_arguments,
    validate_labelled,
)
from .._base import fit_tuples
from .._docs import fill_doc
from .._solver import conic_verbose
from ..constraints import (
    Quadruplets,
    Triplets,
    informative,
    quadruplets_from_labels,
    triplets_from_labels,
    tuples_to_indices,
)
from ..formulations import formulation
from ..result import SolverError
from ._problem import STRUCTURAL_REGULARIZERS, StructuralData
from .exact import declared_problem
from .fast import StructuralCuttingPlane, solve_structural_fast

__all__ = ["QwiseStructural", "QwiseStructuralSupervised", "STRUCTURAL_SOLVERS"]



#: Values of the estimators' ``solver`` parameter.
STRUCTURAL_SOLVERS = ("cutting_plane", "exact", "fast")

_SHARED_CONSTRAINTS = {
    "regularizer": [StrOptions(set(STRUCTURAL_REGULARIZERS))],
    "C": [Interval(Real, 0, None, closed="neither")],
    "reading": [StrOptions({"quadruplets", "triplets"})],
    "solver": [StrOptions(set(STRUCTURAL_SOLVERS))],
    "epsilon": [Interval(Real, 0, None, closed="neither"), None],
    "max_iter": [Interval(Integral, 1, None, closed="left"), None],
    "random_state": ["random_state"],
    "verbose": ["verbose"],
}

_WIDTH = {"quadruplets": 4, "triplets": 3}


class _StructuralBase(MahalanobisMixin, BaseEstimator):
    """Solve and store: the part both structural estimators share."""

    def _solve(self, data):
        """Solve Eq. 16 on :class:`StructuralData` by ``solver`` and store the
        fitted state."""
        options = given_options(epsilon=self.epsilon, maxiter=self.max_iter)
        result = self._run_solver({
            "cutting_plane": lambda: _scale_checked(
                data, lambda: StructuralCuttingPlane(**options).run(data)),
            "exact": lambda: _scale_checked(
                data, lambda: formulation("qwise_structural").solve_exact(
                    data, verbose=conic_verbose(self.verbose))),
            "fast": lambda: solve_structural_fast(data, maxiter=self.max_iter),
        })
        self._store_result(result, data.n_features)
        self._log_fit(before=[("reading=%s", data.reading), ("solver=%s", self.solver)],
                      after=[("queries=%d", data.n_queries), ("terms=%d", data.n_terms)])
        return self

    def _structural_data(self, X, idx):
        """The :class:`StructuralData` of validated tuples ``idx`` into ``X``,
        read as ``reading`` says."""
        if self.reading == "quadruplets":
            return StructuralData.from_quadruplets(
                Quadruplets.create(X, idx, 1.0), regularizer=self.regularizer, C=self.C)
        return StructuralData.from_triplets(
            Triplets.create(X, idx), regularizer=self.regularizer, C=self.C)


def _scale_checked(data, run):
    """``run()``, a conic or cutting-plane solve on ``data``.  Its
    :class:`~cvxmetric.result.SolverError` on data whose scale-free hinge
    weight is out of range failed because of that scale: that error, naming
    ``X``, is raised instead, as the fast path does up front."""
    try:
        return run()
    except SolverError as exc:
        scale = data.scale_error()
        if scale is not None:
            raise scale from exc
        raise


@fill_doc
class QwiseStructural(_OrderedTuplesMixin, _StructuralBase):
    """Structural (MLR-style, 1-slack) Qwise: Eq. 16-17, tuple learner.

    Learns a PSD ``M`` minimising ``Omega(M) + C H(M)``, the 1-slack
    problem of Eq. 16 with the partial-order feature map of Eq. 17 and the
    AUC loss (see :mod:`cvxmetric.qwise_structural._problem`)::

        H(M) = (1/|X|) sum_x (1/(P_x N_x)) sum_{i in C_x^+, j in C_x^-}
                   max(0, 1 - 2 (D2_M(c_j) - D2_M(c_i)))

    Parameters
    ----------
    regularizer : {"trace", "frobenius"}, default="trace"
        ``Omega(M)``: ``tr(M)`` (MLR's) or ``0.5 ||M||_F^2``.
    C : float > 0, default=1.0
        Weight of the slack.
    reading : {"quadruplets", "triplets"}, default="quadruplets"
        ``"quadruplets"``: ``fit`` takes ``(i, j, k, l)``, the query is
        the pair ``(i, j)``, its non-relevant items the pairs ``(k, l)``.
        ``"triplets"``: ``fit`` takes ``(a, b, c)`` meaning
        ``D(a, b) < D(a, c)``; the anchor ``a`` is the query.  ``score``,
        ``predict`` and ``decision_function`` take the same kind of tuple
        (the reading is looked up at call time).
    solver : {"fast", "cutting_plane", "exact"}, default="fast"
        :func:`solve_structural_fast` (the closed form by the Qwise dual
        solver: certified, and the one that scales -- 2 s at 10^5
        quadruplets in 50 dimensions), :class:`StructuralCuttingPlane` (the
        paper's 1-slack cutting-plane method: certified when it stops, but
        it did not within five minutes there, nor on scikit-learn's digits)
        or :func:`solve_exact` (CVXPY).
    epsilon : float > 0, optional
        Stopping threshold of the cutting-plane method on ``H(M) - xi``
        (``None``: chosen from the objective so that the result is
        certified at the package's tolerance).  Ignored by ``"exact"``.
    max_iter : int >= 1, optional
        Maximum number of cutting-plane rounds (``None``: 500).
    preprocessor : array_like of shape (n_samples, n_features), optional
        The sample matrix integer tuples index into.
    random_state : int, RandomState instance or None, default=None
        Unused (no solver is randomised); kept for the metric-learn
        convention shared with :class:`QwiseStructuralSupervised`.
    {verbose}

    Attributes
    ----------
    components_, mahalanobis_matrix_ : ndarray of shape (n_features, n_features)
    objective_ : float
        ``Omega(M) + C H(M)`` at the returned ``M``.
    status_ : str
        ``"optimal"`` exactly when the certificate passes.
    n_iter_ : int
        Cutting-plane rounds (= cuts), or interior-point iterations.
    certificate_ : Certificate
    result_ : SolverResult
        ``info`` holds ``n_cuts``, ``epsilon``, ``final_violation`` and the
        per-round ``history`` for the cutting-plane method.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from cvxmetric.qwise_structural import QwiseStructural
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 3.0]])
    >>> est = QwiseStructural(preprocessor=X).fit([[0, 1, 2, 3]])
    >>> est.status_
    'optimal'
    """

    _parameter_constraints = {
        **_SHARED_CONSTRAINTS,
        "preprocessor": ["array-like", None],
    }

    def __init__(self, regularizer="trace", C=1.0, reading="quadruplets",
                 solver="fast", epsilon=None, max_iter=None,
                 preprocessor=None, random_state=None, verbose=False):
        store_arguments(self, locals())

    # the tuples score / predict take follow the reading
    @property
    def _tuple_name(self):
        return self.reading

    @property
    def _width(self):
        return _WIDTH.get(self.reading, 0)

    def fit(self, tuples, y=None):
        """Learn ``M`` from quadruplets or triplets (according to ``reading``).

        Parameters
        ----------
        tuples : array_like
            ``reading="quadruplets"``: indices (n, 4) into ``preprocessor``
            or points (n, 4, n_features); ``reading="triplets"``: (n, 3) or
            (n, 3, n_features).
        y : None
            Not used: the order within each tuple is its label.

        Returns
        -------
        self : QwiseStructural
        """
        return self._solve(self._data(tuples, y))

    def declared_problem(self, tuples, y=None):
        """Eq. 16 on these tuples, as declared, without solving it.

        {takes_what_fit_takes}

        {params_as_in_fit}

        {declared_returns_certified}
        """
        self._validate_params()
        return declared_problem(self._data(tuples, y))

    def _data(self, tuples, y=None):
        if y is not None:
            raise ValueError(
                f"y: {type(self).__name__}.fit takes no labels (the order "
                f"within each tuple is its label).")
        name, width = self.reading, _WIDTH[self.reading]
        fit_tuples(self, tuples, name, width, keep_namespace=False)
        ndim = array_ndim(tuples, name)
        shape = np.shape(tuples)
        if ndim in (2, 3) and len(shape) > 1 and shape[1] != width:
            raise ValueError(
                f"{name}: reading={self.reading!r} takes tuples of {width}, got "
                f"shape {shape}; set reading="
                f"{'triplets' if shape[1] == 3 else 'quadruplets'!r} for tuples "
                f"of {shape[1]}." if shape[1] in (3, 4) else
                f"{name}: reading={self.reading!r} takes tuples of {width}, got "
                f"shape {shape}.")
        X = self.preprocessor if ndim != 3 else None
        X, idx = tuples_to_indices(tuples, name, width=width, preprocessor=X)
        return self._structural_data(X, idx)


@fill_doc(learner="QwiseStructural")
class QwiseStructuralSupervised(LabelledMixin, TransformerMixin, _StructuralBase):
    """Structural Qwise learned from class labels: ``fit(X, y)``.

    Samples ``n_constraints`` quadruplets (``reading="quadruplets"``:
    same-class pair, then different-class pair,
    :func:`~cvxmetric.quadruplets_from_labels`) or triplets
    (``reading="triplets"``, :func:`~cvxmetric.triplets_from_labels`),
    drops those that compare nothing (duplicated rows) and solves Eq. 16 as
    :class:`QwiseStructural` does.

    Parameters
    ----------
    n_constraints : int >= 1, optional
        Number of tuples sampled (default ``min(1000, 20 * n_samples)``).
    reading, regularizer, C, solver, epsilon, max_iter, verbose
        As in :class:`QwiseStructural`.
    random_state : int, RandomState instance or None, default=None
        Seeds the sampling.

    Attributes
    ----------
    {supervised_attributes}
    """

    _parameter_constraints = {
        **_SHARED_CONSTRAINTS,
        "n_constraints": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(self, n_constraints=None, reading="quadruplets", regularizer="trace",
                 C=1.0, solver="fast", epsilon=None, max_iter=None,
                 random_state=None, verbose=False):
        store_arguments(self, locals())

    def _fit(self, X, y):
        """Sample tuples from the labels and learn ``M``."""
        return self._solve(self._sample(X, y))

    def _declare(self, X, y):
        """Eq. 16 on the constraints ``fit(X, y)`` samples."""
        return declared_problem(self._sample(X, y))

    def _sample(self, X, y):
        """Validate ``(X, y)``; the :class:`StructuralData` of the sampled
        tuples."""
        X, y, _, _ = validate_labelled(self, X, y, ensure_min_samples=2)
        n = default_n_constraints(X.shape[0], self.n_constraints)
        rng = check_random_state(self.random_state)
        sample = (quadruplets_from_labels if self.reading == "quadruplets"
                  else triplets_from_labels)
        idx = sample(y, n, random_state=rng)
        useful = informative(X, idx)
        if not np.any(useful):
            raise ValueError(
                "X: every sampled tuple compares identical points or a distance "
                "with itself; the data has no information on the metric.")
        return self._structural_data(X, idx[useful])

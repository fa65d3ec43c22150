"""SCML estimators: the scikit-learn / metric-learn front ends of sparse
compositional metric learning (Shi, Bellet, Sha, AAAI 2014).

:class:`SCML` is a triplet learner (metric-learn's tuple API): ``fit``
takes triplets ``(x, x+, x-)`` as points or as indicators formed by
``preprocessor``.  :class:`SCML_Supervised` takes ``fit(X, y)`` and forms
metric-learn's triplets (each sample with each of its ``k_genuine``
nearest same-class samples and ``k_impostor`` nearest other-class ones).
Both take metric-learn 0.7's keywords in its order, then ``solver`` and
``max_time``:

================  =================================================  ===========
``solver``        what runs                                          guarantee
================  =================================================  ===========
``"exact"``       :func:`~cvxmetric.scml.solve_exact` (CVXPY, up to  certified
                  :data:`~cvxmetric.scml.EXACT_MAX_ENTRIES`)
``"fast"``        :class:`~cvxmetric.scml.SCMLWorkingSet`: a         certified
                  working set of triplets, HiGHS's simplex
``"stochastic"``  :class:`~cvxmetric.scml.SCMLStochastic`: the       reported
                  paper's method as metric-learn runs it (``gamma``,
                  ``max_iter``, ``output_iter``, ``batch_size``)
================  =================================================  ===========

The default is ``"fast"``: certified like ``"exact"`` (the same optimum,
judged by the same certificate) and faster at every size measured (iris,
4 500 triplets x 80 basis vectors: about 1 s against Clarabel's 10 to 50 s).
"""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions

from .._base import (LabelledMixin, MahalanobisMixin, TripletsClassifierMixin,
                     array_ndim, form_samples, form_tuples, solver_names,
                     store_arguments, validate_labelled)
from .._base import fit_tuples
from .._docs import fill_doc
from .._validation import check_samples
from ..constraints import Triplets
from ..formulations import formulation
from ._problem import SCMLData
from .exact import check_exact_size, declared_problem
from .fast import SCMLStochastic, SCMLWorkingSet

__all__ = ["SCML", "SCML_Supervised", "SOLVER_NAMES"]

#: Values of the estimators' ``solver`` parameter (the registry's methods).
SOLVER_NAMES = solver_names("scml")

_SHARED = {
    "beta": [Interval(Real, 0, None, closed="left")],
    "n_basis": [Interval(Integral, 1, None, closed="left"), None],
    "gamma": [Interval(Real, 0, None, closed="neither")],
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "output_iter": [Interval(Integral, 1, None, closed="left")],
    "batch_size": [Interval(Integral, 1, None, closed="left")],
    "verbose": ["verbose"],
    "preprocessor": ["array-like", callable, None],
    "random_state": ["random_state"],
    "solver": [StrOptions(set(SOLVER_NAMES))],
    "max_time": [Interval(Real, 0, None, closed="neither"), None],
}


class _SCMLBase(MahalanobisMixin, BaseEstimator):
    """Solve and store: the part both SCML estimators share."""

    def _check_numbers(self):
        for name in ("beta", "gamma", "max_time"):
            value = getattr(self, name)
            if isinstance(value, Real) and not np.isfinite(value):
                raise ValueError(f"{name}: must be finite, got {value!r}.")

    def _solve(self, data):
        """Run the solver ``solver`` names on ``data`` and store the fit."""
        solvers = {
            "exact": lambda: self._solve_exact(data),
            "fast": lambda: SCMLWorkingSet(max_time=self.max_time).run(data),
            "stochastic": lambda: self._stochastic().run(data),
        }
        result = self._run_solver(solvers)
        self._store_result(result, data.n_features)
        self.w_ = np.asarray(result.info["w"], dtype=float)
        self.basis_ = data.basis
        self.n_triplets_ = int(data.n_triplets)
        self._log_fit(before=[("solver=%s", self.solver), ("beta=%g", data.beta)],
                      after=[("n_triplets=%d", data.n_triplets),
                             ("n_basis=%d", data.n_basis)])
        return self

    def _stochastic(self):
        """metric-learn's method with the estimator's options (``output_iter``
        above ``max_iter`` is a ValueError naming it, as in metric-learn)."""
        return SCMLStochastic(
            maxiter=self.max_iter, gamma=self.gamma, batch_size=self.batch_size,
            output_iter=self.output_iter, max_time=self.max_time,
            random_state=self.random_state)

    def _solve_exact(self, data):
        check_exact_size(data, "solver")
        return formulation("scml").solve_exact(data)


@fill_doc(matrix="M")
class SCML(TripletsClassifierMixin, _SCMLBase):
    """Sparse compositional metric learning (Shi, Bellet, Sha, AAAI 2014),
    triplet learner.

    Learns ``M = sum_i w_i b_i b_i^T`` over a basis ``b_1 .. b_K`` solving::

        min_{w >= 0}  (1/T) sum_t [1 + D_w(x_t, x_t+) - D_w(x_t, x_t-)]_+ + beta ||w||_1

    Parameters
    ----------
    beta : float >= 0, default=1e-5
        Weight of ``||w||_1``.
    basis : "triplet_diffs" or array_like of shape (n_basis, n_features), \
default="triplet_diffs"
        The basis vectors (rows), or metric-learn's construction from the
        triplets' differences (:func:`~cvxmetric.scml.triplet_diffs_basis`,
        seeded by ``random_state``).
    n_basis : int, optional
        Size of a constructed basis (default ``80 n_features``).
    gamma : float > 0, default=5e-3
        Learning rate of ``solver="stochastic"``.
    max_iter : int, default=10000
        Iterations of ``solver="stochastic"``.
    output_iter : int, default=500
        Iterations between its full objective checks (the best check is
        kept).
    batch_size : int, default=10
        Triplets per stochastic step.
    {verbose}
    preprocessor : array_like of shape (n_samples, n_features) or callable, \
optional
        Forms indicator triplets (n_triplets, 3) into points.
    random_state : int, RandomState instance or None, default=None
        Seeds the basis construction and the stochastic minibatches.
    solver : {{"fast", "exact", "stochastic"}}, default="fast"
        Module docstring: ``"fast"`` and ``"exact"`` are certified,
        ``"stochastic"`` is the paper's method (metric-learn's), reported.
    max_time : float > 0, optional
        Wall-clock budget of ``"fast"`` and ``"stochastic"`` (seconds).

    Attributes
    ----------
    {mahalanobis_attributes}
    w_ : ndarray of shape (n_basis,)
        The basis weights (``M = basis_^T diag(w_) basis_``).
    basis_ : ndarray of shape (n_basis, n_features)
    objective_ : float
    {status_}
    n_iter_ : int
    certificate_ : Certificate
    {result_}
    n_features_in_ : int
    n_triplets_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from cvxmetric import SCML
    >>> X = np.array([[0.0, 0.0], [1.0, 0.1], [0.1, 1.0], [1.0, 1.0]])
    >>> est = SCML(basis=np.eye(2), preprocessor=X).fit([[0, 1, 2], [3, 1, 0]])
    >>> est.status_
    'optimal'
    """

    _parameter_constraints = {
        **_SHARED,
        "basis": [StrOptions({"triplet_diffs"}), "array-like"],
    }

    def __init__(self, beta=1e-5, basis="triplet_diffs", n_basis=None, gamma=5e-3,
                 max_iter=10000, output_iter=500, batch_size=10, verbose=False,
                 preprocessor=None, random_state=None, solver="fast", max_time=None):
        store_arguments(self, locals())

    def fit(self, triplets, y=None):
        """Learn ``w`` from triplets.

        Parameters
        ----------
        triplets : array_like
            Points (n_triplets, 3, n_features), or indicators (n_triplets,
            3) formed by ``preprocessor``; a row ``(x, x+, x-)`` asks
            ``D(x, x+) + 1 <= D(x, x-)``.
        y : None
            Not used (metric-learn's convention).

        Returns
        -------
        self : SCML
        """
        return self._solve(self._data(triplets, y))

    def declared_problem(self, triplets, y=None):
        """The LP on these triplets, as printed, without solving it.

        {takes_what_fit_takes}

        {declared_returns}
        """
        self._validate_params()
        return declared_problem(self._data(triplets, y))

    def _data(self, triplets, y):
        if y is not None:
            raise ValueError("y: SCML.fit takes no labels (each triplet (x, x+, x-) "
                             "already says x+ is nearer to x than x-).")
        self._check_numbers()
        fit_tuples(self, triplets, "triplets", 3, keep_namespace=False)
        tuples = form_tuples(triplets, self.preprocessor, "triplets", 3)
        points = array_ndim(tuples, "triplets") == 3
        X = None if points or self.preprocessor is None or callable(self.preprocessor) \
            else check_samples(self.preprocessor, "preprocessor")
        t = Triplets.from_tuples(tuples, preprocessor=X)
        basis = self.basis if isinstance(self.basis, str) else np.asarray(self.basis)
        return SCMLData(t.X, t.indices, basis, self.beta, n_basis=self.n_basis,
                        random_state=self.random_state)


@fill_doc(learner="SCML")
class SCML_Supervised(LabelledMixin, TransformerMixin, _SCMLBase):
    """SCML learned from class labels: ``fit(X, y)``.

    metric-learn's triplets (:func:`~cvxmetric.scml.knn_triplets`): every
    sample with each of its ``k_genuine`` nearest same-class samples and
    each of its ``k_impostor`` nearest other-class samples (Euclidean);
    triplets of duplicated points are dropped.  The basis is by default
    metric-learn's local LDA (:func:`~cvxmetric.scml.lda_basis`, seeded by
    ``random_state``).  Then the problem of :class:`SCML` is solved.

    Parameters
    ----------
    k_genuine : int >= 1, default=3
    k_impostor : int >= 1, default=10
    basis : {{"lda", "triplet_diffs"}} or array_like, default="lda"
    beta, n_basis, gamma, max_iter, output_iter, batch_size, verbose, \
preprocessor, random_state, solver, max_time
        As in :class:`SCML` (``preprocessor``: a 1-D ``X`` holds
        indicators of samples).

    Attributes
    ----------
    {supervised_attributes}
    w_, basis_, n_triplets_
        As in :class:`SCML`.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from cvxmetric import SCML_Supervised
    >>> X, y = load_iris(return_X_y=True)
    >>> SCML_Supervised(random_state=0).fit(X, y).transform(X).shape
    (150, 4)
    """

    _parameter_constraints = {
        **_SHARED,
        "k_genuine": [Interval(Integral, 1, None, closed="left")],
        "k_impostor": [Interval(Integral, 1, None, closed="left")],
        "basis": [StrOptions({"lda", "triplet_diffs"}), "array-like"],
    }

    def __init__(self, k_genuine=3, k_impostor=10, beta=1e-5, basis="lda", n_basis=None,
                 gamma=5e-3, max_iter=10000, output_iter=500, batch_size=10,
                 verbose=False, preprocessor=None, random_state=None, solver="fast",
                 max_time=None):
        store_arguments(self, locals())

    def _data(self, X, y):
        self._check_numbers()
        X = form_samples(X, self.preprocessor)
        X, y, _, _ = validate_labelled(self, X, y, ensure_min_samples=2)
        basis = self.basis if isinstance(self.basis, str) else np.asarray(self.basis)
        return SCMLData.from_labels(X, y, self.k_genuine, self.k_impostor, basis,
                                    self.beta, n_basis=self.n_basis,
                                    random_state=self.random_state)

    def _fit(self, X, y):
        """Form the triplets and the basis, and solve."""
        return self._solve(self._data(X, y))

    def _declare(self, X, y):
        return declared_problem(self._data(X, y))

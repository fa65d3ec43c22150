"""LMNN estimator: the scikit-learn / metric-learn front end of Weinberger
and Saul's large-margin nearest neighbours (JMLR 2009).

:class:`LMNN` takes ``fit(X, y)`` with class labels, finds each sample's
target neighbours (:func:`~cvxmetric.lmnn.target_neighbors`) and solves
Eq. 13-14 over every impostor triplet with the solver ``solver`` names:

==========  ====================================================  ===========
``solver``  what runs                                             guarantee
==========  ====================================================  ===========
``exact``   :func:`~cvxmetric.lmnn.solve_exact` (CVXPY, through   certified
            Qwise's exact path), then LMNN's own certificate
``fast``    :class:`~cvxmetric.lmnn.LMNNWorkingSet`: a working     certified
            set of impostors solved by Qwise's dual solver, grown
            by blockwise passes over every triplet
``subgra``  :class:`~cvxmetric.lmnn.LMNNSubgradient`: the paper's  reported
``dient``   projected subgradient method (Sec. 5)
``auto``    ``exact`` up to :data:`~cvxmetric.lmnn.exact.          certified
            EXACT_MAX_TRIPLETS` impostor triplets, else ``fast``
==========  ====================================================  ===========

It takes metric-learn 0.7's keywords (``init, n_neighbors, min_iter,
max_iter, learn_rate, regularization, convergence_tol, verbose,
preprocessor, n_components, random_state``) with metric-learn's meaning
where it applies to a certified convex solve: ``n_neighbors`` is ``k``;
``regularization`` weighs the pull term, so it is ``1 - mu``; the options
of metric-learn's gradient descent on the factor ``L`` (``init``,
``min_iter``, ``max_iter``, ``learn_rate``, ``convergence_tol``) change its
iterations, not the convex optimum, and are accepted and unused by the
exact solve; ``n_components`` below the number of features keeps that many
top eigen-directions of the certified ``M`` (a rank constraint would make
the problem non-convex).

The passes over the triplets run where ``X`` is: on its namespace under
scikit-learn's ``array_api_dispatch`` (PyTorch, CuPy, ``array-api-strict``),
and as Dask tasks for a ``dask.array`` ``X``, with or without dispatch (see
:class:`~cvxmetric.lmnn.LMNNData`).
"""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions

from .._base import (
    LabelledMixin,
    MahalanobisMixin,
    form_samples,
    solver_names,
    store_arguments,
    validate_labelled,
)
from .._docs import fill_doc
from .._solver import conic_verbose
from ..formulations import formulation
from ._problem import LMNNData
from .exact import EXACT_MAX_TRIPLETS, check_exact_size, declared_problem
from .fast import LMNNSubgradient, LMNNWorkingSet, run_in_feature_units

__all__ = ["LMNN", "SOLVER_NAMES", "INIT_NAMES"]

#: Values of the estimator's ``solver`` parameter (the registry's methods).
SOLVER_NAMES = solver_names("lmnn")

#: Values of ``init`` given by name (metric-learn 0.7's).
INIT_NAMES = ("auto", "pca", "lda", "identity", "random")


def _alias(name, value, default, alias, alias_value, convert=lambda v: v):
    """The value of ``name`` (default ``default``) or, when given, of its
    metric-learn spelling ``alias`` (``convert`` maps the alias's value to
    ``name``'s); ``name`` set away from its default to another value is a
    ValueError naming ``alias``."""
    if alias_value is None:
        return value
    mapped = convert(alias_value)
    if value != default and value != mapped:
        raise ValueError(f"{alias}: metric-learn's spelling of {name} gives {name} = "
                         f"{mapped!r}, but {name} = {value!r}; give one of them.")
    return mapped


@fill_doc(matrix="M")
class LMNN(LabelledMixin, TransformerMixin, MahalanobisMixin, BaseEstimator):
    """Large-margin nearest neighbours (Weinberger and Saul, JMLR 2009).

    Learns ``M`` solving, over the target neighbours ``j ~> i`` (the ``k``
    nearest same-class samples of ``i``) and every impostor ``l`` (a sample
    of another class)::

        min_{M PSD}  (1 - mu) sum_{i, j ~> i} D_M(i, j)
                     + mu sum_{i, j ~> i, l: y_l != y_i} [1 + D_M(i, j) - D_M(i, l)]_+

    (Eq. 13-14), certified over every triplet.

    Parameters
    ----------
    k : int >= 1, default=3
        Target neighbours per sample, the nearest same-class samples under
        the Euclidean metric (under ``M0`` when given), ties broken by
        index; a class of ``k`` samples or fewer gives each of its samples
        all the others of the class.
    mu : float in (0, 1), default=0.5
        Weight of the push (hinge) term, the paper's ``mu``; ``1 - mu``
        weighs the pull term.
    M0 : array_like of shape (n_features, n_features), optional
        PSD metric of the target search (default: Euclidean).
    solver : {"auto", "exact", "fast", "subgradient"}, default="auto"
        ``"exact"``: the certified CVXPY solve (up to
        :data:`~cvxmetric.lmnn.exact.EXACT_MAX_TRIPLETS` impostor triplets).
        ``"fast"``: the certified working-set solver
        (:class:`~cvxmetric.lmnn.LMNNWorkingSet`), any size.
        ``"subgradient"``: the paper's projected subgradient method
        (:class:`~cvxmetric.lmnn.LMNNSubgradient`; ``max_iter``,
        ``learn_rate`` and ``convergence_tol`` are its own), reported with
        its certificate.  ``"auto"``: ``"exact"`` up to
        ``EXACT_MAX_TRIPLETS`` triplets (the same optimum, certified), else
        ``"fast"``.
    max_time : float > 0, optional
        Wall-clock budget of ``"fast"`` and ``"subgradient"`` (seconds); a
        solve it stops keeps its certificate and a status that says so.
    init : {"auto", "pca", "lda", "identity", "random"}, array_like or None, \
default=None
        metric-learn's starting factor ``L`` of its gradient descent.  The
        problem in ``M`` is convex: the certified optimum does not depend
        on a start, and the exact solve uses none (accepted, unused).
    n_neighbors : int >= 1, optional
        metric-learn's name of ``k``: when given, it sets ``k`` (a ``k``
        other than the default 3 that disagrees is an error).
    min_iter, max_iter : int >= 1, optional
        metric-learn's iteration bounds of its gradient descent; unused by
        the exact and fast solves (``max_iter`` is ``"subgradient"``'s
        budget, 1 000 by default).
    learn_rate : float > 0, optional
        metric-learn's step size; unused by the certified solves (they have
        no step to choose), ``"subgradient"``'s initial step.
    regularization : float in (0, 1), optional
        metric-learn's weight of the *pull* term (its gradient is
        ``regularization * pull + (1 - regularization) * push``): it sets
        ``mu = 1 - regularization`` (metric-learn's default 0.5 is the
        paper's ``mu = 0.5``); a ``mu`` other than the default 0.5 that
        disagrees is an error.
    convergence_tol : float > 0, optional
        metric-learn's stopping threshold on the objective's change;
        unused by the certified solves, whose certificate is judged at the
        package's tolerance; ``"subgradient"`` stops when its objective
        changes by less between two full checks.
    {verbose}
    preprocessor : array_like of shape (n_samples, n_features) or callable, \
optional
        metric-learn's meaning: a 1-D ``X`` (in ``fit``, ``transform``,
        ``score``) holds indicators of samples, rows of an array
        ``preprocessor`` or keys a callable turns into points.
    n_components : int, optional
        ``None`` (or the number of features): the full certified ``M``.
        Fewer: LMNN's convex problem is over a full ``M`` and a rank
        constraint makes it non-convex (metric-learn then optimises a
        rectangular ``L`` with no guarantee), so the certified ``M`` is
        solved for and then truncated to its ``n_components`` top
        eigen-directions: ``components_`` has that many rows and
        ``get_mahalanobis_matrix()`` is the best rank-``n_components``
        approximation of the certified metric, while ``objective_``,
        ``certificate_`` and ``result_.M`` stay those of the full ``M``.
    random_state : int, RandomState instance or None, default=None
        Accepted for metric-learn scripts; nothing here is random.

    Attributes
    ----------
    {mahalanobis_attributes}
    objective_ : float
        Eq. 13's objective at the learned ``M``, recomputed over every
        triplet.
    {status_}
    n_iter_ : int
    certificate_ : Certificate
        LMNN's certificate (objective, dual bound over every triplet).
    {result_}
    target_neighbors_ : ndarray of int, shape (n_samples, k)
        The target neighbours of each training sample (``-1``: none, in a
        small class).
    n_features_in_ : int
    {feature_names_in_}

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from cvxmetric import LMNN
    >>> X, y = load_iris(return_X_y=True)
    >>> LMNN(k=3).fit(X, y).transform(X).shape
    (150, 4)
    """

    _parameter_constraints = {
        "k": [Interval(Integral, 1, None, closed="left")],
        "mu": [Interval(Real, 0, 1, closed="neither")],
        "M0": ["array-like", None],
        "solver": [StrOptions(set(SOLVER_NAMES) | {"auto"})],
        "max_time": [Interval(Real, 0, None, closed="neither"), None],
        "init": [StrOptions(set(INIT_NAMES)), "array-like", None],
        "n_neighbors": [Interval(Integral, 1, None, closed="left"), None],
        "min_iter": [Interval(Integral, 1, None, closed="left"), None],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "learn_rate": [Interval(Real, 0, None, closed="neither"), None],
        "regularization": [Interval(Real, 0, 1, closed="neither"), None],
        "convergence_tol": [Interval(Real, 0, None, closed="neither"), None],
        "verbose": ["verbose"],
        "preprocessor": ["array-like", callable, None],
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
    }

    def __init__(self, k=3, mu=0.5, M0=None, solver="auto", init=None, n_neighbors=None,
                 min_iter=None, max_iter=None, learn_rate=None, regularization=None,
                 convergence_tol=None, verbose=False, preprocessor=None,
                 n_components=None, random_state=None, max_time=None):
        store_arguments(self, locals())

    def _data(self, X, y):
        """Validate ``(X, y)`` and the parameters; the :class:`LMNNData`."""
        X = form_samples(X, self.preprocessor)
        # the passes over the triplets run on X's namespace (array_api_dispatch),
        # or as Dask tasks on a dask X
        X, y, _, _ = validate_labelled(self, X, y, ensure_min_samples=2,
                                       keep_namespace=True, keep_dask=True)
        k = _alias("k", self.k, 3, "n_neighbors", self.n_neighbors)
        mu = _alias("mu", self.mu, 0.5, "regularization", self.regularization,
                    lambda r: 1.0 - r)
        d = X.shape[1]
        if self.n_components is not None and self.n_components > d:
            raise ValueError(f"n_components: at most the number of features, {d}; "
                             f"got {self.n_components}.")
        for name in ("mu", "learn_rate", "convergence_tol", "regularization"):
            value = getattr(self, name)
            if isinstance(value, Real) and not np.isfinite(value):
                raise ValueError(f"{name}: must be finite, got {value!r}.")
        M0 = None if self.M0 is None else np.asarray(self.M0, dtype=float)
        return LMNNData(X, y, k=k, mu=mu, M0=M0)

    def _fit(self, X, y):
        """Find the target neighbours and solve Eq. 13-14."""
        data = self._data(X, y)
        solvers = {"exact": lambda: self._solve_exact(data),
                   "fast": lambda: self._solve_fast(data),
                   "subgradient": lambda: self._solve_subgradient(data)}
        # auto: the exact path where it runs (the same certified optimum)
        solvers["auto"] = solvers["exact" if data.n_triplets <= EXACT_MAX_TRIPLETS
                                  else "fast"]
        result = self._run_solver(solvers)
        self._store_result(result)
        if self.n_components is not None and self.n_components < data.n_features:
            self._truncate(self.n_components)
        self.target_neighbors_ = data.targets
        self._log_fit(before=[("solver=%s", self.solver), ("k=%d", data.k),
                              ("mu=%g", data.mu)], after=[("time=%.3gs", result.time)])
        return self

    def _truncate(self, r):
        """Keep the ``r`` top eigen-directions of the certified ``M``: the
        best rank-``r`` approximation of the metric (its factor's rows of
        largest norm, largest first)."""
        L = self.components_[::-1]  # components_from_metric: ascending eigenvalues
        self.components_ = np.ascontiguousarray(L[:r])
        self.mahalanobis_matrix_ = self.components_.T @ self.components_

    def _solve_exact(self, data):
        check_exact_size(data, "solver")
        return formulation("lmnn").solve_exact(data, verbose=conic_verbose(self.verbose))

    def _solve_fast(self, data):
        return run_in_feature_units(LMNNWorkingSet(max_time=self.max_time), data)

    def _solve_subgradient(self, data):
        options = {"maxiter": self.max_iter, "learn_rate": self.learn_rate,
                   "tol": self.convergence_tol}
        solver = LMNNSubgradient(max_time=self.max_time,
                                 **{k: v for k, v in options.items() if v is not None})
        return run_in_feature_units(solver, data)

    def _declare(self, X, y):
        """Eq. 13-14 on ``fit(X, y)``'s target neighbours, unsolved."""
        return declared_problem(self._data(X, y))

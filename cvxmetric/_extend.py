"""Generic adapters: what a new formulation gets from its registry entry.

A formulation added with :func:`cvxmetric.formulations.register` states its
canonical data class, its declared CVXPY problem and its certificate; the
adapters here give it the package's layers without code of its own:

* :func:`certified_result` -- the exact path: its declared problem solved by
  the package's certified path (Clarabel with tight tolerances, SCS as
  fallback, a point accepted only when the formulation's certificate
  passes), as a :class:`~cvxmetric.result.SolverResult` with its trace;
* :class:`DeclaredPairsLearner` -- a scikit-learn pairs learner
  (``fit(pairs, y)``, metric-learn's conventions) that fits it through its
  exact path;
* :func:`pairs_family` -- its family of the problem collection
  (``problems/``, ``reference/``, ``cvxmetric.collection.verify``);
* :func:`conformance_slice` -- its rows of the real-data conformance suite,
  fitted in this process and judged by the suite's own verdicts.

They read a pair formulation's entries with one contract: ``data`` is
called as ``data(X, pairs, labels, **hyperparameters)`` (samples, an
(n_pairs, 2) index array, labels +1 / -1) and has ``objective(M)``;
``exact`` is called as ``exact(data, solvers=..., tol=...)`` and returns a
certified :class:`~cvxmetric.result.SolverResult`; ``declared(data)``
returns its :class:`~cvxmetric.model.DeclaredProblem`.
``docs/add_a_formulation.md`` builds one formulation this way, end to end.
"""

import time

from sklearn.base import BaseEstimator

from ._base import MahalanobisMixin, PairsClassifierMixin, form_tuples
from ._base import fit_tuples
from ._docs import fill_doc
from ._exact import SOLVERS, _version, solver_options
from ._trace import recording
from ._validation import check_pair_labels, check_samples
from .constraints import tuples_to_indices
from .formulations import formulation as _formulation
from .result import SolverResult, Status

__all__ = ["certified_result", "DeclaredPairsLearner", "pairs_family",
           "conformance_slice"]


def certified_result(declared, *, solvers=SOLVERS, tol=1e-9, method="exact"):
    """Solve a declared problem by the package's certified path.

    Parameters
    ----------
    declared : DeclaredProblem
        Unmodified (its certificate is that of the problem solved).
    solvers : sequence of str
        Tried in order (:func:`cvxmetric._exact.solve_certified`).
    tol : float
        The solvers' tolerance; the certificate is judged at the package's.
    method : str
        The result's ``method``.

    Returns
    -------
    SolverResult
        ``status == "optimal"`` (the certificate passed), the metric in the
        user's units, the certificate, and ``trace``: the conic solvers
        that ran, in order (what the certificate's bound ran, after them).

    Raises
    ------
    InfeasibleError, UnboundedError, CertificateError, SolverError
        As :meth:`~cvxmetric.model.DeclaredProblem.solve_certified`.
    ValueError
        Naming ``declared`` when the problem was modified by the user.
    """
    if declared.modified:
        raise ValueError("declared: the problem was modified (add_constraint / "
                         "add_term); its certificate is the declared one's.")
    t0 = time.perf_counter()
    with recording() as stages:
        declared.solve_certified(solvers=solvers, tol=tol)
    cert = declared.certificate()
    if cert.solver in solvers:  # what the accepted solver ran with
        cert.tolerances = solver_options(cert.solver, tol)
        cert.solver_version = _version(cert.solver)
    stats = declared.problem.solver_stats
    n_iter = int(getattr(stats, "num_iters", 0) or 0) if stats else 0
    return SolverResult(M=declared.matrix(), status=Status.OPTIMAL,
                        objective=cert.objective, n_iter=n_iter, certificate=cert,
                        method=method, time=time.perf_counter() - t0,
                        raw_status=str(declared.problem.status), trace=tuple(stages))


# ---------------------------------------------------------------------------
# The estimator
# ---------------------------------------------------------------------------


@fill_doc(matrix="M")
class DeclaredPairsLearner(PairsClassifierMixin, MahalanobisMixin, BaseEstimator):
    """A pairs learner of a registered pair formulation (base class).

    A subclass names its formulation in the class attribute
    ``formulation`` and lists its hyperparameters as ``__init__``
    arguments, stored unchanged (scikit-learn's rule); every argument other
    than ``preprocessor`` is passed to the formulation's data class, which
    validates it.  ``fit`` runs the formulation's exact path and stores the
    fitted state; ``get_params``, ``set_params``, ``clone``, ``transform``,
    ``get_mahalanobis_matrix``, ``pair_distance``, ``predict``,
    ``decision_function`` and ``score`` are the package's.

    Attributes
    ----------
    {mahalanobis_attributes}
    objective_, status_, n_iter_, certificate_
        Of the exact path's result: the objective at ``M``, the status
        word, the iterations, the certificate.
    result_ : SolverResult
        With ``trace``, the stages the fit ran.
    threshold_ : float
    classes_ : ndarray of shape (2,)
    n_features_in_ : int
    """

    #: Name of the registered formulation (set by the subclass).
    formulation = None

    def _hyperparameters(self):
        """The arguments passed to the data class: every parameter but
        ``preprocessor``."""
        return {k: v for k, v in self.get_params(deep=False).items()
                if k != "preprocessor"}

    def _data(self, pairs, y):
        """The formulation and its canonical data of validated pairs."""
        f = _formulation(self.formulation)
        fit_tuples(self, pairs, "pairs", 2, keep_namespace=False)
        X = getattr(self, "preprocessor", None)
        if callable(X):  # indicators formed into points (metric-learn)
            pairs, X = form_tuples(pairs, X, "pairs", 2), None
        elif X is not None:
            X = check_samples(X, "preprocessor")
        X, idx = tuples_to_indices(pairs, "pairs", width=2, preprocessor=X)
        labels = check_pair_labels(y, idx.shape[0], "y")
        return f, f.load("data")(X, idx, labels, **self._hyperparameters())

    def fit(self, pairs, y, calibration_params=None):
        """Learn ``M`` by the formulation's exact path, then calibrate
        ``threshold_`` on the training pairs.

        Parameters
        ----------
        pairs : array_like
            (n_pairs, 2) indices into ``preprocessor``, or the points
            themselves, (n_pairs, 2, n_features).
        y : array_like of shape (n_pairs,)
            Labels: +1 similar, -1 dissimilar.
        {calibration_params}

        Returns
        -------
        self
        """
        self._check_calibration_params(calibration_params)
        f, data = self._data(pairs, y)
        result = f.solve_exact(data)
        self._store_result(result, n_features=result.M.shape[0])
        return self._calibrate_after_fit(pairs, y, calibration_params)

    def declared_problem(self, pairs, y, calibration_params=None):
        """The formulation's declared problem on the pairs that :meth:`fit`
        would learn from (validated alike), unsolved; the estimator is not
        changed.

        Returns
        -------
        DeclaredProblem
        """
        self._check_calibration_params(calibration_params)
        f, data = self._data(pairs, y)
        return f.load("declared")(data)


# ---------------------------------------------------------------------------
# The problem collection
# ---------------------------------------------------------------------------


def _pair_arrays():
    """The arrays of a pair instance (the MMC family's layout)."""
    from .collection import ArraySpec

    return (
        ArraySpec("X", "float", ("n", "d"), doc="samples, one per row"),
        ArraySpec("pairs", "int", ("P", 2), doc="pairs (i, j) of rows of X"),
        ArraySpec("pair_labels", "int", ("P",),
                  doc="+1 similar, -1 dissimilar"),
    )


def pairs_family(name, hyperparameters, *, generate=None):
    """The problem-collection family of a registered pair formulation.

    Its methods are those of the formulation's registry entry with a
    collection solve (:attr:`cvxmetric.formulations.Method.collection`),
    which :func:`cvxmetric.collection.register_family` reads.

    Parameters
    ----------
    name : str
        The formulation's name (also the family's folder).
    hyperparameters : dict
        The instances' hyperparameters and their defaults, passed to the
        data class by name.
    generate : callable, optional
        ``generate() -> list of dict`` (``name``, ``arrays``,
        ``hyperparameters``, ``description``, ``source``): the bundled
        instances (:func:`cvxmetric.collection.make_problems`).

    Returns
    -------
    FamilySpec
        The argument of :func:`cvxmetric.collection.register_family`.
    """
    from .collection import FamilySpec

    f = _formulation(name)

    def to_data(arrays, hp):
        return f.load("data")(arrays["X"], arrays["pairs"], arrays["pair_labels"],
                              **hp)

    def exact(data):
        return f.solve_exact(data)

    def reference_solve(data, solver, tol):
        return f.solve_exact(data, solvers=(solver,), tol=tol)

    def sizes(arrays):
        n, d = arrays["X"].shape
        return {"n": int(n), "d": int(d), "n_pairs": len(arrays["pairs"])}

    return FamilySpec(name=f.name, arrays=_pair_arrays(),
                      hyperparameters=dict(hyperparameters), to_data=to_data,
                      objective=lambda data, M: data.objective(M), exact=exact,
                      reference_solve=reference_solve, sizes=sizes,
                      generate=generate)


# ---------------------------------------------------------------------------
# The real-data conformance suite
# ---------------------------------------------------------------------------


def conformance_slice(name, *, datasets=("iris",), seeds=(0,)):
    """The real-data suite's rows of a registered formulation.

    The suite (:func:`cvxmetric.bench.conformance.run_suite`) on the slice
    ``datasets`` x ``seeds`` of the formulation's estimators and methods,
    in this process: each case fits an estimator on the suite's data
    (:func:`cvxmetric.bench.conformance.load_dataset`: the standardised
    training part of one fold per seed) with the constraints its
    ``suite_data`` gives, and the rows are judged by the suite's own
    verdicts (an exact row is certified when its status is ``optimal`` and
    its certificate passes; a fast row converges and agrees with its
    reference within its tolerance).

    Parameters
    ----------
    name : str
    datasets, seeds : sequences

    Returns
    -------
    list of dict
        The judged rows.
    """
    from .bench import conformance

    return conformance.run_suite(datasets=tuple(datasets), seeds=tuple(seeds),
                                 families=[_formulation(name).name], isolate=False,
                                 max_seconds=None, max_memory_mb=None)

"""RCA estimators: metric-learn 0.7's ``RCA`` and ``RCA_Supervised``.

:class:`RCA` takes ``fit(X, chunks)`` with chunklet labels (``-1``: a
sample in no chunklet); :class:`RCA_Supervised` draws its chunklets from
class labels exactly as metric-learn does (``n_chunks`` chunklets of
``chunk_size`` same-class samples, with ``random_state``).  Both solve
RCA's Sec. 4.2 problem with the solver ``solver`` names:

==========  =================================================  =========
``solver``  what runs                                          guarantee
==========  =================================================  =========
``fast``    :func:`~cvxmetric.rca.solve_closed_form`: one       certified
            ``eigh`` of the within-chunklet covariance
``exact``   :func:`~cvxmetric.rca.solve_exact`: the CVXPY       certified
            problem (``cp.log_det``), Clarabel then SCS
==========  =================================================  =========

**Dimension reduction.**  With ``n_components`` below the number of
features, or when the within-chunklet covariance ``C`` has rank ``r``
below it (too few chunklets, features constant within every chunklet),
the samples are first projected on the directions of
:func:`~cvxmetric.rca.rca_reduction` (metric-learn's Fisher projection,
sought in the range of ``C``), and the problem is solved there, where
``C`` is definite: at most ``r`` directions are kept, with a
``UserWarning`` when fewer than asked.  (metric-learn warns and returns
NaN when ``C`` is singular and ``n_components`` is not lowered.)  The
certificate is then the reduced problem's.

**Scaling.**  The problem's solution is ``M* = |C|^{1/d} C^{-1}`` (``|M*|
= 1``, ``result_.M``, in the reduced coordinates when reduced);
``components_`` is metric-learn's whitening transform ``C^{-1/2}`` (times
the projection), so ``transform`` and ``get_mahalanobis_matrix`` equal
metric-learn's: the same metric, divided by ``|C|^{1/d}``.
"""

import dataclasses
import warnings
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import validate_data

from .._base import (
    LabelledMixin,
    MahalanobisMixin,
    form_samples,
    solver_names,
    store_arguments,
    validate_labelled,
)
from .._docs import fill_doc
from .._validation import check_samples
from ..formulations import formulation
from ._problem import RCAData, check_chunks, chunks_from_labels, rca_reduction
from .exact import declared_problem
from .fast import solve_closed_form

__all__ = ["RCA", "RCA_Supervised", "SOLVER_NAMES"]

#: Values of the estimators' ``solver`` parameter (the registry's methods).
SOLVER_NAMES = solver_names("rca")


def _sqrtm_psd(M):
    """The symmetric square root of a PSD ``M``."""
    w, V = np.linalg.eigh(0.5 * (M + M.T))
    return (V * np.sqrt(np.maximum(w, 0.0))) @ V.T


@fill_doc(matrix="M")
class RCA(TransformerMixin, MahalanobisMixin, BaseEstimator):
    """Relevant component analysis (Bar-Hillel, Hertz, Shental, Weinshall,
    JMLR 2005) from chunklets: ``fit(X, chunks)``.

    Solves, over the samples of the chunklets (``p`` of them, ``m_j`` the
    mean of chunklet ``j``)::

        min_M  (1/p) sum_j sum_i ||x_ji - m_j||_M^2   subject to  |M| >= 1

    whose solution is ``|C|^{1/d} C^{-1}`` for the within-chunklet
    covariance ``C`` (certified; module docstring for the reduction and
    the scaling).

    Parameters
    ----------
    n_components : int >= 1, optional
        Dimension of the learned space (default: the number of features,
        or the rank of ``C`` when lower).
    preprocessor : array_like of shape (n_samples, n_features) or callable, \
optional
        metric-learn's meaning: a 1-D ``X`` holds indicators of samples.
    solver : {{"fast", "exact"}}, default="fast"
        ``"fast"``: the closed form; ``"exact"``: the CVXPY problem.
    verbose : bool or int, default=False
        ``True`` / ``1``: the stages and a summary of the fit at INFO on
        the ``cvxmetric`` logger; ``3``: DEBUG.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        metric-learn's ``L``: ``C^{{-1/2}}`` (of the reduced ``C`` times the
        projection's transpose when reduced).
    mahalanobis_matrix_ : ndarray of shape (n_features, n_features)
        ``L^T L``.
    projection_ : ndarray of shape (n_features, n_components) or None
        The orthonormal directions the problem was solved on (``None``:
        no reduction).
    objective_ : float
        The problem's optimal value ``d |C|^{{1/d}}`` (at ``result_.M``).
    {status_}
    n_iter_ : int
    certificate_ : Certificate
    {result_}
    n_features_in_ : int
    {feature_names_in_}

    Examples
    --------
    >>> import numpy as np
    >>> from cvxmetric import RCA
    >>> X = np.array([[-0.05, 3.0], [0.05, -3.0], [0.1, -3.55], [-0.1, 3.55],
    ...               [-0.95, -0.05], [0.95, 0.05], [0.4, 0.05], [-0.4, -0.05]])
    >>> RCA().fit(X, [0, 0, 1, 1, 2, 2, 3, 3]).status_
    'optimal'
    """

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        "preprocessor": ["array-like", callable, None],
        "solver": [StrOptions(set(SOLVER_NAMES))],
        "verbose": ["verbose"],
    }

    def __init__(self, n_components=None, preprocessor=None, solver="fast",
                 verbose=False):
        store_arguments(self, locals())

    def fit(self, X, chunks):
        """Learn the metric from chunklets.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)
        chunks : array_like of int, shape (n_samples,)
            ``chunks[i] = j``: sample ``i`` is in chunklet ``j``; ``-1``:
            in none.  Every chunklet has at least 2 samples.

        Returns
        -------
        self
        """
        X = form_samples(X, self.preprocessor)
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        return self._fit_chunks(X, check_chunks(chunks, X.shape[0]))

    def declared_problem(self, X, chunks):
        """The problem :meth:`fit` solves (after its reduction, if any),
        unsolved; the estimator is not changed.

        Returns
        -------
        DeclaredProblem
        """
        self._validate_params()
        X = form_samples(X, self.preprocessor)
        X = check_samples(X, "X")
        data, _ = self._reduced(RCAData(X, check_chunks(chunks, X.shape[0])))
        return declared_problem(data)

    def _reduced(self, data):
        """``(solved, A)``: the data the problem is solved on and the
        projection (``None`` when none)."""
        d, r = data.n_features, data.rank
        if r == 0:
            raise ValueError("chunks: the samples of every chunklet are identical "
                             "(zero within-chunklet covariance); RCA has nothing "
                             "to learn.")
        k = d if self.n_components is None else int(self.n_components)
        if k > d:
            raise ValueError(f"n_components: at most the number of features, {d}; "
                             f"got {k}.")
        if r < k:
            warnings.warn(
                f"The within-chunklet covariance has rank {r} < {k} "
                f"({'n_components' if self.n_components is not None else 'features'}"
                f"): RCA's metric is solved on the {r} directions it spans "
                f"(components_ has {r} rows). Use more or larger chunklets, or "
                f"remove the features constant within every chunklet.",
                UserWarning, stacklevel=3)
            k = r
        if k == d:
            return data, None
        A = rca_reduction(data.X, data.chunks, data.C, k)
        return RCAData.projected(data, A), A

    def _fit_chunks(self, X, chunks):
        data, A = self._reduced(RCAData(X, chunks))
        f = formulation("rca")
        result = self._run_solver({"fast": lambda: solve_closed_form(data),
                                   "exact": lambda: f.solve_exact(data)})
        self.result_ = dataclasses.replace(
            result, info={k: v for k, v in result.info.items() if k != "model"})
        self._store_outcome(result)
        # metric-learn's whitening C^{-1/2}: M* / |C|^{1/k} = C^{-1}
        lam = np.exp(data.logdet_C() / data.n_features)
        L = _sqrtm_psd(result.M / lam)
        self.projection_ = A
        self.components_ = L if A is None else L @ A.T
        self.mahalanobis_matrix_ = self.components_.T @ self.components_
        self._log_fit(before=[("solver=%s", self.solver), ("dimension=%d", L.shape[0])])
        if result.status != "optimal":
            warnings.warn(f"RCA: the certificate does not pass (relative gap "
                          f"{result.certificate.rel_gap:.3g}); status "
                          f"{result.status}.", ConvergenceWarning, stacklevel=3)
        return self


@fill_doc(matrix="M", learner="RCA")
class RCA_Supervised(LabelledMixin, RCA):
    """RCA from class labels: ``fit(X, y)`` draws ``n_chunks`` chunklets of
    ``chunk_size`` same-class samples (metric-learn 0.7's draw, the same
    chunklets for the same ``random_state``) and fits :class:`RCA`.

    Parameters
    ----------
    n_components : int >= 1, optional
        As in :class:`RCA`.
    n_chunks : int >= 1, default=100
        Chunklets to draw.  When the classes allow fewer
        (``sum_c floor(n_c / chunk_size)``), that many are drawn with a
        ``UserWarning`` (metric-learn raises ``ValueError``).
    chunk_size : int >= 2, default=2
        Samples per chunklet.
    preprocessor : array_like or callable, optional
        As in :class:`RCA`.
    random_state : int, RandomState instance or None, default=None
        The chunklet draw.
    num_chunks : int or "deprecated", default="deprecated"
        metric-learn's old name of ``n_chunks``: when given it sets
        ``n_chunks``, with a ``FutureWarning`` (as metric-learn).
    solver : {{"fast", "exact"}}, default="fast"
        As in :class:`RCA`.
    verbose : bool or int, default=False
        As in :class:`RCA`.

    Attributes
    ----------
    {supervised_attributes}
    projection_ : ndarray or None
        As in :class:`RCA`.
    chunks_ : ndarray of int, shape (n_samples,)
        The chunklets drawn (``-1``: a sample in none).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from cvxmetric import RCA_Supervised
    >>> X, y = load_iris(return_X_y=True)
    >>> RCA_Supervised(n_chunks=30, random_state=0).fit(X, y).transform(X).shape
    (150, 4)
    """

    _parameter_constraints = {
        **RCA._parameter_constraints,
        "n_chunks": [Interval(Integral, 1, None, closed="left")],
        "chunk_size": [Interval(Integral, 2, None, closed="left")],
        "random_state": ["random_state"],
        "num_chunks": [StrOptions({"deprecated"}),
                       Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, n_components=None, n_chunks=100, chunk_size=2,
                 preprocessor=None, random_state=None, num_chunks="deprecated",
                 solver="fast", verbose=False):
        store_arguments(self, locals())

    def _draw(self, X, y):
        """Validated samples and the chunklets drawn from ``y``."""
        X = form_samples(X, self.preprocessor)
        X, y, _, _ = validate_labelled(self, X, y, ensure_min_samples=2)
        n_chunks = self.n_chunks
        if self.num_chunks != "deprecated":
            warnings.warn('"num_chunks" parameter has been renamed to "n_chunks"; '
                          'give n_chunks.', FutureWarning, stacklevel=4)
            n_chunks = self.num_chunks
        chunks, available = chunks_from_labels(y, n_chunks, self.chunk_size,
                                               self.random_state)
        if available == 0:
            raise ValueError(f"y: no class has {self.chunk_size} samples "
                             f"(chunk_size); no chunklet can be drawn.")
        if available < n_chunks:
            warnings.warn(f"n_chunks: the classes allow {available} chunklets of "
                          f"{self.chunk_size} samples, fewer than {n_chunks}; "
                          f"{available} were drawn.", UserWarning, stacklevel=4)
        return X, chunks

    def _fit(self, X, y):
        X, chunks = self._draw(X, y)
        self.chunks_ = chunks
        return self._fit_chunks(X, chunks)

    def _declare(self, X, y):
        X, chunks = self._draw(X, y)
        data, _ = self._reduced(RCAData(X, chunks))
        return declared_problem(data)

"""Qwise vector estimators: scikit-learn / metric-learn front ends of the
vector model (Eq. 12-14) and its smoothed primal (Appendix A, Eq. 27-30).

:class:`QwiseVector` is a tuple learner (quadruplets and optionally
labelled pairs, as :class:`~cvxmetric.Qwise` takes them);
:class:`QwiseVectorSupervised` takes ``fit(X, y)`` and samples its
constraints from the labels.  Both build
:class:`~cvxmetric.qwise_vector.QwiseVectorData` and hand it to the solver
selected by ``solver``: ``"exact"`` (:func:`~cvxmetric.qwise_vector.solve_exact`,
CVXPY, certified) or ``"newton"`` (Algorithm 2,
:class:`~cvxmetric.qwise_vector.ProjectedNewton`, certified).

Under scikit-learn's ``array_api_dispatch``, ``solver="newton"`` keeps a
PyTorch, CuPy or ``array-api-strict`` ``X`` (for :class:`QwiseVector`: an
array ``preprocessor``, or the tuples' points) on its namespace: the
constraints are sampled or indexed on a host copy, Algorithm 2's passes
over the terms run on the device, the features ``Psi`` built there
(:meth:`QwiseVectorData.on_device
<cvxmetric.qwise_vector.QwiseVectorData.on_device>`), and the fitted
attributes are NumPy arrays.  The exact path runs on NumPy and refuses
such input by name.
"""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions

from .._backend import is_numpy, to_numpy
from .._base import (SOLVER_OPTION_CONSTRAINTS, LabelledMixin, MahalanobisMixin,
                     array_ndim, given_options, solver_names, store_arguments, validate_labelled)
from .._docs import fill_doc
from .._solver import conic_verbose
from ..formulations import formulation
from ..qwise.estimator import Qwise, _label_sets
from ..result import Status
from ._problem import H_RANGE, LOSSES, PSI, QwiseVectorData
from .exact import declared_problem
from .fast import ProjectedNewton

__all__ = ["QwiseVector", "QwiseVectorSupervised", "VECTOR_SOLVERS"]



#: Values of the vector estimators' ``solver`` parameter (the registry's).
VECTOR_SOLVERS = solver_names("qwise_vector")

#: The loss each vector solver solves when ``loss=None`` (the default):
#: the exact path solves Eq. 14 as printed (hinge losses), Algorithm 2 the
#: smoothed problem of Eq. 27-30, the only one it is defined for.
VECTOR_SOLVER_LOSS = {"exact": "hinge", "newton": "huber"}

_VECTOR_CONSTRAINTS = {
    "C_q": [Interval(Real, 0, None, closed="left")],
    "C_p": [Interval(Real, 0, None, closed="left")],
    "loss": [StrOptions(set(LOSSES)), None],
    "h": [Interval(Real, H_RANGE[0], H_RANGE[1], closed="both")],
    "solver": [StrOptions(set(VECTOR_SOLVERS))],
    **SOLVER_OPTION_CONSTRAINTS,
}


class _QwiseVectorBase(MahalanobisMixin, BaseEstimator):
    """Solve the vector model and store ``coef_``, ``intercept_``."""

    def _loss(self):
        """The loss solved: ``loss``, or the solver's own when it is None
        (:data:`VECTOR_SOLVER_LOSS`)."""
        if self.loss is not None:
            return self.loss
        try:
            return VECTOR_SOLVER_LOSS[self.solver]
        except KeyError:  # only reachable when parameter validation was bypassed
            raise ValueError(
                f"solver: unknown option {self.solver!r}; expected one of "
                f"{', '.join(repr(s) for s in VECTOR_SOLVERS)}.") from None

    def _vector_data(self, quadruplets, pairs, psi):
        self.loss_ = self._loss()
        return self._declared_data(quadruplets, pairs, psi)

    def _declared_data(self, quadruplets, pairs, psi):
        """The canonical data of the loss :meth:`_loss` solves (the estimator
        is not changed)."""
        return QwiseVectorData.from_sets(quadruplets, pairs, psi=psi, loss=self._loss(),
                                         h=self.h, C_q=self.C_q, C_p=self.C_p)

    def _solve_one(self, data, device_X=None):
        """One vector problem: a :class:`SolverResult`.

        ``device_X`` (``array_api_dispatch``, ``solver="newton"`` only): the
        samples of ``data`` on their device, where Algorithm 2's passes run
        (:meth:`QwiseVectorData.on_device`).
        """
        options = given_options(tol=self.tol, maxiter=self.max_iter)
        return self._run_solver({
            "exact": lambda: formulation("qwise_vector").solve_exact(
                data, verbose=conic_verbose(self.verbose)),
            # Algorithm 2 refuses loss="hinge" itself, naming loss
            # the samples' host copy the sets were built on: checked, counted
            "newton": lambda: ProjectedNewton(**options).run(
                data if device_X is None
                else data.on_device(device_X, host_copy=data._source[0])),
        })

    def _store(self, results, psi, n_features, attributes=None):
        """Fitted attributes from one result per attribute."""
        W = np.array([r.info["w"] for r in results])  # (n_attributes, d)
        b = np.array([r.info["b"] for r in results])
        self.psi_ = psi
        self.attributes_ = attributes
        single = attributes is None
        self.coef_ = W[0] if single else W
        self.intercept_ = float(b[0]) if single else b
        self.results_ = results
        self.result_ = results[0] if single else None
        self.objective_ = float(sum(r.objective for r in results))
        # "optimal" only when every attribute's solve is; else the first
        # attribute's status that is not
        self.status_ = next((r.status for r in results if r.status != Status.OPTIMAL),
                            Status.OPTIMAL)
        self.certificate_ = max(results, key=lambda r: r.certificate.rel_gap).certificate
        self.n_iter_ = int(sum(r.n_iter for r in results))
        if psi == "squared":
            L = np.diag(np.sqrt(np.maximum(W[0], 0.0)))
        else:
            L = W
        self.components_ = L
        self.mahalanobis_matrix_ = L.T @ L
        self.n_features_in_ = int(n_features)
        return self

    # -- the paper's dissimilarity and decision --------------------------------

    def _D(self, points, a, b):
        """``D_w`` between columns ``a`` and ``b`` of ``points`` (n, width, d):
        (n,) or (n, n_attributes)."""
        diff = points[:, a] - points[:, b]  # (n, d)
        if self.psi_ == "squared":
            np.multiply(diff, diff, out=diff)
        return diff @ self.coef_.T  # coef_ is (d,) or (n_attributes, d)

    def _width(self, tuples, name):
        """2 (pairs) or 4 (quadruplets) from the shape of ``tuples``."""
        shape = np.shape(tuples) if array_ndim(tuples, name) else ()
        width = shape[1] if len(shape) >= 2 else None
        if width not in (2, 4):
            raise ValueError(
                f"{name}: expected pairs (n, 2) / (n, 2, n_features) or quadruplets "
                f"(n, 4) / (n, 4, n_features), got shape {shape}.")
        return width

    def pair_distance(self, pairs):
        """The learned dissimilarity ``D_w = w^T Psi`` of each pair (Eq. 13).

        For ``psi="squared"`` this is the *squared* Mahalanobis distance with
        ``M = diag(w)`` (the paper's ``D_w``, on the scale of the threshold
        ``b``); for ``psi="linear"`` it is signed, ``w^T (x_a - x_b)``, one
        column per attribute when fitted on several.

        Parameters
        ----------
        pairs : array_like
            Points (n_pairs, 2, n_features) or indices (n_pairs, 2) into
            ``preprocessor``.

        Returns
        -------
        ndarray of shape (n_pairs,) or (n_pairs, n_attributes)
        """
        return self._D(self._pair_points(pairs), 0, 1)

    def pair_score(self, pairs):
        """``-pair_distance(pairs)``: higher means more similar."""
        return -self.pair_distance(pairs)


@fill_doc
class QwiseVector(_QwiseVectorBase):
    """The Qwise vector model (Law, Thome, Cord 2016, Eq. 12-14), tuple learner.

    Learns ``omega = [w; b]`` of the dissimilarity ``D_w(i, j) = w^T Psi_ij``
    and the threshold ``b``::

        min_{w, b}  0.5 (||w||^2 + b^2)
                    + C_q sum_q  L_{delta_q}(D_w(k, l) - D_w(i, j))
                    + C_p sum_p  L_1(y_p (D_w(i, j) - b))

    (Eq. 27: ``y_p = +1`` for a dissimilar pair), with hinge losses
    (``loss="hinge"``: Eq. 14 exactly) or the smoothed ``L_1^h``, ``L_0^h``
    of Eq. 29-30 (``loss="huber"``, the problem the paper's Newton method
    solves).

    Parameters
    ----------
    psi : {"squared", "linear"}, default="squared"
        ``"squared"``: ``Psi = Phi o Phi`` with ``w, b >= 0`` -- a diagonal
        PSD metric ``M = diag(w)`` (Sec. 3.3.1).  ``"linear"``: ``Psi = Phi``
        with ``w, b`` free -- one row of ``L`` per relative attribute
        (Sec. 3.3.2); ``fit`` then also takes one constraint set per
        attribute (a dict) and learns ``L`` row by row.
    C_q, C_p : float >= 0, default=1.0
        Weights of the quadruplet and pair losses.
    loss : {"hinge", "huber"} or None, default=None
        ``None`` solves the loss of the chosen solver: ``"hinge"`` (Eq. 14
        as printed) with ``solver="exact"``, ``"huber"`` (Eq. 27-30) with
        ``solver="newton"``.  The exact path solves either loss; Algorithm
        2 is defined for ``"huber"`` only, so ``solver="newton",
        loss="hinge"`` is refused naming ``loss``.
    h : float in [1e-6, 0.5], default=0.05
        Smoothing of ``"huber"`` (the paper uses 0.05).
    solver : {"exact", "newton"}, default="exact"
        Certified CVXPY solve (either loss) or Algorithm 2, the projected
        Newton method (``loss="huber"``), certified by its own duality
        gap.
    tol, max_iter : optional
        Stopping tolerance (relative duality gap) and iteration cap of
        ``"newton"``; ignored by ``"exact"``.
    preprocessor : array_like of shape (n_samples, n_features), optional
        The sample matrix integer tuples index into.
    random_state : int, RandomState instance or None, default=None
        No vector solver is randomised; kept for the shared conventions.
    {verbose}

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,) or (n_attributes, n_features)
        ``w`` (or ``L``, one row per attribute).
    intercept_ : float or ndarray of shape (n_attributes,)
        The learned threshold ``b`` (one per attribute).
    attributes_ : list or None
        The attribute names when fitted on several constraint sets.
    components_ : ndarray
        ``diag(sqrt(w))`` (squared) or ``L`` (linear): :meth:`transform`
        returns ``X @ components_.T``, i.e. ``h = L x`` for relative
        attributes.
    mahalanobis_matrix_ : ndarray of shape (n_features, n_features)
        ``diag(w)`` or ``L^T L``.
    objective_ : float
        The objective at the solution (summed over attributes).
    status_ : str
        ``"optimal"`` when every attribute's certificate passes.
    certificate_ : Certificate
        The certificate with the largest gap.
    result_ : SolverResult or None
        The solver's result (one attribute); ``results_`` holds all.
    n_iter_, n_features_in_, psi_ : int, int, str
    loss_ : {"hinge", "huber"}
        The loss solved (``loss``, or the solver's own when ``loss=None``).

    Notes
    -----
    ``pair_distance`` returns the paper's ``D_w`` -- for ``psi="squared"``
    the *squared* distance, on the scale of ``b`` -- rather than its square
    root as the Mahalanobis learners do.  ``predict`` and ``score`` take
    pairs (similar / dissimilar from the sign of ``D_w - b``) or
    quadruplets (whether the ordering holds), told apart by their width.
    Pair labels are the package's: +1 similar, -1 dissimilar.

    {quadruplets_example}
    >>> est.coef_.shape, est.status_
    ((2,), 'optimal')
    """

    _parameter_constraints = {
        **_VECTOR_CONSTRAINTS,
        "psi": [StrOptions(set(PSI))],
        "preprocessor": ["array-like", None],
    }

    def __init__(self, psi="squared", C_q=1.0, C_p=1.0, loss=None, h=0.05,
                 solver="exact", tol=None, max_iter=None, preprocessor=None,
                 random_state=None, verbose=False):
        store_arguments(self, locals())

    def decision_function(self, tuples):
        """Pairs: ``b - D_w`` (positive: similar).  Quadruplets
        ``(i, j, k, l)``: ``D_w(k, l) - D_w(i, j)`` (positive: the ordering
        holds)."""
        if self._width(tuples, "tuples") == 2:
            return self.intercept_ - self.pair_distance(tuples)
        points = self._tuple_points(tuples, "quadruplets", 4)
        return self._D(points, 2, 3) - self._D(points, 0, 1)

    def predict(self, tuples):
        """Pairs: +1 similar / -1 dissimilar from the sign of ``D_w - b``
        (the paper's change detection, Sec. 5.1.2: positive is dissimilar).
        Quadruplets: +1 where ``D_w(k, l) > D_w(i, j)``, else -1."""
        return np.where(self.decision_function(tuples) > 0, 1, -1)

    def score(self, tuples, y=None):
        """Pairs with labels ``y`` (+1 / -1): accuracy of :meth:`predict`.
        Quadruplets (``y`` None): fraction whose ordering holds."""
        pred = self.predict(tuples)
        if self._width(tuples, "tuples") == 2:
            if y is None:
                raise ValueError("y: scoring pairs needs their labels (+1 similar, "
                                 "-1 dissimilar).")
            y = Qwise._check_pair_labels(y)
            if pred.ndim > 1 or y.shape[0] != pred.shape[0]:
                raise ValueError(f"y: expected shape ({pred.shape[0]},) for a model "
                                 f"of one attribute, got {y.shape}.")
            return float(np.mean(pred == y))
        if y is not None:
            raise ValueError(f"y: {type(self).__name__}.score takes no labels with "
                             f"quadruplets (the order within each is the label).")
        return float(np.mean(pred > 0))

    def fit(self, quadruplets, y=None, *, delta=1.0, pairs=None, pair_labels=None):
        """Learn ``w`` and ``b`` (or ``L`` and one ``b`` per attribute).

        Parameters
        ----------
        quadruplets : array_like or dict
            Integer indices (n, 4) into ``preprocessor`` or points
            (n, 4, n_features): ``(i, j, k, l)`` asks for
            ``D_w(k, l) >= D_w(i, j) + delta``.  With ``psi="linear"``, a
            dict ``{attribute: quadruplets}`` learns one row of ``L`` per
            attribute (Sec. 3.3.2).
        y : None
            Refused (margins go by keyword), as in :class:`Qwise`.
        delta : float, array_like or dict, default=1.0
            Margins; with ``loss="huber"`` each must be 0 or 1 (Eq. 29-30).
            A dict (same keys as ``quadruplets``) gives one per attribute.
        pairs, pair_labels : array_like or dict, optional
            Labelled pairs (+1 similar, -1 dissimilar): the threshold ``b``
            is learned from them (Eq. 14's pair constraints).  Dicts with
            the same keys as ``quadruplets`` for several attributes.

        Returns
        -------
        self : QwiseVector
        """
        self._check_labels_and_pairs("fit", y, pairs, pair_labels)
        if isinstance(quadruplets, dict):
            return self._fit_attributes(quadruplets, delta, pairs, pair_labels)
        for name, value in (("delta", delta), ("pairs", pairs),
                            ("pair_labels", pair_labels)):
            if isinstance(value, dict):
                raise ValueError(f"{name}: a dict (one set per attribute) needs "
                                 f"quadruplets given as a dict with the same keys.")
        data, device_X = self._sets_data(quadruplets, delta, pairs, pair_labels)
        return self._store([self._solve_one(data, device_X)], self.psi, data.n_features)

    def declared_problem(self, quadruplets, y=None, *, delta=1.0, pairs=None,
                         pair_labels=None):
        """Eq. 14 (or the smoothed Eq. 27-30) on this input, as declared,
        without solving it.

        Takes what :meth:`fit` takes and validates it as ``fit`` does, for
        one constraint set: one problem is declared, so the rows of ``L``
        of several attributes (dicts) are declared one call per attribute.
        The loss is the one ``fit`` solves (``loss``, or the solver's own
        when it is None).  The estimator is not changed.

        Parameters
        ----------
        quadruplets, y, delta, pairs, pair_labels
            As in :meth:`fit` (no dicts).

        {declared_returns_units}
        """
        self._validate_params()
        self._check_labels_and_pairs("declared_problem", y, pairs, pair_labels)
        for name, value in (("quadruplets", quadruplets), ("delta", delta),
                            ("pairs", pairs), ("pair_labels", pair_labels)):
            if isinstance(value, dict):
                raise ValueError(
                    f"{name}: one constraint set per attribute (a dict) is one "
                    f"problem per attribute; declare each attribute's set on its "
                    f"own.")
        quads, labelled, _ = self._sets(quadruplets, delta, pairs, pair_labels)
        return declared_problem(self._declared_data(quads, labelled, self.psi))

    @staticmethod
    def _check_labels_and_pairs(method, y, pairs, pair_labels):
        """Refuse ``y`` (margins go by keyword) and half of a labelled pair set."""
        if y is not None:
            raise ValueError(
                f"y: QwiseVector.{method} takes no labels (each quadruplet "
                f"(i, j, k, l) already says D(k, l) >= D(i, j) + delta); pass "
                f"margins by keyword.")
        if (pairs is None) != (pair_labels is None):
            missing = "pair_labels" if pair_labels is None else "pairs"
            raise ValueError(f"{missing}: pairs and pair_labels must be given together.")

    def _sets(self, quadruplets, delta, pairs, pair_labels):
        """The quadruplets and labelled pairs of one constraint set, and the
        samples on their device (``None`` on NumPy's path)."""
        labels = None if pair_labels is None else Qwise._check_pair_labels(pair_labels)
        if self.solver == "newton":
            # Algorithm 2's passes run on the points' namespace
            # (array_api_dispatch); the sets are built on a host copy, as
            # Qwise builds its own
            found = Qwise._device_sets(self, quadruplets, delta, pairs, labels)
            if found is not None:
                return found
        return (*Qwise._build_sets(self, quadruplets, delta, pairs, labels), None)

    def _sets_data(self, quadruplets, delta, pairs, pair_labels):
        """The canonical data of one constraint set and its samples on
        their device (``None`` on NumPy's path)."""
        quads, labelled, device_X = self._sets(quadruplets, delta, pairs, pair_labels)
        return self._vector_data(quads, labelled, self.psi), device_X

    def _fit_attributes(self, quadruplets, delta, pairs, pair_labels):
        """One row of ``L`` per attribute (``psi="linear"``, Sec. 3.3.2)."""
        if self.psi != "linear":
            raise ValueError(
                "quadruplets: one constraint set per attribute (a dict) learns the rows "
                "of L and needs psi='linear'; psi='squared' learns one diagonal metric.")
        keys = list(quadruplets)
        if not keys:
            raise ValueError("quadruplets: the dict of attributes is empty.")
        per = {}
        for name, value in (("delta", delta), ("pairs", pairs),
                            ("pair_labels", pair_labels)):
            if isinstance(value, dict):
                if list(value) != keys:
                    raise ValueError(
                        f"{name}: expected one entry per attribute of quadruplets "
                        f"({len(keys)}: {keys[:5]}), got {len(value)} "
                        f"({list(value)[:5]}).")
                per[name] = value
            elif name != "delta" and value is not None:
                raise ValueError(f"{name}: with several attributes, give a dict with "
                                 f"the keys of quadruplets.")
            else:
                per[name] = {k: value for k in keys}
        results, d = [], None
        for k in keys:
            data, device_X = self._sets_data(quadruplets[k], per["delta"][k],
                                             per["pairs"][k], per["pair_labels"][k])
            if d is not None and data.n_features != d:
                raise ValueError(f"quadruplets: attribute {k!r} has {data.n_features} "
                                 f"features, the first has {d}.")
            d = data.n_features
            results.append(self._solve_one(data, device_X))
        return self._store(results, "linear", d, attributes=keys)


@fill_doc
class QwiseVectorSupervised(LabelledMixin, TransformerMixin, _QwiseVectorBase):
    """The diagonal vector model (``psi="squared"``) learned from class labels.

    Samples ``n_constraints`` quadruplets (same-class pair closer, by margin
    1, than a different-class pair; :func:`~cvxmetric.quadruplets_from_labels`)
    and, when ``C_p > 0``, ``n_constraints`` labelled pairs (half similar,
    half dissimilar) from which the threshold ``b`` is learned, then solves
    Eq. 14 (or its smoothed form) as :class:`QwiseVector` does.

    Parameters
    ----------
    n_constraints : int >= 1, optional
        Default ``min(1000, 20 * n_samples)``.
    C_q, C_p, loss, h, solver, tol, max_iter, verbose
        As in :class:`QwiseVector`.
    random_state : int, RandomState instance or None, default=None
        Seeds the constraint sampling.

    Attributes
    ----------
    coef_, intercept_, components_, mahalanobis_matrix_, objective_, \
status_, certificate_, result_, n_iter_, n_features_in_, loss_
        As in :class:`QwiseVector`.

    {iris_example}
    """

    _parameter_constraints = {
        **_VECTOR_CONSTRAINTS,
        "n_constraints": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(self, n_constraints=None, C_q=1.0, C_p=1.0, loss=None, h=0.05,
                 solver="exact", tol=None, max_iter=None, random_state=None,
                 verbose=False):
        store_arguments(self, locals())

    def _fit(self, X, y):
        """Sample the quadruplets and pairs and learn ``w`` and ``b``."""
        quads, labelled, device_X = self._sample(X, y)
        data = self._vector_data(quads, labelled, "squared")
        return self._store([self._solve_one(data, device_X)], "squared", data.n_features)

    def _declare(self, X, y):
        """Eq. 14 (or the smoothed Eq. 27-30) on the constraints ``fit(X, y)`` samples."""
        quads, labelled, _ = self._sample(X, y)
        return declared_problem(self._declared_data(quads, labelled, "squared"))

    def _sample(self, X, y):
        """Validate ``(X, y)`` and sample the quadruplets (and pairs);
        ``(Quadruplets, LabeledPairs or None, device X or None)``."""
        # Algorithm 2's passes run on X's namespace (array_api_dispatch)
        X, y, _, _ = validate_labelled(self, X, y, ensure_min_samples=2,
                                       keep_namespace=self.solver == "newton")
        device_X = None
        if not is_numpy(X):
            # the constraints' bookkeeping (sampling, canonical sets) is on
            # the host: one host copy of X
            device_X, X = X, np.asarray(to_numpy(X), dtype=np.float64)
        quads, labelled = _label_sets(X, y, self.n_constraints, self.random_state,
                                      with_pairs=self.C_p > 0)
        return quads, labelled, device_X

"""The registry of formulations: one object per formulation, read by every layer.

A :class:`Formulation` states, for one convex problem of one paper, what
the rest of the package needs to know about it: the paper and the equations,
the estimators that fit it, its canonical data class, its exact path and its
declared CVXPY problem (as dotted names, imported only when asked for, so
that reading the registry imports no family), and its methods.  A
:class:`Method` is one way of solving it, selected by estimator parameters,
with its role (``"exact"``: the certified yardstick; ``"fast"``: a
certified fast solver; ``"paper"``: the paper's algorithm, reported;
``"paper-optimal"``: the paper's algorithm where it claims the convex
optimum), the method it is compared with, the key of its tolerance in
:data:`cvxmetric._tolerances.TOLERANCES` and its capabilities.

The real-data conformance suite (:mod:`cvxmetric.bench.conformance`) takes its
families, estimators, methods and refusals from here, and the command line
takes the estimator whose parameter constraints a family's ``solve`` options
obey.  :func:`formulations` lists the entries::

    >>> from cvxmetric import formulations
    >>> [f.name for f in formulations()][:3]
    ['qwise', 'qwise_vector', 'qwise_structural']

A formulation written outside the package (a script, a notebook, a new
subpackage under way) joins the registry with :func:`register` (its dotted
names may then be the objects themselves) and leaves it with
:func:`unregister`, or for the length of a ``with`` block with
:func:`registered`; ``docs/add_a_formulation.md`` walks through one.
"""

import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import import_module
from types import MappingProxyType

import numpy as np

__all__ = ["Formulation", "Method", "formulations", "formulation", "register",
           "unregister", "registered", "catalogued", "SUITE_INPUTS", "ROLES",
           "CAPABILITIES"]

#: What a method is to its formulation.
ROLES = ("exact", "fast", "paper", "paper-optimal")

#: Capabilities a method can declare, each checked against the code by the
#: tests: ``"warm_start"`` -- the exact path takes a starting point from
#: its caller (``init``, an earlier result, or ``warm_start``, a function
#: that computes one: :attr:`Formulation.warm_start`); ``"partial_fit"`` --
#: the estimator learns online;
#: ``"max_time"`` -- the estimator takes a time budget.
CAPABILITIES = ("warm_start", "partial_fit", "max_time")


@dataclass(frozen=True)
class Method:
    """One way of solving a formulation.

    Parameters
    ----------
    name : str
        Unique within the formulation.
    params : dict
        Estimator parameters that select it (``{"solver": "fast"}``).  A
        value that is a function is computed per case by the conformance
        suite as ``value(X, fit_args, seed)`` (a rank or a sketch size that
        depends on the data).
    role : str
        One of :data:`ROLES`.
    reference : str or None
        The method it is compared with (``None`` for the exact ones).
    tolerance : str or None
        Key of its tolerance (:func:`cvxmetric._tolerances.tolerance`);
        ``None``: its gap is reported, not judged.
    capabilities : frozenset of str
        Among :data:`CAPABILITIES`.
    collection : str, callable or None
        ``"module:function"`` (or the function) ``solve(data) ->
        SolverResult``: what ``cvxmetric verify`` runs, as this method, on
        each instance of the formulation's family of the problem collection
        (the data built from the instance, which carries its own
        hyperparameters); imported when first run (:meth:`load_collection`).
        ``None``: the collection does not check it.
    """

    name: str
    params: dict
    role: str
    reference: str = None
    tolerance: str = None
    capabilities: frozenset = frozenset()
    collection: object = None

    def __post_init__(self):
        if self.role not in ROLES:
            raise ValueError(f"role: expected one of {ROLES}, got {self.role!r}.")
        unknown = set(self.capabilities) - set(CAPABILITIES)
        if unknown:
            raise ValueError(f"capabilities: unknown {sorted(unknown)}; expected "
                             f"among {CAPABILITIES}.")
        if (self.role == "exact") != (self.reference is None):
            raise ValueError(f"reference: an exact method has none, any other one "
                             f"has one ({self.name!r}: role {self.role!r}, "
                             f"reference {self.reference!r}).")
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))
        object.__setattr__(self, "capabilities", frozenset(self.capabilities))

    def load_collection(self):
        """Import and return :attr:`collection` (a function given directly
        is returned as it is).

        Raises
        ------
        ValueError
            Naming ``collection`` when the method has none.
        """
        if self.collection is None:
            raise ValueError(f"collection: method {self.name!r} has no collection "
                             f"solve.")
        return _resolve(self.collection)


@dataclass(frozen=True)
class Formulation:
    """One formulation of one paper (module docstring).

    Parameters
    ----------
    name : str
        The formulation's one name (package, collection family, docs,
        ``problems/``, ``reference/``).
    paper : str
        Authors, title, venue.
    equations : str
    estimators : tuple of str or class
        Names in :mod:`cvxmetric`: the tuple / pair / bag learner first,
        then the supervised one.  A formulation added with :func:`register`
        may give the classes themselves (then with ``suite=False``).
    data : str or class
        ``"module:Class"`` of its canonical data (or, for a formulation
        added with :func:`register`, the class itself).
    exact : str, callable or None
        ``"module:function"`` of its certified exact path (or the function).
    declared : str, callable or None
        ``"module:function"`` returning its
        :class:`~cvxmetric.model.DeclaredProblem` (the problem as printed),
        or the function.
    methods : tuple of Method
        Each method's reference listed before it.
    options_estimator : str or None
        The estimator whose ``_parameter_constraints`` the command line's
        ``solve`` options obey.
    refusal : tuple or None
        ``(error, {method: partner})``: methods whose certified answer may
        be a refusal -- ``error`` raised because the problem has no solution
        to return -- judged correct when the partner method refuses too.
    suite : bool
        Whether the real-data conformance suite runs it.
    suite_data : dict or None
        ``{estimator name: data(X, y, seed, n_tuples)}`` with ``data``
        returning ``(constructor kwargs, fit args, n_constraints, fit
        kwargs)``: how the conformance suite gives each of
        :attr:`estimators` the constraints a user would generate from a
        labelled dataset (``n_constraints`` is reported; ``None`` when
        known only after the fit).  Required when :attr:`suite` is true.
    collection : str or None
        The module that registers its family of ``problems/`` instances
        (:func:`cvxmetric.collection.register_family`), imported by the
        collection on first use.
    warm_start : str, callable or None
        ``"module:function"`` (or the function) ``warm_start(data) ->
        SolverResult``: the fast solve whose point the exact path takes as
        its starting guess (a margin set, a face) when it wants one.  The
        exact path never imports a fast solver; :meth:`solve_exact` hands
        it this function as its ``warm_start`` argument.
    bound_polish : str, callable or None
        ``"module:function"`` (or the function) ``bound_polish(data, x) ->
        (bound, iterations)``: a short solve that sharpens the dual bound
        at the exact path's point ``x`` (a traced ``bound`` stage, run when
        the plain bound leaves a gap); handed to the exact path as its
        ``bound_polish`` argument.
    """

    name: str
    paper: str
    equations: str
    estimators: tuple
    data: str
    exact: str = None
    declared: str = None
    methods: tuple = ()
    options_estimator: str = None
    refusal: tuple = None
    suite: bool = True
    collection: str = None
    suite_data: object = None
    warm_start: object = None
    bound_polish: object = None
    _by_name: dict = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self):
        names = [m.name for m in self.methods]
        if len(set(names)) != len(names):
            raise ValueError(f"methods: repeated names in {self.name!r}: {names}.")
        for i, m in enumerate(self.methods):
            # the yardstick runs first: a reference is listed before its method
            if m.reference is not None and m.reference not in names[:i]:
                raise ValueError(f"methods: {self.name}/{m.name} refers to "
                                 f"{m.reference!r}, not a method of {self.name!r} "
                                 f"listed before it.")
        if self.suite:
            names = [_estimator_name(e) for e in self.estimators]
            if set(self.suite_data or ()) != set(names):
                raise ValueError(f"suite_data: {self.name!r} is in the conformance "
                                 f"suite and needs the data of each of its "
                                 f"estimators {names}.")
            object.__setattr__(self, "suite_data",
                               MappingProxyType(dict(self.suite_data)))
        object.__setattr__(self, "estimators", tuple(self.estimators))
        object.__setattr__(self, "methods", tuple(self.methods))
        object.__setattr__(self, "_by_name", {m.name: m for m in self.methods})

    def method(self, name):
        """The method called ``name`` (``ValueError`` naming it otherwise)."""
        try:
            return self._by_name[name]
        except KeyError:
            raise ValueError(f"method: unknown {name!r} for {self.name!r}; expected "
                             f"one of {list(self._by_name)}.") from None

    def estimator(self, name):
        """The estimator class called ``name`` among :attr:`estimators` (an
        entry is a name in :mod:`cvxmetric` or the class itself)."""
        for entry in self.estimators:
            if _estimator_name(entry) == name:
                return getattr(import_module("cvxmetric"), entry) \
                    if isinstance(entry, str) else entry
        raise ValueError(f"estimator: {name!r} is not an estimator of {self.name!r}; "
                         f"expected one of "
                         f"{[_estimator_name(e) for e in self.estimators]}.")

    def load(self, what):
        """Import and return ``data``, ``exact``, ``declared``,
        ``warm_start`` or ``bound_polish``.

        A ``"module:attr"`` string is imported; an object (a class or a
        function given directly, as a formulation defined in a script does)
        is returned as it is.
        """
        if what not in _LOADABLE:
            raise ValueError(f"what: expected one of {_LOADABLE}, got {what!r}.")
        target = getattr(self, what)
        if target is None:
            raise ValueError(f"{what}: {self.name!r} has none.")
        return _resolve(target)

    def solve_exact(self, data, **options):
        """The certified exact path, given what it takes from its caller.

        The exact path (:attr:`exact`) is called with ``options`` and, where
        the formulation declares them, its :attr:`warm_start` and
        :attr:`bound_polish` functions (unless ``options`` gives them): the
        estimators and the problem collection solve through here, so that
        the exact path itself never imports a fast solver.

        Parameters
        ----------
        data
            An instance of the formulation's data class.
        **options
            Keyword arguments of the exact path.

        Returns
        -------
        SolverResult
        """
        for what in ("warm_start", "bound_polish"):
            if getattr(self, what) is not None and what not in options:
                options[what] = self.load(what)
        return self.load("exact")(data, **options)


def _resolve(target):
    """A ``"module:attr"`` string imported, or an object returned as it is."""
    if not isinstance(target, str):
        return target
    module, _, attr = target.partition(":")
    return getattr(import_module(module), attr)


#: What :meth:`Formulation.load` imports.
_LOADABLE = ("data", "exact", "declared", "warm_start", "bound_polish")


# ---------------------------------------------------------------------------
# Per-case parameters of the real-data suite (functions of the data)
# ---------------------------------------------------------------------------


def _half_the_samples(X, args, seed):
    """SLR Algorithm 2's sketch: half the samples."""
    return max(1, X.shape[0] // 2)


def _full_rank(X, args, seed):
    """SLR Algorithm 3 at full rank (no sketch)."""
    return X.shape[1]


def _smallest_view(X, args, seed):
    """OMDML Algorithm 2's rank: the smallest view's dimension."""
    return min(v.shape[1] for v in args[0])


def _seed(X, args, seed):
    return seed


# ---------------------------------------------------------------------------
# The conformance suite's data per formulation (Formulation.suite_data):
# the constraints a user would generate from a labelled dataset
# ---------------------------------------------------------------------------


def _estimator_name(estimator):
    """The name of an estimator entry: a name in :mod:`cvxmetric`, or a class."""
    return estimator if isinstance(estimator, str) else estimator.__name__


def _labelled(n_constraints):
    """``suite_data`` of a supervised learner: ``fit(X, y)`` with its own
    constraint sample (``random_state``), reporting ``n_constraints(X, y)``."""

    def data(X, y, seed, n_tuples):
        return {"random_state": seed}, (X, y), n_constraints(X, y), {}

    return data


def _impostor_triplets(X, y):
    """LMNN's triplet count at k = 3: every point's targets (at most 3 of its
    class) times the points of other classes."""
    _, codes, counts = np.unique(y, return_inverse=True, return_counts=True)
    per = counts[codes]
    return int(np.sum(np.minimum(3, per - 1) * (len(y) - per)))


def _documented_default(X, y):
    """The supervised tuple / pair learners' documented default sample."""
    from ._base import default_n_constraints

    return default_n_constraints(X.shape[0])


def _metric_learn_pairs(y):
    """metric-learn's default number of labelled pairs, ``20 C^2``."""
    return 20 * np.unique(y).size ** 2


def _class_chunklets(X, y, seed, n_tuples):
    # RCA from chunklets: each class one chunklet (the labels' codes)
    _, codes = np.unique(y, return_inverse=True)
    return {}, (X, codes), int(np.unique(codes).size), {}


def _rca_chunklets(X, y):
    """RCA_Supervised's chunklets at metric-learn's defaults: 100 of 2
    samples, or as many as the classes allow."""
    _, counts = np.unique(y, return_counts=True)
    return min(100, int(np.sum(counts // 2)))


def _quadruplets(X, y, seed, n_tuples):
    from .constraints import quadruplets_from_labels

    q = quadruplets_from_labels(y, n_tuples, random_state=seed)
    return {"preprocessor": X}, (q,), len(q), {}


def _quadruplets_and_pairs(X, y, seed, n_tuples):
    # quadruplets and metric-learn's 20 C^2 labelled pairs (the threshold b)
    from .constraints import pairs_from_labels, quadruplets_from_labels

    q = quadruplets_from_labels(y, n_tuples, random_state=seed)
    p, lab = pairs_from_labels(y, _metric_learn_pairs(y), random_state=seed)
    return ({"preprocessor": X}, (q,), len(q) + len(p),
            {"pairs": p, "pair_labels": lab})


def _triplets(X, y, seed, n_tuples):
    from .constraints import triplets_from_labels

    t = triplets_from_labels(y, n_tuples, random_state=seed)
    return {"preprocessor": X}, (t,), len(t), {}


def _knn_triplet_count(X, y):
    """SCML_Supervised's triplet count at k_genuine = 3, k_impostor = 10."""
    _, codes, counts = np.unique(y, return_inverse=True, return_counts=True)
    per = counts[codes]
    return int(np.sum(np.minimum(3, per - 1) * np.minimum(10, len(y) - per)))


def _scml_triplets(X, y, seed, n_tuples):
    # SCML's triplets as SCML_Supervised forms them, given as indices
    from .scml import knn_triplets

    t = knn_triplets(X, y, 3, 10)
    return {"preprocessor": X, "random_state": seed}, (t,), len(t), {}


def _pairs(X, y, seed, n_tuples):
    # metric-learn's default number of constraints
    from .constraints import pairs_from_labels

    p, lab = pairs_from_labels(y, _metric_learn_pairs(y), random_state=seed)
    return {"preprocessor": X}, (p, lab), len(p), {}


def _views(X, y, seed, n_tuples):
    # the dataset's features in (at most) three contiguous groups: the views
    # of a multi-modal learner, scaled to [0, 1] per feature as the paper
    # does (Sec. 5.3: its constant learning rates assume it); n_tuples
    # triplets from the labels
    from .constraints import triplets_from_labels
    from .experiments.omdml.views import scale_views

    m = min(3, X.shape[1] // 2)
    (Xs,) = scale_views([X])
    views = [np.ascontiguousarray(v) for v in np.array_split(Xs, m, axis=1)]
    t = triplets_from_labels(y, n_tuples, random_state=seed)
    return {}, (views, t), len(t), {}


#: The constraints the conformance suite can give a tuple / pair learner,
#: for the ``suite_data`` of a formulation defined outside the catalogue:
#: ``"pairs"`` (metric-learn's ``20 C^2`` labelled pairs), ``"triplets"``
#: and ``"quadruplets"`` (``n_tuples`` of them), each with the data as the
#: learner's ``preprocessor``.
SUITE_INPUTS = MappingProxyType({"pairs": _pairs, "triplets": _triplets,
                                 "quadruplets": _quadruplets})


def catalogued(name):
    """Whether the formulation called ``name`` is one of the package's own
    (not added by :func:`register`): a fresh process knows it too."""
    return name in _BY_NAME


def _distinct_pairs(X, y):
    """Every pair of samples but those of identical samples (which LDML's
    exact and fast paths drop)."""
    n = X.shape[0]
    _, k = np.unique(X, axis=0, return_counts=True)
    return n * (n - 1) // 2 - int(np.sum(k * (k - 1) // 2))


_QWISE = ("Law, Thome, Cord: Learning a distance metric from relative comparisons "
          "between quadruplets of images (IJCV 2016)")
_RANK = ("Lee, Jin, Jain: Rank-based distance metric learning: an application to "
         "image retrieval (CVPR 2008)")
_LDML = ("Guillaumin, Verbeek, Schmid: Multiple instance metric learning from "
         "automatically labeled bags of faces (ECCV 2010)")
_EXACT = Method("exact", {"solver": "exact"}, "exact")
# the exact path that takes its formulation's warm start from the caller
_EXACT_WARM = Method("exact", {"solver": "exact"}, "exact", capabilities={"warm_start"})

_REGISTRY = (
    Formulation(
        "qwise", _QWISE, "Eq. 8, Eq. 11", ("Qwise", "QwiseSupervised"),
        data="cvxmetric.qwise._problem:QwiseData",
        collection="cvxmetric.qwise._collection",
        exact="cvxmetric.qwise.exact:solve_exact",
        warm_start="cvxmetric.qwise.fast:warm_start",
        suite_data={"Qwise": _quadruplets,
                    "QwiseSupervised": _labelled(_documented_default)},
        declared="cvxmetric.qwise.exact:declared_problem",
        methods=(
            _EXACT_WARM,
            Method("fast", {"solver": "fast"}, "fast", "exact", "fast",
                   collection="cvxmetric.qwise._collection:solve_dual"),
            # Algorithm 1 at its default budget: a subgradient method,
            # reported (TOLERANCES["subgradient"] is what it reaches on the
            # collection; on these data even Polyak's step with the known
            # optimum stays above it after 20 000 iterations)
            Method("subgradient", {"solver": "subgradient"}, "paper", "exact",
                   collection="cvxmetric.qwise._collection:solve_subgradient"),
        ),
        options_estimator="Qwise"),
    Formulation(
        "qwise_vector", _QWISE, "Eq. 14, Eq. 27-30",
        ("QwiseVector", "QwiseVectorSupervised"),
        data="cvxmetric.qwise_vector._problem:QwiseVectorData",
        collection="cvxmetric.qwise_vector._collection",
        exact="cvxmetric.qwise_vector.exact:solve_exact",
        suite_data={"QwiseVector": _quadruplets_and_pairs,
                    "QwiseVectorSupervised": _labelled(_documented_default)},
        declared="cvxmetric.qwise_vector.exact:declared_problem",
        methods=(
            # Eq. 14 (the estimators' default loss, the hinge) and the
            # smoothed Eq. 27-30, both certified; Algorithm 2 against the
            # smoothed optimum
            _EXACT,
            Method("exact-huber", {"solver": "exact", "loss": "huber"}, "exact"),
            Method("newton", {"solver": "newton", "loss": "huber"}, "fast",
                   "exact-huber", "newton",
                   collection="cvxmetric.qwise_vector._collection:solve_vector_newton"),
        )),
    Formulation(
        "qwise_structural", _QWISE, "Eq. 16",
        ("QwiseStructural", "QwiseStructuralSupervised"),
        data="cvxmetric.qwise_structural._problem:StructuralData",
        collection="cvxmetric.qwise_structural._collection",
        exact="cvxmetric.qwise_structural.exact:solve_exact",
        suite_data={"QwiseStructural": _quadruplets,
                    "QwiseStructuralSupervised": _labelled(_documented_default)},
        declared="cvxmetric.qwise_structural.exact:declared_problem",
        methods=(
            # Eq. 16 (AUC loss) in its closed hinge-sum form, exactly and by
            # the Qwise dual solver, and the paper's 1-slack cutting-plane
            # method (Sec. 4.4): certified when it stops, but slower than
            # the closed form's one CVXPY solve here, so its gap is reported
            _EXACT,
            Method("fast", {"solver": "fast"}, "fast", "exact", "fast",
                   collection="cvxmetric.qwise_structural.fast:solve_structural_fast"),
            Method("structural", {"solver": "cutting_plane"}, "paper", "exact",
                   collection="cvxmetric.qwise_structural._collection:solve_cutting_plane"),
        )),
    Formulation(
        "mmc", _QWISE + ", stating Xing, Ng, Jordan, Russell: Distance metric "
        "learning, with application to clustering with side-information "
        "(NIPS 2002)", "Eq. 2", ("MMC", "MMCSupervised"),
        data="cvxmetric.mmc._problem:MMCData",
        collection="cvxmetric.mmc._collection",
        exact="cvxmetric.mmc.exact:solve_exact",
        # the face reduction's fast solution and the certificate's bound
        # polish, handed to the exact path (which never imports mmc.fast)
        warm_start="cvxmetric.mmc.fast:warm_start",
        bound_polish="cvxmetric.mmc.fast:bound_polish",
        suite_data={"MMC": _pairs,
                    "MMCSupervised": _labelled(lambda X, y: _metric_learn_pairs(y))},
        declared="cvxmetric.mmc.exact:declared_problem",
        methods=(
            _EXACT_WARM,
            Method("exact-diag", {"solver": "exact", "diagonal": True}, "exact"),
            Method("fast", {"solver": "fast"}, "fast", "exact", "fast",
                   collection="cvxmetric.mmc._collection:solve_projected_gradient"),
            Method("newton", {"solver": "fast", "diagonal": True}, "fast",
                   "exact-diag", "newton",
                   collection="cvxmetric.mmc._collection:solve_newton"),
        ),
        options_estimator="MMC"),
    Formulation(
        "constraintdml", _RANK + ", Sec. 3.1 (the constraint-based baseline)",
        "Eq. 1, 4, 6, 10", ("ConstraintDML", "ConstraintDMLSupervised"),
        data="cvxmetric.constraintdml._problem:ConstraintData",
        collection="cvxmetric.constraintdml._collection",
        exact="cvxmetric.constraintdml._problem:solve_constraint_exact",
        suite_data={"ConstraintDML": _pairs,
                    "ConstraintDMLSupervised": _labelled(_documented_default)},
        declared="cvxmetric.constraintdml._problem:declared_problem",
        methods=(_EXACT, Method("fast", {"solver": "fast"}, "fast", "exact", "fast",
                                collection="cvxmetric.constraintdml._collection:"
                                           "solve_dual")),
        options_estimator="ConstraintDML"),
    Formulation(
        "rankdml", _RANK, "Eq. 7, 9", ("RankDML", "RankDMLSupervised"),
        data="cvxmetric.rankdml._problem:RankData",
        collection="cvxmetric.rankdml._collection",
        exact="cvxmetric.rankdml.exact:solve_exact",
        warm_start="cvxmetric.rankdml.fast:warm_start",
        # RankDMLSupervised's triplets are known after the fit (n_triplets_)
        suite_data={"RankDML": _triplets,
                    "RankDMLSupervised": _labelled(lambda X, y: None)},
        declared="cvxmetric.rankdml.exact:declared_problem",
        methods=(
            _EXACT_WARM,
            Method("fast", {"solver": "fast"}, "fast", "exact", "fast",
                   collection="cvxmetric.rankdml.fast:solve_fast"),
        ),
        options_estimator="RankDML"),
    Formulation(
        "slr", "Qian, Baytas, Jin, Jain, Zhu: Similarity learning via adaptive "
        "regression (2015)", "Eq. 4", ("SLR",),
        data="cvxmetric.slr._problem:SLRData",
        collection="cvxmetric.slr._collection",
        exact="cvxmetric.slr.exact:solve_exact",
        warm_start="cvxmetric.slr.fast:warm_start",
        # every ordered pair of samples
        suite_data={"SLR": _labelled(lambda X, y: X.shape[0] ** 2)},
        declared="cvxmetric.slr.estimator:declared_problem",
        methods=(
            _EXACT_WARM,
            Method("newton", {"solver": "newton"}, "fast", "exact", "newton",
                   collection="cvxmetric.slr._collection:solve_newton"),
            # Algorithm 1 with the paper's T = 10 (the estimator's default);
            # the collection runs it to convergence
            Method("adaptive", {"solver": "adaptive"}, "paper", "exact",
                   collection="cvxmetric.slr._collection:solve_adaptive"),
            # Algorithm 2 solves a sketched problem: its gap is reported only
            Method("randomized", {"solver": "randomized",
                                  "n_sketch": _half_the_samples}, "paper", "exact"),
            # Algorithm 3 at full rank without a sketch, T = 10
            Method("lowrank", {"solver": "lowrank", "rank": _full_rank}, "paper",
                   "exact"),
        ),
        options_estimator="SLR"),
    Formulation(
        "omdml", "Wu, Hoi, Zhao, Miao, Liu: Online multi-modal distance metric "
        "learning (TKDE 2016)", "Eq. 3 at a fixed combination", ("OMDML",),
        data="cvxmetric.omdml._problem:OMDMLData",
        collection="cvxmetric.omdml._collection",
        exact="cvxmetric.omdml.exact:solve_exact",
        suite_data={"OMDML": _views},
        declared="cvxmetric.omdml.exact:declared_problem",
        methods=(
            # Eq. 3 at uniform theta (certified), and the two online
            # algorithms, whose Eq. 3 value at their own theta is reported
            # against it (an online learner does not claim the optimum)
            _EXACT,
            Method("online", {"solver": "online"}, "paper", "exact",
                   capabilities={"partial_fit"}),
            # Algorithm 2 at the smallest view's dimension (full rank there)
            Method("lowrank", {"solver": "online", "rank": _smallest_view,
                               "random_state": _seed}, "paper", "exact",
                   capabilities={"partial_fit"}),
        )),
    Formulation(
        "ldml", _LDML, "Eq. 2-3", ("LDML", "LDMLSupervised"),
        data="cvxmetric.ldml.exact:LDMLData",
        collection="cvxmetric.ldml._collection",
        exact="cvxmetric.ldml.exact:solve_exact",
        suite_data={"LDML": _pairs, "LDMLSupervised": _labelled(_distinct_pairs)},
        declared="cvxmetric.ldml.exact:declared_problem",
        methods=(
            # Eq. 2 as printed (lam = 0, the paper's maximum likelihood; the
            # estimators' default is lam="auto"): on pairs a metric
            # separates the maximum is not attained and the certified answer
            # is NotAttainedError (refusal); otherwise a certified optimum.
            # The low-rank gradient method of Eq. 4-6 at full rank claims
            # the certified convex optimum: converged and agreeing are
            # judged, its time is not (the paper's algorithm, not a fast path)
            Method("exact", {"solver": "exact", "lam": 0.0}, "exact"),
            # (the collection's instances carry their own lam: these two
            # are the ones it runs)
            Method("fast", {"solver": "fast", "lam": 0.0}, "fast", "exact", "fast",
                   capabilities={"max_time"},
                   collection="cvxmetric.ldml.fast:solve_fast"),
            Method("lowrank", {"solver": "lowrank", "lam": 0.0}, "paper-optimal",
                   "exact", "lowrank", capabilities={"max_time"},
                   collection="cvxmetric.ldml._collection:solve_lowrank"),
            # ... and with the trace regulariser lam = 0.1, which makes every
            # dataset's optimum attained: a certified optimum everywhere
            Method("exact-lam0.1", {"solver": "exact", "lam": 0.1}, "exact"),
            Method("fast-lam0.1", {"solver": "fast", "lam": 0.1}, "fast",
                   "exact-lam0.1", "fast", capabilities={"max_time"}),
            Method("lowrank-lam0.1", {"solver": "lowrank", "lam": 0.1},
                   "paper-optimal", "exact-lam0.1", "lowrank",
                   capabilities={"max_time"}),
        ),
        options_estimator="LDML",
        refusal=("NotAttainedError", {"exact": "fast", "fast": "exact",
                                      "lowrank": "exact"})),
    Formulation(
        "lmnn", "Weinberger, Saul: Distance metric learning for large margin "
        "nearest neighbor classification (JMLR 2009)", "Eq. 13-14", ("LMNN",),
        data="cvxmetric.lmnn._problem:LMNNData",
        collection="cvxmetric.lmnn._collection",
        exact="cvxmetric.lmnn.exact:solve_exact",
        # Eq. 14 is solved as Qwise's Eq. 8, whose exact path starts its
        # margin-set reduction from Qwise's fast solve
        warm_start="cvxmetric.qwise.fast:warm_start",
        declared="cvxmetric.lmnn.exact:declared_problem",
        methods=(
            _EXACT_WARM,
            # a working set of impostors solved by Qwise's dual solver,
            # certified over every triplet; and the paper's projected
            # subgradient method (Sec. 5), reported
            Method("fast", {"solver": "fast"}, "fast", "exact", "fast",
                   capabilities={"max_time"},
                   collection="cvxmetric.lmnn.fast:solve_fast"),
            Method("subgradient", {"solver": "subgradient"}, "paper", "exact",
                   capabilities={"max_time"},
                   collection="cvxmetric.lmnn.fast:solve_subgradient"),
        ),
        options_estimator="LMNN",
        # beyond EXACT_MAX_TRIPLETS the exact row is the documented size
        # refusal and the fast rows are judged by their own certificates
        suite_data={"LMNN": _labelled(_impostor_triplets)}),
    Formulation(
        "rca", "Bar-Hillel, Hertz, Shental, Weinshall: Learning a Mahalanobis "
        "metric from equivalence constraints (JMLR 2005)",
        "Sec. 4.2 (inner-chunklet distances subject to |M| >= 1)",
        ("RCA", "RCA_Supervised"),
        data="cvxmetric.rca._problem:RCAData",
        collection="cvxmetric.rca._collection",
        exact="cvxmetric.rca.exact:solve_exact",
        declared="cvxmetric.rca.exact:declared_problem",
        methods=(
            # the CVXPY problem (cp.log_det) and its closed form |C|^{1/d}
            # C^{-1}, both certified by the closed-form dual bound
            _EXACT,
            Method("fast", {"solver": "fast"}, "fast", "exact", "fast",
                   collection="cvxmetric.rca.fast:solve_closed_form"),
        ),
        options_estimator="RCA",
        # RCA: the classes as chunklets; RCA_Supervised: metric-learn's
        # default draw (100 chunklets of 2, fewer where the classes allow fewer)
        suite_data={"RCA": _class_chunklets,
                    "RCA_Supervised": _labelled(_rca_chunklets)}),
    Formulation(
        "scml", "Shi, Bellet, Sha: Sparse compositional metric learning (AAAI 2014)",
        "the global formulation (Sec. 3)", ("SCML", "SCML_Supervised"),
        data="cvxmetric.scml._problem:SCMLData",
        collection="cvxmetric.scml._collection",
        exact="cvxmetric.scml.exact:solve_exact",
        declared="cvxmetric.scml.exact:declared_problem",
        methods=(
            _EXACT,
            # a working set of triplets solved by HiGHS's simplex, certified
            # over every triplet; and the paper's stochastic proximal method
            # as metric-learn runs it (10 000 steps of 10 triplets), whose
            # gap is reported, not judged: the collection does not run it
            # (measured 1.7e-2, 5.0e-3 and 0.24 above the references)
            Method("fast", {"solver": "fast"}, "fast", "exact", "fast",
                   capabilities={"max_time"},
                   collection="cvxmetric.scml.fast:solve_fast"),
            Method("stochastic", {"solver": "stochastic", "random_state": _seed},
                   "paper", "exact", capabilities={"max_time"}),
        ),
        options_estimator="SCML",
        # metric-learn's triplets (k_genuine = 3, k_impostor = 10) and its
        # bases; beyond EXACT_MAX_ENTRIES the exact row is the size refusal
        suite_data={"SCML": _scml_triplets,
                    "SCML_Supervised": _labelled(_knn_triplet_count)}),
    Formulation(
        "sdml", "Qi, Tang, Zha, Chua, Zhang: An efficient sparse metric learning in "
        "high-dimensional space via l1-penalized log-determinant regularization "
        "(ICML 2009)", "the l1-penalized LogDet problem", ("SDML", "SDML_Supervised"),
        data="cvxmetric.sdml._problem:SDMLData",
        collection="cvxmetric.sdml._collection",
        exact="cvxmetric.sdml.exact:solve_exact",
        declared="cvxmetric.sdml.exact:declared_problem",
        methods=(
            # metric-learn's defaults (balance_param = 0.5): on standardised
            # data the dissimilar pairs make P's diagonal negative and the
            # objective unbounded below -- the certified answer is
            # UnboundedError, from both paths (refusal)
            _EXACT,
            # scikit-learn's graphical lasso (the paper's block coordinate
            # descent), certified by the graphical lasso's dual bound
            Method("fast", {"solver": "fast"}, "fast", "exact", "fast",
                   collection="cvxmetric.sdml.fast:solve_fast"),
            # ... and at balance_param = 1e-5 (P positive definite on the
            # suite's data): a certified optimum
            Method("exact-b1e-5", {"solver": "exact", "balance_param": 1e-5}, "exact"),
            Method("fast-b1e-5", {"solver": "fast", "balance_param": 1e-5}, "fast",
                   "exact-b1e-5", "fast"),
        ),
        options_estimator="SDML",
        refusal=("UnboundedError", {"exact": "fast", "fast": "exact"}),
        suite_data={"SDML": _pairs,
                    "SDML_Supervised": _labelled(lambda X, y: _metric_learn_pairs(y))}),
    Formulation(
        "gmml", "Zadeh, Hosseini, Sra: Geometric mean metric learning (ICML 2016)",
        "Eq. 13 (t = 1/2); the weighted mean", ("GMML", "GMMLSupervised"),
        data="cvxmetric.gmml._problem:GMMLData",
        collection="cvxmetric.gmml._collection",
        exact="cvxmetric.gmml.exact:solve_exact",
        declared="cvxmetric.gmml.exact:declared_problem",
        methods=(
            # Eq. 13 by CVXPY (matrix_frac), and the paper's closed form
            # A^{-1} # B, certified by the closed-form lower bound
            _EXACT,
            Method("fast", {"solver": "fast"}, "fast", "exact", "fast",
                   collection="cvxmetric.gmml.fast:solve_fast"),
        ),
        options_estimator="GMML",
        suite_data={"GMML": _pairs,
                    "GMMLSupervised": _labelled(lambda X, y: _metric_learn_pairs(y))}),
    Formulation(
        "itml", "Davis, Kulis, Jain, Sra, Dhillon: Information-theoretic metric "
        "learning (ICML 2007)", "Sec. 4 (Eq. 4.1)", ("ITML", "ITML_Supervised"),
        data="cvxmetric.itml._problem:ITMLData",
        collection="cvxmetric.itml._collection",
        exact="cvxmetric.itml.exact:solve_exact",
        declared="cvxmetric.itml.exact:declared_problem",
        methods=(
            _EXACT,
            # projected Newton on the dual (the paper's lambda), certified;
            # and Algorithm 1 (cyclic Bregman projections) at metric-learn's
            # defaults (max_iter=1000, tol=1e-3 on lambda's change), reported
            Method("fast", {"solver": "fast"}, "fast", "exact", "fast",
                   collection="cvxmetric.itml.fast:solve_fast"),
            Method("bregman", {"solver": "bregman"}, "paper", "exact",
                   collection="cvxmetric.itml.fast:solve_bregman"),
        ),
        options_estimator="ITML",
        # metric-learn's 20 C^2 pairs of each kind
        suite_data={"ITML": _pairs,
                    "ITML_Supervised": _labelled(lambda X, y: 2 * _metric_learn_pairs(y))}),
    Formulation(
        "covariance", "Mahalanobis: On the generalized distance in statistics (1936)",
        "closed form", ("Covariance",),
        data="cvxmetric.covariance.estimator:CovarianceData",
        # metric-learn's baseline: the inverse covariance, the minimiser of
        # tr(M Sigma) - log det M in closed form; nothing is learned from
        # labels, so there is no solver to certify and no suite row
        methods=(),
        suite=False),
    Formulation(
        "mildml", _LDML, "Eq. 8 (MildML); Eq. 9-11, then Eq. 2 (LDML*)", ("MildML", "LDMLStar"),
        data="cvxmetric.ldml._mildml:BagPairs",
        # MildML's objective is not convex (the instance pair of a bag
        # pair is selected by the metric): no exact path, no certificate
        methods=(),
        suite=False),
)

_BY_NAME = MappingProxyType({f.name: f for f in _REGISTRY})


#: Formulations added by :func:`register`, in registration order.
_ADDED = {}

#: A formulation's name: also a folder of ``problems/`` and ``reference/``.
_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


def formulations():
    """Every registered formulation: the catalogue's, in its order, then
    those added by :func:`register`, in the order they were added.

    Returns
    -------
    tuple of Formulation
    """
    return _REGISTRY + tuple(_ADDED.values())


def formulation(name):
    """The formulation called ``name``.

    Raises
    ------
    ValueError
        Naming ``name`` when it is not registered.
    """
    try:
        return _BY_NAME[name]
    except (KeyError, TypeError):
        pass
    try:
        return _ADDED[name]
    except (KeyError, TypeError):
        raise ValueError(f"name: unknown formulation {name!r}; expected one of "
                         f"{[f.name for f in formulations()]}.") from None


def _check_addable(formulation):
    """ValueError naming ``formulation`` when its name is not a valid one
    (:func:`register`)."""
    name = formulation.name
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError(f"formulation: invalid name {name!r}; expected lowercase "
                         f"letters, digits and '_', starting with a letter.")


def register(formulation):
    """Add a formulation to the registry (one defined outside the catalogue).

    Every layer that reads the registry by name then finds it:
    :func:`formulation`, :func:`formulations` (after the catalogue's), and
    through them its ``data``, ``exact`` and ``declared`` entries, which may
    be the objects themselves (:meth:`Formulation.load`).

    Parameters
    ----------
    formulation : Formulation
        Its ``name`` (lowercase letters, digits and ``_``, starting with a
        letter: it also names its folder of the problem collection) must
        not be taken.  Its estimators may be classes; the real-data suite
        (:mod:`cvxmetric.bench.conformance`) runs its cases in this process
        (a fresh process would not know it).

    Returns
    -------
    Formulation
        ``formulation`` itself.

    Raises
    ------
    TypeError
        Naming ``formulation`` when it is not a :class:`Formulation`.
    ValueError
        Naming ``formulation`` when its name is not valid or is taken (by
        the catalogue or by an earlier :func:`register`: :func:`unregister`
        it first).
    """
    if not isinstance(formulation, Formulation):
        raise TypeError(f"formulation: expected a Formulation, got "
                        f"{type(formulation).__name__}.")
    _check_addable(formulation)
    name = formulation.name
    if name in _BY_NAME or name in _ADDED:
        where = "the catalogue's" if name in _BY_NAME else "a registered"
        raise ValueError(f"formulation: the name {name!r} is taken by {where} "
                         f"formulation; choose another name"
                         + ("." if name in _BY_NAME else " or unregister it first."))
    _ADDED[name] = formulation
    return formulation


def unregister(name):
    """Remove a formulation added by :func:`register`.

    The problem collection's family of the same name, when one was
    registered (:func:`cvxmetric.collection.register_family`), is removed
    with it, so that nothing of the formulation is left behind.

    Parameters
    ----------
    name : str

    Returns
    -------
    Formulation
        The formulation removed.

    Raises
    ------
    ValueError
        Naming ``name`` when it is one of the catalogue's formulations
        (they cannot be removed) or not registered.
    """
    if isinstance(name, str) and name in _BY_NAME:
        raise ValueError(f"name: {name!r} is one of the catalogue's formulations; "
                         f"only those added by register() can be removed.")
    try:
        removed = _ADDED.pop(name)
    except (KeyError, TypeError):
        raise ValueError(f"name: no formulation {name!r} was added by register(); "
                         f"added: {list(_ADDED)}.") from None
    collection = sys.modules.get("cvxmetric.collection")
    if collection is not None:
        # the collection is read, never imported, from here
        for table in (collection.FAMILIES, collection.METHODS):
            table.pop(name, None)
    return removed


@contextmanager
def registered(formulation):
    """:func:`register` ``formulation`` for the length of a ``with`` block,
    then :func:`unregister` it (also when the block raises).

    Yields
    ------
    Formulation
    """
    register(formulation)
    try:
        yield formulation
    finally:
        if _ADDED.get(formulation.name) is formulation:
            unregister(formulation.name)

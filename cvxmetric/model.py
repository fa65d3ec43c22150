"""The declared CVXPY model of every formulation: one contract for all families.

Every convex formulation (``qwise``, ``qwise_vector``, ``qwise_structural``,
``mmc``, ``constraintdml``, ``rankdml``, ``slr``, ``omdml``, ``ldml``, ``lmnn``: the
registry's entries with a ``declared`` path, :mod:`cvxmetric.formulations`)
hands out its problem *exactly as the paper prints it, in the user's units*,
as a :class:`DeclaredProblem`; MildML's Eq. 8 is not convex and has none.
Each estimator of those formulations has the method
``declared_problem(*fit_args, **fit_kwargs)``: it takes exactly what its
``fit`` takes, validates it as ``fit`` does (a supervised learner draws the
same constraint sample as ``fit`` with the same ``random_state``), and
returns the declared problem *without solving it*::

    dp = Qwise(preprocessor=X).declared_problem(quadruplets, delta=1.0)
    dp.add_constraint("trace", cp.trace(dp.M) <= 2.0)   # optional
    dp.solve(solver="CLARABEL")                          # any installed solver
    M = dp.matrix()                                      # the metric, user units
    dp.objective(M), dp.certificate(M)                   # the family's own code
    dp.metric(M).transform(X)                            # a fitted metric

The contract
------------
``family`` : str
    The formulation's name in the registry (``"qwise"``, ``"mmc"``, ...).
``paper``, ``equation`` : str
    The paper (authors, title, year) and which of its equations is declared
    (e.g. ``"Eq. 11"``).
``problem`` : cvxpy.Problem
    The declared problem.  No scaling, no reduction: its optimal value is the
    paper's objective in the user's units, the value the family's exact
    solver reports as ``objective_``.
``variables`` : dict of cvxpy.Variable
    Every variable, under the paper's names.  The metric variable is
    ``variables[metric_key]`` (also :attr:`DeclaredProblem.variable`):
    ``"M"`` for a full matrix (``"A"`` in the constraint-based baseline,
    whose paper calls it so), ``"w"`` / ``"a"`` for the diagonal of a
    diagonal metric.  :attr:`DeclaredProblem.M` is the metric as a (d, d)
    CVXPY expression in every case (``cp.diag(w)`` for a diagonal one), the
    handle to write added constraints and terms with.
``parameters`` : dict of cvxpy.Parameter
    The hyperparameters (e.g. ``C_q``, ``u``, ``l``; ``delta1``,
    ``delta2``; ``lam``).  The problem is DPP (``problem.is_dpp()``): a new
    value re-solves without recompiling.  Change them with
    :meth:`DeclaredProblem.set_parameters` (validated, ``ValueError`` naming
    the parameter) or directly through ``.value``; the family's objective and
    certificate follow the current values either way.
``constraints`` : dict of cvxpy.Constraint
    The declared constraints by name (``"psd"`` or ``"nonneg"`` for the cone
    of the metric; the family's own names for the rest), plus those added
    with :meth:`DeclaredProblem.add_constraint`.
``solve(solver=None, **kwargs)`` -> float
    With no argument, the package's certified path (Clarabel with tight
    tolerances, SCS as fallback, a point accepted only when the family's
    certificate passes: :meth:`DeclaredProblem.solve_certified`); with a
    solver name, ``problem.solve`` with that installed CVXPY solver
    (keyword arguments go to the solver), whose claims are then taken as
    they are.  Returns the optimal value; raises
    :class:`~cvxmetric.result.InfeasibleError`,
    :class:`~cvxmetric.result.UnboundedError`,
    :class:`~cvxmetric.result.CertificateError` or
    :class:`~cvxmetric.result.SolverError` instead of returning a point
    that is none.
``matrix()`` -> ndarray (d, d)
    The metric in the user's units from the metric variable's value
    (symmetrised; ``diag(w)`` for a diagonal metric; SLR's general matrix
    as it is).
``objective(M=None)`` -> float
    The family's objective at ``M`` (default :meth:`matrix`), recomputed
    in the paper's units by the family's own code -- the objective as
    printed, without terms added by :meth:`add_term`.
``certificate(M=None)`` -> Certificate
    The family's :class:`~cvxmetric.result.Certificate` of ``M`` for the
    declared problem (not for the user's additions), by the family's own
    certificate code.  Qwise, RankDML and the constraint-based baseline bound the
    optimum with dual multipliers: they are taken from the declared
    constraints of the last solve; before a solve there are none, the
    certificate then has ``dual_bound = -inf`` (it cannot pass) and a
    ``UserWarning`` says so (as it does for ``certificate()`` with no
    ``M`` and no solve: a certificate of no point).  MMC and SLR bound the optimum from the primal
    point alone.  It solves nothing: a bound sharpened by a short solve
    (MMC's bound polish) is a stage of the certified solve, and
    ``certificate()`` of the point that solve accepted is the one it judged.
``metric(M=None, preprocessor=None)``
    A fitted metric object: :class:`MahalanobisMetric` (``transform``,
    ``pair_distance``, ``pair_score``, ``get_metric``,
    ``get_mahalanobis_matrix``) for the Mahalanobis families, and
    :class:`BilinearMetric` (``pair_score``, ``pairwise_similarity``,
    ``get_bilinear_matrix``) for SLR, whose similarity ``x^T M y`` is
    bilinear, not a distance.

What the declared problem is not
--------------------------------
The families' exact solvers do not solve the declared problem itself when a
smaller or better-scaled one has the same optimum: Qwise's margin-set
reduction and scale-free twin, MMC's Jacobi-scaled and whitened model
(``MMCModel``, face-reduced on large data), SLR's Gram rewrite (``SLRModel``
in ``"symmetric"`` / ``"range"`` form, on ``X`` divided by a power of two)
and the constraint baseline's normalised units (``ConstraintDMLModel``).
Those models are the solvers' internals; their answers are certified on
the declared problem's objective, which is the one this module exposes.

Adding a family
---------------
A family subclasses :class:`DeclaredProblem` and implements
:meth:`DeclaredProblem._family_objective` and
:meth:`DeclaredProblem._family_certificate` (pure: no solver runs in it;
a bound sharpened by solving goes in :meth:`DeclaredProblem._family_sharpen`)
and, with hyperparameters, :meth:`DeclaredProblem._update_parameters`, then
builds it from its canonical data; its estimators return it from
``declared_problem``.  This module knows nothing of the estimators.
"""

import warnings

import cvxpy as cp
import numpy as np
from sklearn.base import BaseEstimator

from ._base import BilinearMixin, MahalanobisMixin
from ._certify import certify, conic_solve
from ._exact import SOLVERS, solve_certified
from ._settings import SYMMETRY_RTOL
from ._validation import check_finite
from .result import Certificate, InfeasibleError, SolverError, UnboundedError

__all__ = ["DeclaredProblem", "MahalanobisMetric", "BilinearMetric"]

_INFEASIBLE = (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE)
_UNBOUNDED = (cp.UNBOUNDED, cp.UNBOUNDED_INACCURATE)
_SOLVED = (cp.OPTIMAL, cp.OPTIMAL_INACCURATE)


class DeclaredProblem:
    """A family's problem as the paper prints it, in CVXPY (module docstring).

    Built by the families (their ``declared_problem`` functions and the
    estimators' ``declared_problem`` methods), not by hand.

    Parameters
    ----------
    family : str
    paper : str
    equation : str
    problem : cvxpy.Problem
    variables : dict of cvxpy.Variable
    parameters : dict of cvxpy.Parameter
    constraints : dict of cvxpy.Constraint
    metric_key : str
        Key of the metric variable in ``variables``.
    data : object
        The family's canonical data (``QwiseData``, ``MMCData``, ``SLRData``,
        ``ConstraintData``): its objective and certificate are the family's.
    kind : {"mahalanobis", "bilinear"}

    Attributes
    ----------
    family, paper, equation, problem, variables, parameters, constraints, \
metric_key, data, kind
        As given.
    declared_constraints : tuple of str
        Names of the constraints of the declaration (those of
        ``constraints`` not added by the user).
    """

    def __init__(self, *, family, paper, equation, problem, variables, parameters,
                 constraints, metric_key, data, kind="mahalanobis"):
        if metric_key not in variables:
            raise ValueError(f"metric_key: {metric_key!r} is not a key of variables.")
        if kind not in ("mahalanobis", "bilinear"):
            raise ValueError(f"kind: expected 'mahalanobis' or 'bilinear', got {kind!r}.")
        self.family = family
        self.paper = paper
        self.equation = equation
        self.problem = problem
        self.variables = dict(variables)
        self.parameters = dict(parameters)
        self.constraints = dict(constraints)
        self.metric_key = metric_key
        self.data = data
        self.kind = kind
        self.declared_constraints = tuple(constraints)
        self._modified = False

    def __repr__(self):
        var = self.variable
        return (f"DeclaredProblem(family={self.family!r}, equation={self.equation!r}, "
                f"{self.metric_key}: {var.shape}, parameters={sorted(self.parameters)}, "
                f"constraints={list(self.constraints)})")

    # -- the metric variable ---------------------------------------------------

    @property
    def variable(self):
        """The metric variable, ``variables[metric_key]``."""
        return self.variables[self.metric_key]

    @property
    def diagonal(self):
        """Whether the metric variable is the diagonal of ``M`` (a vector)."""
        return self.variable.ndim == 1

    @property
    def n_features(self):
        """The number of features ``d`` of the metric variable."""
        return int(self.variable.shape[0])

    @property
    def M(self):
        """The metric as a (d, d) CVXPY expression (``cp.diag(w)`` if diagonal)."""
        var = self.variable
        return cp.diag(var) if self.diagonal else var

    # -- changing the problem --------------------------------------------------

    def set_parameters(self, **values):
        """Set hyperparameters by name (validated as the family validates them).

        Parameters
        ----------
        **values
            New values of entries of :attr:`parameters`.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Naming the parameter: unknown name, or a value the family refuses;
            the problem is then unchanged.
        """
        for key in values:
            if key not in self.parameters:
                raise ValueError(
                    f"{key}: not a parameter of this problem; have "
                    f"{sorted(self.parameters)}.")
        if values:
            self._update_parameters(values)
            for key, val in values.items():
                self.parameters[key].value = val
        return self

    def add_constraint(self, name, constraint):
        """Add a named constraint to :attr:`problem` (a new ``cvxpy.Problem``
        over the same variables; the declared ones are kept).

        Parameters
        ----------
        name : str
            New key of :attr:`constraints`.
        constraint : cvxpy.Constraint
            E.g. ``dp.M[0, 0] <= 1`` or ``cp.trace(dp.M) <= 2``.

        Returns
        -------
        self
        """
        if not isinstance(name, str) or name in self.constraints:
            raise ValueError(f"name: expected a new constraint name, got {name!r} "
                             f"(have {list(self.constraints)}).")
        if not isinstance(constraint, cp.constraints.constraint.Constraint):
            raise ValueError(f"constraint: expected a cvxpy constraint, got "
                             f"{type(constraint).__name__}.")
        self.constraints[name] = constraint
        self.problem = cp.Problem(self.problem.objective, list(self.constraints.values()))
        self._modified = True
        return self

    def add_term(self, expression):
        """Add a term to the objective (minimised): a new ``cvxpy.Problem``.

        :meth:`objective` stays the declared problem's; ``problem.value``
        includes the term, and :meth:`certificate` is then that of the
        problem solved (:func:`cvxmetric.certify`).

        Parameters
        ----------
        expression : cvxpy.Expression
            A scalar convex expression, e.g. ``0.1 * cp.norm(dp.M, "fro")``.

        Returns
        -------
        self
        """
        if not isinstance(expression, cp.Expression) or expression.size != 1:
            raise ValueError("expression: expected a scalar cvxpy expression.")
        objective = cp.Minimize(self.problem.objective.args[0] + expression)
        self.problem = cp.Problem(objective, list(self.constraints.values()))
        self._modified = True
        return self

    # -- solving ---------------------------------------------------------------

    def solve(self, solver=None, **kwargs):
        """Solve :attr:`problem`: the package's certified path, or any solver.

        Parameters
        ----------
        solver : str, optional
            ``None`` (and no keyword arguments): the package's certified
            path, as the families' exact solvers run it -- Clarabel with
            tight tolerances, then SCS, a point accepted only when
            :meth:`certificate` passes (see :meth:`solve_certified`).
            Otherwise a name of ``cvxpy.installed_solvers()``, run once as
            ``problem.solve`` with ``kwargs``.
        **kwargs
            Passed to ``cvxpy.Problem.solve`` (``verbose``, solver options
            such as Clarabel's ``tol_gap_rel`` or SCS's ``eps_abs``).

        Returns
        -------
        value : float
            The optimal value the solver reports.

        Raises
        ------
        ValueError
            ``solver`` is not installed.
        InfeasibleError, UnboundedError
            The solver reports the problem infeasible / unbounded (on the
            certified path: confirmed by a second solver).
        CertificateError
            Certified path only: no solver's point passed the certificate.
        SolverError
            The solver failed or stopped without a solution.
        """
        if solver is None and not kwargs:
            return self.solve_certified()
        if solver is not None:
            installed = cp.installed_solvers()
            if not isinstance(solver, str) or solver.upper() not in installed:
                raise ValueError(f"solver: {solver!r} is not an installed CVXPY "
                                 f"solver; installed: {', '.join(installed)}.")
            solver = solver.upper()
        self._sync_parameters()
        what = f"{self.family} {self.equation}"
        try:
            # with a named solver, keep its conic dual for certificate()
            value = (self.problem.solve(**kwargs) if solver is None
                     else conic_solve(self.problem, solver, **kwargs))
        except cp.error.SolverError as exc:
            raise SolverError(f"{what}: the solver failed ({exc}).") from None
        status = self.problem.status
        name = self._solver_name()
        if status in _INFEASIBLE:
            raise InfeasibleError(
                f"{what}: {name} reports the problem infeasible ({status})."
                + self._infeasible_hint())
        if status in _UNBOUNDED:
            raise UnboundedError(f"{what}: {name} reports the problem unbounded "
                                 f"({status}).")
        value_ok = self.variable.value is not None and np.all(
            np.isfinite(self.variable.value))
        if status not in _SOLVED or not value_ok:
            raise SolverError(f"{what}: {name} ended with status {status!r} and no "
                              f"usable solution.", status=str(status))
        return float(value)

    @property
    def modified(self):
        """Whether :meth:`add_constraint` or :meth:`add_term` changed the
        problem (its certificate is then no longer the declared one's)."""
        return self._modified

    def solve_certified(self, *, solvers=SOLVERS, tol=1e-9):
        """The package's certified path: each solver of ``solvers`` in turn
        (Clarabel, then SCS) with tolerance ``tol``; a point is accepted when
        :meth:`certificate` passes, a claim of infeasibility or
        unboundedness only when a second solver makes it too
        (:func:`cvxmetric._exact.solve_certified`).  Where the family
        knows how, a solver's point is first made exactly admissible
        (MMC: projected on the PSD cone, as its exact path does); the
        variable then holds that point, the one :meth:`matrix` returns and
        the certificate is of.

        On a problem :attr:`modified` by the user the family's certificate
        is that of the declared problem, not of the one solved: the solvers
        run in the same order with the same tolerances and the first one
        that reports ``optimal`` is accepted -- the solver's word, as with a
        named solver, not a certificate.

        Returns
        -------
        value : float
            The family's objective at the certified point (:meth:`objective`);
            on a modified problem, the optimal value the accepted solver
            reports.

        Raises
        ------
        InfeasibleError, UnboundedError, CertificateError, SolverError
            As :func:`cvxmetric._exact.solve_certified`.
        """
        self._sync_parameters()
        if self._modified:
            return self._solve_modified(solvers, tol)

        def certify(name, version, opts, times):
            value = self.variable.value
            if value is None or not np.all(np.isfinite(value)):
                return Certificate.no_point(name, version, opts, times)
            M = self.matrix()
            repaired = self._family_repair(M)
            if repaired is not M:
                # the point returned (matrix()) is the one certified
                self.variable.value = (np.diag(repaired) if self.diagonal
                                       else repaired)
            return self._family_sharpen(repaired, self._family_certificate(repaired))

        try:
            solve_certified(self.problem, certify, solvers=solvers, tol=tol)
        except InfeasibleError as exc:
            raise InfeasibleError(f"{self.family} {self.equation}: {exc}"
                                  + self._infeasible_hint()) from None
        # the objective of the point certified, recomputed by the family
        return self.objective()

    def _solve_modified(self, solvers, tol):
        """The certified path of a modified problem: the first solver whose
        point passes :func:`cvxmetric.certify` on the problem as modified."""

        def judge(name, version, opts, times):
            if any(v.value is None for v in self.problem.variables()):
                return Certificate.no_point(name, version, opts, times)
            return certify(self.problem)

        try:
            cert, _ = solve_certified(self.problem, judge, solvers=solvers, tol=tol)
        except InfeasibleError as exc:
            raise InfeasibleError(f"{self.family} {self.equation} (modified): {exc}"
                                  + self._infeasible_hint()) from None
        return cert.objective

    def _solver_name(self):
        stats = self.problem.solver_stats
        return getattr(stats, "solver_name", None) or "the solver"

    def _infeasible_hint(self):
        """Family-specific explanation of an infeasibility (default: none)."""
        return ""

    # -- the solution, handed back to the family -------------------------------

    def matrix(self):
        """The metric in the user's units from the metric variable's value.

        Returns
        -------
        M : ndarray of shape (d, d)

        Raises
        ------
        ValueError
            When the problem has not been solved (the variable has no value).
        """
        val = self.variable.value
        if val is None:
            raise ValueError(f"{self.metric_key}: has no value; call solve() first.")
        val = np.asarray(val, dtype=float)
        if self.diagonal:
            return np.diag(val)
        if self.kind == "mahalanobis":
            return 0.5 * (val + val.T)
        return val.copy()

    def _check_matrix(self, M):
        """``M`` (default :meth:`matrix`) validated: finite, (d, d) -- or
        (d,) for a diagonal metric -- and diagonal for a diagonal problem."""
        if M is None:
            return self.matrix()
        d = self.n_features
        M = check_finite(M, "M")
        if self.diagonal and M.shape == (d,):
            return np.diag(M)
        if M.shape != (d, d):
            want = f"({d}, {d}) or ({d},)" if self.diagonal else f"({d}, {d})"
            raise ValueError(f"M: expected shape {want}, got {M.shape}.")
        if self.diagonal:
            off = M - np.diag(np.diag(M))
            if np.any(off != 0):
                raise ValueError(
                    f"M: the problem is diagonal, but M has off-diagonal entries "
                    f"(largest {float(np.max(np.abs(off))):.3g}).")
        return M

    def objective(self, M=None):
        """The family's objective at ``M`` in the paper's units.

        Parameters
        ----------
        M : array_like of shape (d, d), optional
            Default :meth:`matrix`.  A diagonal problem also takes ``(d,)``.

        Returns
        -------
        float
        """
        M = self._check_matrix(M)
        self._sync_parameters()
        return float(self._family_objective(M))

    def certificate(self, M=None):
        """The certificate of the problem as it stands: the family's for the
        declared problem; once :attr:`modified`, :func:`cvxmetric.certify` of
        the problem solved (its bound from the conic dual and the problem's
        own data, whatever was added).

        Parameters
        ----------
        M : array_like of shape (d, d), optional
            The family's certificate of ``M`` for the declared problem (also
            on a modified one: how a point does on the original).  Default:
            the point solved.

        Returns
        -------
        Certificate
        """
        if M is None and self.variable.value is None:
            warnings.warn(
                f"{self.family} {self.equation}: not solved and no M given; the "
                f"certificate has no point and cannot pass. Call solve() first.",
                UserWarning, stacklevel=2)
            return Certificate.no_point("declared (not solved)")
        if self._modified and M is None:
            # the problem as modified, from its own conic data
            return certify(self.problem)
        M = self._check_matrix(M)
        self._sync_parameters()
        return self._family_certificate(M)

    def metric(self, M=None, preprocessor=None):
        """A fitted metric object of ``M`` (default :meth:`matrix`).

        Parameters
        ----------
        M : array_like of shape (d, d), optional
        preprocessor : array_like of shape (n_samples, n_features), optional
            Lets :meth:`MahalanobisMetric.pair_distance` take integer pairs.

        Returns
        -------
        MahalanobisMetric or BilinearMetric
        """
        M = self._check_matrix(M)
        if self.kind == "bilinear":
            return BilinearMetric(M).fit()
        return MahalanobisMetric(M, preprocessor=preprocessor).fit()

    def _certificate_args(self):
        """``solver``, ``solver_version``, ``times`` of the last solve."""
        stats = self.problem.solver_stats
        if stats is None or self.problem.status is None:
            return {"solver": "declared (not solved)", "times": {}}
        times = {"solve": float(stats.solve_time or 0.0)}
        return {"solver": stats.solver_name, "times": times}

    def _dual(self, name):
        """The dual value of a declared constraint, or None."""
        con = self.constraints.get(name)
        value = None if con is None else con.dual_value
        return None if value is None else np.asarray(value, dtype=float)

    def _warn_no_multipliers(self):
        warnings.warn(
            f"{self.family} {self.equation}: no dual multipliers are available "
            f"(the declared constraints have not been solved); the certificate "
            f"has no dual bound (-inf) and cannot pass. Call solve() first.",
            UserWarning, stacklevel=3)

    # -- the family's side (subclasses) ----------------------------------------

    def _family_objective(self, M):
        """The family's objective at a validated (d, d) ``M`` (by default
        its data's ``objective``)."""
        return self.data.objective(M)

    def _family_certificate(self, M):
        """The family's certificate of a validated (d, d) ``M``."""
        raise NotImplementedError

    def _family_sharpen(self, M, cert):
        """The certified path's certificate of its point ``M``: ``cert``
        (:meth:`_family_certificate`) by default; a family whose bound a
        short solve can sharpen runs it here, as a traced stage of
        :meth:`solve_certified` (never in :meth:`certificate`, which stays
        pure), and keeps what :meth:`certificate` of ``M`` needs to return
        the certificate the solve judged."""
        return cert

    def _family_repair(self, M):
        """A solver's (d, d) point made exactly admissible where the family
        knows how (e.g. projected on the PSD cone); ``M`` itself (the same
        object) when nothing is to be done.  Used by
        :meth:`solve_certified` before certifying."""
        return M

    def _update_parameters(self, values):
        """Validate new hyperparameter values and update :attr:`data`
        (before the parameters change); raise ValueError naming a bad one."""
        if values:
            raise NotImplementedError

    def _sync_parameters(self):
        """Bring :attr:`data` in line with parameters set through ``.value``."""
        changed = {k: p.value for k, p in self.parameters.items()
                   if not _same(p.value, self._data_value(k))}
        if changed:
            self._update_parameters(changed)

    def _data_value(self, key):
        """The value of hyperparameter ``key`` that :attr:`data` holds."""
        return getattr(self.data, key)


def _same(a, b):
    return a is not None and b is not None and float(a) == float(b)


# ---------------------------------------------------------------------------
# Fitted metrics
# ---------------------------------------------------------------------------


class _ModelDeclared(DeclaredProblem):
    """A declaration built on a family's CVXPY model class (``self.model``),
    whose ``set_params`` validates hyperparameters (a ValueError naming a
    bad one) and rebuilds its ``data``."""

    def _update_parameters(self, values):
        self.model.set_params(**{k: float(v) for k, v in values.items()})
        self.data = self.model.data


class MahalanobisMetric(MahalanobisMixin, BaseEstimator):
    """A Mahalanobis metric from a PSD matrix ``M`` (no learning; ``fit()``
    computes its factor, as ``__init__`` only stores the arguments).

    It has the fitted estimators' metric methods (``transform``,
    ``pair_distance``, ``pair_score``, ``get_metric``,
    ``get_mahalanobis_matrix``, ``components_``).  As there, round-off
    negative eigenvalues of ``M`` are clipped: ``get_mahalanobis_matrix()``
    is the PSD projection of ``M``.

    Parameters
    ----------
    M : array_like of shape (d, d)
        Symmetric (up to round-off), finite.
    preprocessor : array_like of shape (n_samples, d), optional
        The sample matrix that integer pairs index into.

    Examples
    --------
    >>> import numpy as np
    >>> from cvxmetric.model import MahalanobisMetric
    >>> metric = MahalanobisMetric(np.diag([4.0, 1.0])).fit()
    >>> metric.pair_distance([[[0.0, 0.0], [1.0, 0.0]]])
    array([2.])
    """

    def __init__(self, M, preprocessor=None):
        self.M = M
        self.preprocessor = preprocessor

    def fit(self, X=None, y=None):
        """Compute ``components_`` from ``M`` (nothing is learned).

        Parameters
        ----------
        X, y : None
            Ignored.

        Returns
        -------
        self
        """
        M = check_finite(self.M, "M", ndim=2)
        if M.shape[0] != M.shape[1]:
            raise ValueError(f"M: expected a square matrix, got shape {M.shape}.")
        top = float(np.max(np.abs(M))) if M.size else 0.0
        if float(np.max(np.abs(M - M.T), initial=0.0)) > SYMMETRY_RTOL * top:
            raise ValueError("M: a Mahalanobis matrix is symmetric; this one is not "
                             "(use BilinearMetric for a general similarity matrix).")
        self._set_metric(0.5 * (M + M.T))
        self.n_features_in_ = int(M.shape[0])
        return self


class BilinearMetric(BilinearMixin, BaseEstimator):
    """A bilinear similarity ``s(a, b) = a^T M b`` (SLR's model; ``fit()``
    stores ``M``, as ``__init__`` only stores the arguments).

    Not a distance: ``M`` is a general matrix (neither symmetric nor PSD),
    so there is no ``transform``.

    Parameters
    ----------
    M : array_like of shape (d, d)

    Examples
    --------
    >>> import numpy as np
    >>> from cvxmetric.model import BilinearMetric
    >>> BilinearMetric(np.array([[1.0, 2.0], [0.0, 1.0]])).fit().pair_score(
    ...     [[[1.0, 0.0], [0.0, 1.0]]])
    array([2.])
    """

    def __init__(self, M):
        self.M = M

    def fit(self, X=None, y=None):
        """Store ``bilinear_matrix_`` from ``M`` (nothing is learned)."""
        M = check_finite(self.M, "M", ndim=2)
        if M.shape[0] != M.shape[1]:
            raise ValueError(f"M: expected a square matrix, got shape {M.shape}.")
        self.bilinear_matrix_ = M.copy()
        self.n_features_in_ = int(M.shape[0])
        return self

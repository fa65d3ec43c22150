"""OMDML, exact: Eq. 3 of Wu, Hoi et al. (2016) at a fixed combination, in CVXPY.

The formulation (the specification every OMDML solver answers to)::

    minimise_{M_1..M_m PSD, xi >= 0}  0.5 sum_i ||M_i||_F^2 + C sum_t xi_t
    subject to  xi_t >= sum_i theta_i (d_i(p_t, p_t+) - d_i(p_t, p_t-)) + 1

with ``d_i(p, q) = (x_p - x_q)^T M_i (x_p - x_q)`` in view ``i`` -- the
hinge of Eq. 3 in slack form, margin 1 as printed (Algorithm 1's
``gamma`` is only the threshold that triggers an online update).  ``theta``
in the simplex is fixed: for fixed ``theta`` the problem is convex in the
``M_i``.  Changes from the paper: none; ``C`` and ``theta`` are
``cp.Parameter`` (DPP), so the joint search over ``theta``
(:func:`solve_joint_grid`) re-solves without recompiling.

The joint problem over ``theta`` is not convex (docs/omdml/formulation.md): with
``N_i = theta_i M_i`` the loss is linear in ``N`` but the regulariser
becomes ``0.5 sum_i ||N_i||^2 / theta_i^2``, and minimising it over the
simplex leaves ``0.5 (sum_i ||N_i||_F^{2/3})^3``, a non-convex penalty.
Two references for small ``m``: :func:`solve_joint_grid` (a global search
on a grid of the simplex with the exact inner solve) and
:func:`solve_joint_alternating` (exact ``M``-steps and exact ``theta``-steps,
a local solution).
"""

import itertools
import time
import warnings

import cvxpy as cp
import numpy as np

from .._docs import fill_doc
from .._exact import SOLVERS, solve_certified, solver_options
from .._linalg import project_psd
from .._settings import _HARD_EXP
from .._validation import check_instance
from ..model import DeclaredProblem, MahalanobisMetric
from ..result import CertificateError, SolverResult
from ._problem import OMDMLData, check_theta

__all__ = ["OMDMLModel", "solve_exact", "solve_joint_grid", "solve_joint_alternating",
           "declared_problem", "PAPER"]

PAPER = ("Wu, Hoi, Zhao, Miao, Liu: Online multi-modal distance metric learning "
         "(TKDE 2016)")


# [declare:omdml-sqdist]
def _sqdist_expr(M, D):
    """``D_t^T M D_t`` for the rows of ``D`` (T, n_i), vectorised."""
    return cp.sum(cp.multiply(D @ M, D), axis=1)
# [/declare]


class OMDMLModel:
    """Eq. 3 at fixed ``theta`` declared as a CVXPY problem.

    Parameters
    ----------
    data : OMDMLData
    theta : array_like of shape (m,), optional
        In the simplex; default uniform.

    Attributes
    ----------
    problem : cvxpy.Problem
    M : list of cvxpy.Variable (n_i, n_i), symmetric
        In each feature's own units: ``(M_i)_jl = 2^-(k_ij + k_il)`` times
        this (:meth:`metrics` maps them back).
    exponents : tuple of int
        The ``k_i`` of :meth:`OMDMLData.view_exponents` (the views' scales,
        which the certificate's bound uses).
    feature_exponents : list of ndarray of int
        The ``k_ij`` of :meth:`OMDMLData.feature_exponents`.
    xi : cvxpy.Variable (T,)
    params : dict of cvxpy.Parameter
        ``C`` and ``theta``.
    constraints : dict of cvxpy.Constraint
        ``hinge`` and ``psd_0`` .. ``psd_{m-1}``.
    """

    def __init__(self, data, theta=None, *, _scaled=True):
        m = data.n_views
        theta = np.full(m, 1.0 / m) if theta is None else check_theta(theta, m)
        self.data = data
        # _scaled=False: every k_i = 0, the problem as printed in the user's
        # units (declared_problem); the exact path solves the scaled one
        # Each feature is solved in the units of its own scale (exact powers
        # of two, OMDMLData.feature_exponents): with features of 1e5 the
        # user-unit model pairs squared distances of 1e10 with metrics of
        # 1e-10, which the conic solvers do not resolve.  The regulariser's
        # weights 2^(-2 (k_j + k_l)) are floored at 2^-40 in the model only:
        # below it the model's optimum is the hinge minimiser to the
        # solvers' accuracy, and the certificate judges the point on the
        # true problem.
        # Within a view, each feature has its own power of two (raw features
        # of one view span orders: 0.1 and 1e3 in breast_cancer's), so the
        # point's round-off is relative to each feature's scale: with
        # M_i = D^-1 N_i D^-1, D = diag(2^k_ij), the PSD projection of N_i
        # moves the hinges by round-off only, and the regulariser is
        # ||W * N_i||_F^2 with W = 2^-(k_j + k_l)
        self.exponents = data.view_exponents() if _scaled else (0,) * m
        self.feature_exponents = (data.feature_exponents() if _scaled
                                  else [np.zeros(n, dtype=int) for n in data.dims])
        weights = [np.ldexp(1.0, -np.minimum(k[:, None] + k[None, :], 20))
                   for k in self.feature_exponents]
        A = [np.ldexp(Ai, -k[None, :]) for Ai, k in zip(data.A, self.feature_exponents)]
        B = [np.ldexp(Bi, -k[None, :]) for Bi, k in zip(data.B, self.feature_exponents)]
        # [declare:omdml-eq3]
        C = cp.Parameter(nonneg=True, value=data.C, name="C")
        th = cp.Parameter(m, nonneg=True, value=theta, name="theta")
        M = [cp.Variable((n, n), symmetric=True, name=f"M_{i}")
             for i, n in enumerate(data.dims)]
        xi = cp.Variable(data.n_triplets, nonneg=True, name="xi")
        f = sum(th[i] * (_sqdist_expr(M[i], A[i]) - _sqdist_expr(M[i], B[i]))
                for i in range(m))  # (T,) combined d(p, p+) - d(p, p-)
        cons = {"hinge": xi >= f + 1.0}
        cons.update({f"psd_{i}": M[i] >> 0 for i in range(m)})
        objective = 0.5 * sum(cp.sum_squares(cp.multiply(w, Mi))
                              for w, Mi in zip(weights, M)) + C * cp.sum(xi)
        # [/declare]
        self.M, self.xi = M, xi
        self.params = {"C": C, "theta": th}
        self.constraints = cons
        self.problem = cp.Problem(cp.Minimize(objective), list(cons.values()))
        assert self.problem.is_dpp(), "the OMDML model must be DPP"

    def metrics(self):
        """The model's point in the user's units: each ``M_i`` projected onto
        the PSD cone (the solvers leave eigenvalues of ``-tol``, which at a
        large data scale would move the hinges by ``tol`` times the squared
        distances) and mapped back by ``2^(-2 k_i)``."""
        return [np.ldexp(project_psd(Mi.value), -(k[:, None] + k[None, :]))
                for Mi, k in zip(self.M, self.feature_exponents)]

    @property
    def theta(self):
        return np.asarray(self.params["theta"].value, dtype=float)

    def set_theta(self, theta):
        """A new combination (validated), re-solved without recompiling."""
        self.params["theta"].value = check_theta(theta, self.data.n_views)

    def solve(self, *, solvers=SOLVERS, tol=1e-9, verbose=False):
        """Solve as declared; a certified :class:`SolverResult` (``M``: the
        block-diagonal matrix of the ``M_i``; ``info["metrics"]``: the list),
        in the user's units."""
        t0 = time.perf_counter()
        theta = self.theta
        found = {}

        def certify(name, version, opts, times):
            Ms = self.metrics()
            alpha = [np.ravel(self.constraints["hinge"].dual_value)]
            kw = dict(solver=name, solver_version=version, tolerances=opts,
                      times=times)
            cert = self.data.certificate(Ms, theta, alpha, **kw)
            if not cert.passed:
                # the solver's multipliers bound Eq. 3 only up to
                # ||Pi_+(-theta S)||^2 2^(4k) / 2: at a large data scale the
                # hinge-only bound of strictly feasible multipliers is needed
                alpha += interior_multipliers(self.data, theta, self.exponents)
                cert = self.data.certificate(Ms, theta, alpha, **kw)
            found["Ms"] = Ms
            return cert

        try:
            cert, info = solve_certified(self.problem, certify, solvers=solvers,
                                         tol=tol, verbose=verbose)
        except CertificateError as exc:
            _refuse_degenerate_large_views(self.data, theta, self.exponents, exc)
            raise
        return omdml_result(found["Ms"], theta, cert, status=info["status"],
                            n_iter=info["n_iter"], method="exact",
                            info={"attempts": info["attempts"],
                                  "exponents": self.exponents},
                            time=time.perf_counter() - t0)


def _refuse_degenerate_large_views(data, theta, exponents, exc):
    """Name the view when a failed certificate comes from a large view whose
    differences do not span its (non-constant) features.

    Along a direction ``u`` in which the differences vary by a fraction
    ``eps`` of their length, a metric weight ``1 / eps^2`` moves the hinges
    by O(1) at a cost ``2^(-4k) / eps^4``: at a large scale ``2^k`` even
    directions at the round-off of the data (``x`` normalised to a fixed
    sum, a feature that is a combination of others) weigh on the optimum,
    and the bound of :meth:`OMDMLData.dual_bound` (their Schur complement,
    of order ``eps^2``, times ``2^(4k)``) no longer separates them.  Refused
    with a ``ValueError`` naming the view (chained to ``exc``).
    """
    for i, (k, th, (U, r)) in enumerate(zip(exponents, theta, data.view_bases())):
        if k < _HARD_EXP or th == 0 or r == U.shape[1]:
            continue
        raise ValueError(
            f"views[{i}]: at its scale (differences of length about 2^{k}) the "
            f"triplets' differences span only {r} of the view's {U.shape[1]} "
            f"non-constant features (e.g. features normalised to a fixed sum), "
            f"and the directions outside that span, where the differences vary "
            f"only at the data's round-off, weigh on Eq. 3's optimum beyond what "
            f"a floating-point bound separates: it cannot be certified. Rescale "
            f"the view (the paper scales every feature to [0, 1]) or drop the "
            f"dependent features.") from exc


def interior_multipliers(data, theta, exponents=None, *, margins=(1e-8, 1e-6)):
    """Hinge multipliers whose bound survives a large data scale.

    The dual bound of Eq. 3 is ``sum_t alpha_t - sum_i 2^(4 k_i)
    ||Pi_+(-theta_i S_i(alpha))||^2 / 2`` in the scale-free units of
    :meth:`OMDMLData.view_exponents`: a solver's multipliers, feasible up
    to its tolerance, leave a ``Pi_+`` of that size, which the factor
    ``2^(4k)`` of a large view turns into a gap of any size.  Here the
    views with ``k_i >= 8`` get multipliers that make ``theta_i S_i(alpha)``
    PSD *strictly*: ``theta_i S_i(alpha) >= delta_i I``, the margin
    ``delta_i`` (a fraction ``margins`` of the mean ``C (|a|^2 + |b|^2)``)
    keeping the computed ``S_i`` PSD through round-off (their ``Pi_+`` is
    then exactly 0), at a cost of about ``delta_i tr(N_i)`` in the bound;
    the other views keep their penalty.  The multipliers maximise that
    bound; every one is a valid bound whatever the solver's accuracy, and
    views with ``theta_i = 0`` do not enter it.

    Returns
    -------
    list of ndarray
        One candidate per margin that the solver could satisfy (possibly
        none: e.g. a large view whose differences do not span its space
        admits no strictly feasible multipliers).
    """
    if exponents is None:
        exponents = data.view_exponents()
    T = data.n_triplets
    out = []
    for margin in margins:
        a = cp.Variable(T, nonneg=True)
        cons = [a <= data.C]
        penalty = 0.0
        for Ai, Bi, k, th, on, (U, r) in zip(data.A, data.B, exponents, theta,
                                             data.active_features(), data.view_bases()):
            if th == 0 or r == 0:
                continue
            # features constant over the triplets are left out (their rows
            # of S are 0 for every alpha); a large view is bounded on the
            # span of its differences, the rest through the Schur
            # complement of OMDMLData.dual_bound
            A, B = np.ldexp(Ai[:, on] @ U, -k), np.ldexp(Bi[:, on] @ U, -k)
            if k >= _HARD_EXP:
                A, B = A[:, :r], B[:, :r]
            n = A.shape[1]
            # S(a) = A^T diag(a) A - B^T diag(a) B, linear in a: its (n*n, T)
            # coefficient matrix, one column per triplet
            K = (np.einsum("ti,tj->ijt", A, A) - np.einsum("ti,tj->ijt", B, B)
                 ).reshape(n * n, T)
            S = cp.reshape(K @ a, (n, n), order="C")
            S = th * 0.5 * (S + S.T)
            if k >= _HARD_EXP:
                delta = margin * data.C * float(np.mean(np.sum(A * A + B * B, axis=1)))
                cons.append(S >> delta * np.eye(n))
            else:  # ||Pi_+(-S)||^2 = min over Z PSD of ||S - Z||^2
                Z = cp.Variable((n, n), PSD=True)
                penalty = penalty + float(np.ldexp(0.5, 4 * k)) * cp.sum_squares(S - Z)
        problem = cp.Problem(cp.Maximize(cp.sum(a) - penalty), cons)
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Solution may be inaccurate")
                problem.solve(solver="CLARABEL", **solver_options("CLARABEL"))
        except cp.SolverError:
            continue
        if a.value is not None and problem.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
            out.append(np.clip(np.asarray(a.value, dtype=float), 0.0, data.C))
    return out


def omdml_result(Ms, theta, cert, *, status, n_iter, method, info, time=0.0,
                 raw_status=""):
    """The :class:`SolverResult` of per-view matrices ``Ms`` at ``theta``:
    ``M`` is their block-diagonal matrix, ``info`` gains ``metrics`` and
    ``theta``."""
    from scipy.linalg import block_diag

    info = dict(info, metrics=[np.array(M) for M in Ms], theta=np.array(theta))
    return SolverResult(M=block_diag(*Ms), status=status, objective=cert.objective,
                        n_iter=n_iter, certificate=cert, method=method, info=info,
                        time=time, raw_status=raw_status)


def solve_exact(data, theta=None, *, solvers=SOLVERS, tol=1e-9, verbose=False):
    """Certified exact solution of Eq. 3 at fixed ``theta`` (default uniform).

    Parameters
    ----------
    data : OMDMLData
    theta : array_like of shape (m,), optional

    Returns
    -------
    SolverResult
    """
    check_instance(data, OMDMLData, "data")
    model = OMDMLModel(data, theta)
    return model.solve(solvers=solvers, tol=tol, verbose=verbose)


# ---------------------------------------------------------------------------
# The declared problem (cvxmetric.model's contract)
# ---------------------------------------------------------------------------


class _OMDMLDeclared(DeclaredProblem):
    """Eq. 3 at a fixed ``theta``, as printed, in the user's units
    (:func:`declared_problem`).

    One metric per view: the variables ``M_0`` .. ``M_{m-1}``
    (:attr:`metric_keys`; ``metric_key`` is the first).  The contract's
    matrix is their block-diagonal matrix over the concatenated views
    (:attr:`M`, :meth:`matrix`, and the ``M`` that :meth:`objective` and
    :meth:`certificate` take, as the exact path's ``result.M``);
    :meth:`metrics` splits it into the per-view matrices and
    :meth:`metric` is the combined distance ``sum_i theta_i d_i``.
    """

    def __init__(self, *, theta, **kwargs):
        super().__init__(**kwargs)
        self.theta = np.asarray(theta, dtype=float)
        self.metric_keys = tuple(f"M_{i}" for i in range(self.data.n_views))

    def __repr__(self):
        return (f"DeclaredProblem(family={self.family!r}, equation={self.equation!r}, "
                f"{', '.join(self.metric_keys)}: dims {self.data.dims}, "
                f"parameters={sorted(self.parameters)}, "
                f"constraints={list(self.constraints)})")

    # -- the block-diagonal metric ---------------------------------------------

    @property
    def n_features(self):
        return int(sum(self.data.dims))

    @property
    def M(self):
        """``blockdiag(M_0, ..., M_{m-1})`` as a CVXPY expression."""
        Ms = [self.variables[k] for k in self.metric_keys]
        dims = self.data.dims
        return cp.bmat([[Ms[i] if i == j else np.zeros((dims[i], dims[j]))
                         for j in range(len(dims))] for i in range(len(dims))])

    def matrix(self):
        """The block-diagonal matrix of the symmetrised ``M_i`` values."""
        from scipy.linalg import block_diag

        blocks = []
        for key in self.metric_keys:
            val = self.variables[key].value
            if val is None:
                raise ValueError(f"{key}: has no value; call solve() first.")
            val = np.asarray(val, dtype=float)
            blocks.append(0.5 * (val + val.T))
        return block_diag(*blocks)

    def _check_matrix(self, M):
        M = super()._check_matrix(M)
        mask = np.ones(M.shape, dtype=bool)
        for sl in self._slices():
            mask[sl, sl] = False
        if np.any(M[mask] != 0):
            raise ValueError(
                f"M: expected the block-diagonal matrix of the views' metrics "
                f"(blocks of sizes {list(self.data.dims)}); it has entries off the "
                f"blocks (largest {float(np.max(np.abs(M[mask]))):.3g}).")
        return M

    def _slices(self):
        ends = np.cumsum(self.data.dims)
        return [slice(int(e - n), int(e)) for e, n in zip(ends, self.data.dims)]

    def metrics(self, M=None):
        """The per-view matrices ``[M_0, ..., M_{m-1}]`` of ``M`` (default
        :meth:`matrix`)."""
        M = self._check_matrix(M)
        return [M[sl, sl].copy() for sl in self._slices()]

    def metric(self, M=None, preprocessor=None):
        """The combined distance ``sum_i theta_i d_i`` as a Mahalanobis
        metric over the concatenated views ``np.hstack(views)``: the
        block-diagonal matrix of ``theta_i M_i``.

        Parameters
        ----------
        M : array_like, optional
            The block-diagonal matrix of the ``M_i`` (default :meth:`matrix`).
        preprocessor : array_like of shape (n_samples, sum of n_i), optional
            ``np.hstack(views)``, for integer pairs.
        """
        from scipy.linalg import block_diag

        self._sync_parameters()
        Ms = self.metrics(M)
        return MahalanobisMetric(block_diag(*[t * Mi for t, Mi in zip(self.theta, Ms)]),
                                 preprocessor=preprocessor).fit()

    # -- the family's side -------------------------------------------------------

    def _family_objective(self, M):
        return self.data.objective(self.metrics(M), self.theta)

    def _family_certificate(self, M):
        # the bound holds for any multipliers in [0, C]: those consistent
        # with the point always, and the hinges' duals of the last solve
        # (the tight ones) when there are any
        alpha = self._dual("hinge")
        return self.data.certificate(self.metrics(M), self.theta, alpha,
                                     **self._certificate_args())

    def _family_repair(self, M):
        # each M_i of an interior point is PSD only to the solver's
        # tolerance: its projection (as the exact path certifies), written
        # back to the views' variables and into M, which the certified path
        # then certifies (M is the caller's fresh matrix())
        if all(np.linalg.eigvalsh(Mi)[0] >= 0 for Mi in self.metrics(M)):
            return M
        for key, sl in zip(self.metric_keys, self._slices()):
            P = project_psd(M[sl, sl])
            M[sl, sl] = P
            self.variables[key].value = P
        return M

    def _update_parameters(self, values):
        # validated first (ValueError naming C / theta): nothing changes on
        # a refusal
        data, theta = self.data, self.theta
        if "C" in values:
            data = data.with_C(float(values["C"]))
        if "theta" in values:
            theta = check_theta(values["theta"], data.n_views)
        self.data, self.theta = data, theta

    def set_parameters(self, **values):
        super().set_parameters(**values)
        if "theta" in values:
            # the simplex point as validated (normalised to sum 1)
            self.parameters["theta"].value = self.theta
        return self

    def _sync_parameters(self):
        C, theta = self.parameters["C"].value, self.parameters["theta"].value
        changed = {}
        if C is not None and float(C) != self.data.C:
            changed["C"] = C
        if theta is not None and not np.array_equal(np.asarray(theta, float),
                                                     self.theta):
            changed["theta"] = theta
        if changed:
            self._update_parameters(changed)


@fill_doc
def declared_problem(data, theta=None):
    """Eq. 3 at a fixed ``theta`` exactly as printed, in the user's units,
    unsolved::

        minimise_{M_i, xi}  0.5 sum_i ||M_i||_F^2 + C sum_t xi_t
        subject to  xi_t >= sum_i theta_i (d_i(p_t, p_t+) - d_i(p_t, p_t-)) + 1
                    (hinge),   xi >= 0,   M_i PSD  (psd_i)

    :class:`OMDMLModel` without its per-feature scaling (every ``k_ij = 0``,
    every weight 1): variables ``M_0`` ..
    ``M_{m-1}`` (symmetric, one per view) and ``xi``; parameters ``C`` and
    ``theta`` (validated in the simplex); constraints ``hinge`` and
    ``psd_0`` .. ``psd_{m-1}``.  The contract's metric is the
    block-diagonal matrix of the ``M_i`` (see the returned object's
    ``metrics`` and ``metric``).  The certificate bounds the optimum with
    the multipliers consistent with the point and, after a solve, the
    duals of ``hinge``.

    Parameters
    ----------
    data : OMDMLData
    theta : array_like of shape (m,), optional
        In the simplex; default uniform.

    {declared_returns_model}
    """
    check_instance(data, OMDMLData, "data")
    model = OMDMLModel(data, theta, _scaled=False)
    variables = {f"M_{i}": Mi for i, Mi in enumerate(model.M)}
    variables["xi"] = model.xi
    return _OMDMLDeclared(
        family="omdml", paper=PAPER, equation="Eq. 3 at a fixed theta",
        problem=model.problem, variables=variables, parameters=model.params,
        constraints=model.constraints, metric_key="M_0", data=data,
        theta=model.theta)


def simplex_grid(m, resolution):
    """Every ``theta`` with entries ``k / resolution`` summing to 1."""
    pts = [c for c in itertools.product(range(resolution + 1), repeat=m)
           if sum(c) == resolution]
    return np.array(pts, dtype=float) / resolution


def solve_joint_grid(data, resolution=10, *, max_views=3, **kwargs):
    """The joint problem (Eq. 3 over ``theta`` too) by a global grid search.

    Every ``theta`` of :func:`simplex_grid` (``resolution`` steps per
    edge) is solved exactly, warm from the same compiled model.  The best is
    the joint optimum up to the grid: the true ``theta*`` may lie between
    grid points.

    Returns
    -------
    best : SolverResult
        ``info["grid"]``: ``(thetas, objectives)`` of every grid point.
    """
    if data.n_views > max_views:
        raise ValueError(f"data: the grid search is for at most {max_views} views "
                         f"(got {data.n_views}); raise max_views knowingly.")
    model = OMDMLModel(data)
    thetas = simplex_grid(data.n_views, int(resolution))
    best, objs = None, []
    for th in thetas:
        model.set_theta(th)
        res = model.solve(**kwargs)
        objs.append(res.objective)
        if best is None or res.objective < best.objective:
            best = res
    best.info["grid"] = (thetas, np.array(objs))
    best.info["resolution"] = int(resolution)
    return best


def _theta_step(data, Ms):
    """``argmin_theta`` of Eq. 3 with the ``M_i`` fixed: an LP over the simplex."""
    F = data.view_scores(Ms)  # (T, m)
    th = cp.Variable(data.n_views, nonneg=True)
    prob = cp.Problem(cp.Minimize(cp.sum(cp.pos(F @ th + 1.0))), [cp.sum(th) == 1])
    prob.solve(solver="CLARABEL")
    theta = np.clip(np.asarray(th.value, dtype=float), 0.0, None)
    return theta / theta.sum()


def solve_joint_alternating(data, theta0=None, *, max_rounds=20, rtol=1e-9, **kwargs):
    """A local solution of the joint problem: exact ``M``-steps (Eq. 3 at
    fixed ``theta``) and exact ``theta``-steps (an LP) until the objective
    stops decreasing.

    Returns
    -------
    SolverResult
        ``info["rounds"]``, ``info["history"]`` (objective per round).
    """
    m = data.n_views
    theta = np.full(m, 1.0 / m) if theta0 is None else check_theta(theta0, m)
    model = OMDMLModel(data, theta)
    res = model.solve(**kwargs)
    history = [res.objective]
    for _ in range(max_rounds):
        theta_new = _theta_step(data, res.info["metrics"])
        model.set_theta(theta_new)
        new = model.solve(**kwargs)
        history.append(new.objective)
        if new.objective >= res.objective - rtol * max(1.0, abs(res.objective)):
            if new.objective < res.objective:
                res = new
            break
        res = new
    res.info["rounds"] = len(history) - 1
    res.info["history"] = history
    return res

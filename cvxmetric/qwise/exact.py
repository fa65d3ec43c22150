"""Qwise, exact: Eq. 8 and Eq. 11 of Law, Thome and Cord (2016) in CVXPY.

The formulation (this is the specification every Qwise solver answers to)::

    minimise_{M, xi, xi_S, xi_D}
        Omega(M) + C_q sum_{q in N} xi_q + C_p (sum_S xi_ij + sum_D xi_ij)
    subject to
        D2_M(k, l) >= D2_M(i, j) + delta_q - xi_q     for q = (i, j, k, l) in N
        D2_M(i, j) <= u + xi_ij                        for (i, j) in S
        D2_M(i, j) >= l - xi_ij                        for (i, j) in D
        xi, xi_S, xi_D >= 0,   M PSD

with ``D2_M(i, j) = (x_i - x_j)^T M (x_i - x_j)`` and ``Omega`` one of
``tr(M)``, ``0.5 ||M||_F^2`` or ``tr(M A_S)``.  Without pairs (or with
``C_p = 0``) this is Eq. 8.  Eq. 11 writes the same problem with hinge losses;
the slacks are its epigraph form.  Changes from the paper: none in the
objective; ``u``, ``l``, ``C_q`` and ``C_p`` are ``cp.Parameter`` so that a
sweep re-solves without recompiling (the problem is DPP), and ``M`` is a
symmetric variable with an explicit ``M >> 0`` so the PSD constraint has a
dual.

Two ways to solve it, both certified on the *full* problem:

* ``reduce=False``: the model above, as declared.
* ``reduce=True`` (default): the same optimum from a smaller model.  At an
  optimum every hinge is either inactive (margin argument < 0, multiplier 0),
  active (> 0, multiplier ``c_q``: the hinge is linear there) or on its
  margin.  Given a guess of that partition, inactive terms are dropped,
  active ones are summed into the single linear term
  ``sum_V c_q (delta_q - <M, A_q>)`` and only the margin set keeps its slack.
  The reduced optimum is optimal for the full problem exactly when the
  partition is consistent (subgradient optimality of each hinge), which is
  checked; inconsistent constraints join the margin set and the model is
  solved again.  The final point is certified against the full problem's
  dual bound, so the guess can only cost time, never accuracy.  The guess
  comes from the caller: a previous result (``init``) or a function that
  computes one (``warm_start``; the registry's
  :meth:`~cvxmetric.formulations.Formulation.solve_exact` hands over
  :func:`cvxmetric.qwise.fast.warm_start`, a short fast solve).  Without
  either, the declared model is solved, as with ``reduce=False``.
"""

import time

import cvxpy as cp
import numpy as np

from .._backend import check_host_input
from .._docs import fill_doc
from .._exact import SOLVERS, solve_certified
from .._validation import check_instance
from ..model import _ModelDeclared
from ..result import CertificateError, SolverError, SolverResult, Status
from ._problem import QwiseData

__all__ = ["QwiseModel", "solve_exact", "declared_problem", "PAPER"]

#: The paper, as :class:`~cvxmetric.model.DeclaredProblem` cites it.
PAPER = ("Law, Thome, Cord: Learning a distance metric from relative "
         "comparisons between quadruplets of images (IJCV 2016)")


# [declare:qwise-sqdist]
def _sqdist_expr(M, Phi):
    """Vectorised ``phi_p^T M phi_p`` for the rows of ``Phi`` (n_pairs, d)."""
    return cp.sum(cp.multiply(Phi @ M, Phi), axis=1)
# [/declare]


# [declare:qwise-omega]
def _regularizer_expr(data, M):
    if data.regularizer == "trace":
        return cp.trace(M)
    if data.regularizer == "frobenius":
        return 0.5 * cp.sum_squares(M)
    return cp.sum(cp.multiply(data.R, M))
# [/declare]


def _check_parameter_names(params, values):
    """Refuse, naming it, a key of ``values`` that is not one of ``params``
    (a model's ``set_params``)."""
    for key in values:
        if key not in params:
            raise ValueError(f"{key}: not a parameter of this model; have "
                             f"{sorted(params)}.")


class QwiseModel:
    """Eq. 8 / Eq. 11 declared as a CVXPY problem.

    Parameters
    ----------
    data : QwiseData

    Attributes
    ----------
    problem : cvxpy.Problem
    M : cvxpy.Variable of shape (d, d), symmetric
    xi, xi_S, xi_D : cvxpy.Variable
        Slacks of quadruplets, similar and dissimilar pairs (``None`` when
        the set is empty).
    params : dict of cvxpy.Parameter
        ``C_q``, ``C_p``, ``u``, ``l`` (the latter three only with pairs).
    constraints : dict of cvxpy.Constraint
        ``quadruplets``, ``similar``, ``dissimilar``, ``psd``.
    """

    def __init__(self, data):
        self.data = data
        X = data.X
        d = data.n_features
        q = data.quadruplets.indices
        # [declare:qwise-eq8]
        M = cp.Variable((d, d), symmetric=True, name="M")
        self.M = M
        self.params = {"C_q": cp.Parameter(nonneg=True, value=data.C_q, name="C_q")}
        cons = {}
        Pn = X[q[:, 0]] - X[q[:, 1]]  # (n_quads, d)
        Pf = X[q[:, 2]] - X[q[:, 3]]  # (n_quads, d)
        self.xi = cp.Variable(len(q), nonneg=True, name="xi")
        cons["quadruplets"] = (
            _sqdist_expr(M, Pf) >= _sqdist_expr(M, Pn) + data.quadruplets.delta - self.xi
        )
        loss = self.params["C_q"] * cp.sum(self.xi)
        # [/declare]
        if data.q_weights is not None:
            # per-quadruplet weights (QwiseData.from_sets(weights=)), e.g.
            # the structural model's closed form; the paper's Eq. 8 has none
            loss = self.params["C_q"] * (data.q_weights @ self.xi)
        # [declare:qwise-eq11]
        self.xi_S = self.xi_D = None
        if data.pairs is not None:
            C_p = cp.Parameter(nonneg=True, value=data.C_p, name="C_p")
            u = cp.Parameter(value=data.u, name="u")
            l = cp.Parameter(value=data.l, name="l")
            self.params.update(C_p=C_p, u=u, l=l)
            pair_loss = 0
            S, D = data.pairs.similar, data.pairs.dissimilar
            if len(S):
                PS = X[S[:, 0]] - X[S[:, 1]]
                self.xi_S = cp.Variable(len(S), nonneg=True, name="xi_S")
                cons["similar"] = _sqdist_expr(M, PS) <= u + self.xi_S
                pair_loss = pair_loss + cp.sum(self.xi_S)
            if len(D):
                PD = X[D[:, 0]] - X[D[:, 1]]
                self.xi_D = cp.Variable(len(D), nonneg=True, name="xi_D")
                cons["dissimilar"] = _sqdist_expr(M, PD) >= l - self.xi_D
                pair_loss = pair_loss + cp.sum(self.xi_D)
            loss = loss + C_p * pair_loss
        # [/declare]
        # [declare:qwise-problem]
        cons["psd"] = M >> 0
        self.constraints = cons
        self.problem = cp.Problem(
            cp.Minimize(_regularizer_expr(data, M) + loss), list(cons.values())
        )
        # [/declare]
        assert self.problem.is_dpp(), "Qwise model must be DPP"

    def set_params(self, **values):
        """Update hyperparameters (``C_q``, ``C_p``, ``u``, ``l``) in place.

        The canonical data is updated too, so certificates stay in the
        paper's units.
        """
        _check_parameter_names(self.params, values)
        d = self.data
        current = {k: p.value for k, p in self.params.items()}
        current.update(values)
        # validate first, so a rejected value leaves the model unchanged
        new_data = QwiseData.from_sets(
            d.quadruplets, d.pairs, regularizer=d.regularizer,
            C_q=current["C_q"], C_p=current.get("C_p", d.C_p),
            u=current.get("u", d.u), l=current.get("l", d.l),
            A_S=d.R if d.regularizer == "similar" else None, weights=d.q_weights,
        )
        for key, val in values.items():
            self.params[key].value = val
        self.data = new_data

    def alpha(self):
        """Canonical dual multipliers (quadruplets, similar, dissimilar)."""
        parts = [self.constraints["quadruplets"].dual_value]
        for key in ("similar", "dissimilar"):
            if key in self.constraints:
                parts.append(self.constraints[key].dual_value)
        return np.concatenate([np.ravel(p) for p in parts])

    def solve(self, *, solvers=SOLVERS, tol=1e-9, verbose=False):
        """Solve as declared; return a certified :class:`SolverResult`."""
        t0 = time.perf_counter()

        def certify(name, version, opts, times):
            return self.data.certificate(
                self.M.value, self.alpha(), solver=name, solver_version=version,
                tolerances=opts, times=times,
            )

        cert, info = solve_certified(
            self.problem, certify, solvers=solvers, tol=tol, verbose=verbose
        )
        return SolverResult(
            M=0.5 * (self.M.value + self.M.value.T),
            status=info["status"],
            objective=cert.objective,
            n_iter=info["n_iter"],
            certificate=cert,
            method="exact",
            info={"model": self, "alpha": self.alpha(), "attempts": info["attempts"],
                  "reduced": False},
            time=time.perf_counter() - t0,
        )


def _reduced_problem(data, W, V):
    """The margin-set model: slacks on ``W``, ``V`` summed into a linear term."""
    d = data.n_features
    M = cp.Variable((d, d), symmetric=True, name="M")
    op = data.op
    obj = _regularizer_expr(data, M)
    cons = [M >> 0]
    if np.any(V):
        alpha_V = np.where(V, data.c_q, 0.0)
        S_V = op.gram(data.dual_pair_weights(alpha_V))
        obj = obj + float(data.delta_q @ alpha_V) - cp.sum(cp.multiply(0.5 * (S_V + S_V.T), M))
    con = None
    if np.any(W):
        idx = np.flatnonzero(W)
        X = data.X
        pn = op.i[data.near_q[idx]], op.j[data.near_q[idx]]
        pf = op.i[data.far_q[idx]], op.j[data.far_q[idx]]
        Pn = X[pn[0]] - X[pn[1]]  # (n_margin, d)
        Pf = X[pf[0]] - X[pf[1]]
        xi = cp.Variable(len(idx), nonneg=True)
        con = _sqdist_expr(M, Pf) >= _sqdist_expr(M, Pn) + data.delta_q[idx] - xi
        cons.append(con)
        obj = obj + data.c_q[idx] @ xi
    return cp.Problem(cp.Minimize(obj), cons), M, con


def _initial_partition(data, init):
    """Guess the inactive / margin / active partition from the point (and
    multipliers, when it has them) of the result ``init``."""
    arg = data.margins(init.M)
    alpha = init.info.get("alpha")
    scale = max(1.0, float(np.max(np.abs(data.delta_q))))
    band = 1e-3 * scale
    W = np.abs(arg) <= band
    if alpha is not None:
        c = data.c_q
        W |= (alpha > 1e-6 * c) & (alpha < (1 - 1e-6) * c)
    V = (arg > band) & ~W
    return W, V


def solve_exact(data, *, reduce=True, init=None, warm_start=None, solvers=SOLVERS,
                tol=1e-9, max_rounds=8, verbose=False):
    """Certified exact solution of Eq. 8 / Eq. 11.

    Parameters
    ----------
    data : QwiseData
    reduce : bool
        Solve the margin-set reduction (see the module docstring) instead of
        the declared model.  Both return the full problem's optimum with a
        certificate on the full problem.
    init : SolverResult, optional
        A previous solution used to guess the partition (in the units of
        ``data``); it wins over ``warm_start``.
    warm_start : callable, optional
        ``warm_start(data) -> SolverResult``, called when the reduction
        needs a guess and ``init`` is None, on the problem it solves: the
        scale-free twin of ``data`` (:meth:`QwiseData.normalized`).
        :meth:`cvxmetric.formulations.Formulation.solve_exact` (the
        estimators' way in) gives :func:`cvxmetric.qwise.fast.warm_start`.
        With neither ``init`` nor ``warm_start`` there is no guess and the
        declared model is solved, as with ``reduce=False``.
    solvers : sequence of str
        Clarabel first, SCS as fallback.
    tol : float
        Solver tolerance.
    max_rounds : int
        Reduction rounds before falling back to the declared model.

    Returns
    -------
    SolverResult
        ``method="exact"``, in the user's units; ``info["model"]`` holds the
        declared :class:`QwiseModel` when it was built (over the scale-free
        twin of ``data`` when ``data`` is far from unit scale, see
        :class:`~cvxmetric.qwise.Scaling`; ``info["scaling"]`` is then set).
    """
    check_host_input(data.X, "X", "Qwise's exact (CVXPY) path")
    t0 = time.perf_counter()
    data_n, scaling = data.normalized()
    try:
        result = _solve_scale_free(data_n, reduce=reduce, init=scaling.init_in(init),
                                   warm_start=warm_start, solvers=solvers, tol=tol,
                                   max_rounds=max_rounds, verbose=verbose)
    except CertificateError:
        # a tiny scale-free hinge weight (data of 1e-30 under the trace):
        # the conic solvers return round-off around M = 0, whose
        # certificate they cannot close; M = 0 itself, with every
        # multiplier at its cap, is the fast solver's first certified point
        result = _zero_if_optimal(data_n)
        if result is None:
            raise
    result = scaling.result_out(result)
    result.time = time.perf_counter() - t0
    return result


def _zero_if_optimal(data):
    """``M = 0`` as a certified exact result when its certificate with the
    multipliers at their caps (``alpha = c_q``, the subgradient of every
    hinge active at ``M = 0``) passes, else None."""
    M = np.zeros_like(data.R, dtype=float)
    cert = data.certificate(M, np.asarray(data.c_q, dtype=float), solver="zero")
    if not cert.passed:
        return None
    return SolverResult(M=M, status=Status.OPTIMAL, objective=cert.objective, n_iter=0,
                        certificate=cert, method="exact",
                        info={"alpha": np.asarray(data.c_q, dtype=float),
                              "zero_certified": True})


def _solve_scale_free(data, *, reduce, init, warm_start, solvers, tol, max_rounds,
                      verbose):
    """:func:`solve_exact` on data already in scale-free units."""
    t0 = time.perf_counter()
    if reduce and init is None and warm_start is not None:
        init = warm_start(data)
    if not reduce or init is None:
        # no reduction asked for, or no guess to start it from
        return QwiseModel(data).solve(solvers=solvers, tol=tol, verbose=verbose)
    W, V = _initial_partition(data, init)
    sizes = []
    for _ in range(max_rounds):
        sizes.append(int(W.sum()))
        problem, M, con = _reduced_problem(data, W, V)

        def alpha_of(con=con, W=W, V=V):
            alpha = np.where(V, data.c_q, 0.0)
            if con is not None:
                alpha[W] = np.ravel(con.dual_value)
            return alpha

        def certify(name, version, opts, times, M=M, alpha_of=alpha_of):
            return data.certificate(
                M.value, alpha_of(), solver=name, solver_version=version,
                tolerances=opts, times=times,
            )

        try:
            cert, info = solve_certified(
                problem, certify, solvers=solvers, tol=tol, verbose=verbose
            )
        except SolverError:
            cert = None
        Mval = None if M.value is None else 0.5 * (M.value + M.value.T)
        if cert is not None:
            return SolverResult(
                M=Mval, status=info["status"], objective=cert.objective,
                n_iter=info["n_iter"], certificate=cert, method="exact",
                info={"alpha": alpha_of(), "attempts": info["attempts"],
                      "reduced": True, "margin_set_sizes": sizes},
                time=time.perf_counter() - t0,
            )
        if Mval is None:
            break
        # the partition was inconsistent: move the offenders to the margin set
        arg = data.margins(Mval)
        tiny = 1e-9 * max(1.0, float(np.max(np.abs(data.delta_q))))
        bad = (V & (arg < -tiny)) | (~W & ~V & (arg > tiny))
        if not np.any(bad):
            break
        W = W | bad
        V = V & ~bad
    result = QwiseModel(data).solve(solvers=solvers, tol=tol, verbose=verbose)
    result.info["margin_set_sizes"] = sizes
    result.time = time.perf_counter() - t0
    return result


# ---------------------------------------------------------------------------
# The declared problem (cvxmetric.model's contract)
# ---------------------------------------------------------------------------


class _QwiseDeclared(_ModelDeclared):
    """Eq. 8 / Eq. 11 as declared by :class:`QwiseModel` on the user's data."""

    def __init__(self, model):
        self.model = model
        data = model.data
        variables = {"M": model.M, "xi": model.xi}
        for key in ("xi_S", "xi_D"):
            if getattr(model, key) is not None:
                variables[key] = getattr(model, key)
        super().__init__(
            family="qwise", paper=PAPER,
            equation="Eq. 11" if data.pairs is not None else "Eq. 8",
            problem=model.problem, variables=variables, parameters=model.params,
            constraints=model.constraints, metric_key="M", data=data)

    def _family_certificate(self, M):
        parts = [self._dual("quadruplets")]
        for key in ("similar", "dissimilar"):
            if key in self.declared_constraints:
                parts.append(self._dual(key))
        alpha = None
        if all(p is not None for p in parts):
            alpha = np.concatenate([np.ravel(p) for p in parts])
        else:
            self._warn_no_multipliers()
        return self.data.certificate(M, alpha, **self._certificate_args())


@fill_doc
def declared_problem(data):
    """Eq. 8 / Eq. 11 exactly as printed, in the user's units, unsolved.

    The slack (epigraph) form of the hinges, as :class:`QwiseModel`
    declares it: variables ``M`` (symmetric, ``M >> 0``), ``xi``, and
    ``xi_S`` / ``xi_D`` with pairs; parameters ``C_q`` and, with pairs,
    ``C_p``, ``u``, ``l``; constraints ``quadruplets``, ``similar``,
    ``dissimilar``, ``psd``.  The certificate's dual bound uses the
    multipliers of those constraints from the last solve.

    Parameters
    ----------
    data : QwiseData
        In the user's units (not :meth:`~QwiseData.normalized`).

    {declared_returns_model}
    """
    check_instance(data, QwiseData, "data")
    return _QwiseDeclared(QwiseModel(data))

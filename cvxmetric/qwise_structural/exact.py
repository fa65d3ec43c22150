"""Qwise structural, exact: Eq. 16 of Law, Thome and Cord (2016) in CVXPY.

* :func:`solve_exact` -- the closed form ``Omega(M) + C H(M)`` as one CVXPY
  problem (one slack per hinge), certified by its duality gap.
* :func:`declared_problem` -- that problem as printed, for the user
  (:mod:`cvxmetric.model`'s contract).
* :func:`solve_structural_enumerated` -- Eq. 16 with every 1-slack
  constraint written out (:func:`structural_constraints`): exponentially
  many, for tiny instances only; the reference that ties the closed form to
  Eq. 16.

The data, the oracle and the dual bound are in :mod:`._problem`.
"""

import itertools
import time

import cvxpy as cp
import numpy as np

from .._docs import fill_doc
from .._exact import SOLVERS, solve_certified
from .._linalg import project_psd
from .._settings import MAX_ENUMERATED
from .._validation import check_instance
from ..model import DeclaredProblem
from ..qwise.exact import PAPER, _sqdist_expr
from ..result import SolverResult
from ._problem import StructuralData, _omega_expr

__all__ = ["solve_exact", "declared_problem", "structural_constraints",
           "solve_structural_enumerated"]


def solve_exact(data, *, solvers=SOLVERS, tol=1e-9, verbose=False):
    """Eq. 16 through its closed form, as one CVXPY problem.

    ::

        minimise_{M PSD, s >= 0}  Omega(M) + C sum_t w_t s_t
        subject to  s_t >= 1 - 2 (d_j(M) - d_i(M))   for every term t = (x, i, j)

    with ``w_t = 1 / (|X| P_x N_x)`` and all distances at once as
    ``cp.sum(cp.multiply(Phi @ M, Phi), axis=1)``.  Certified: the hinge
    constraints' multipliers give the dual bound of
    :meth:`StructuralData.hinge_dual_bound`.

    Parameters
    ----------
    data : StructuralData
    solvers : sequence of str
        Clarabel first, SCS as fallback.
    tol : float
        Conic solver tolerance.
    verbose : bool

    Returns
    -------
    SolverResult
        ``method="exact"``; ``info["alpha"]`` the hinge multipliers.
    """
    check_instance(data, StructuralData, "data")
    t0 = time.perf_counter()
    # the declared problem itself (declared_problem), solved and certified
    declared = declared_problem(data)
    M, problem = declared.variables["M"], declared.problem
    con = declared.constraints["hinges"]

    def certify(name, version, opts, times):
        Mv = project_psd(M.value)
        upper = data.objective(Mv)
        bound = data.hinge_dual_bound(np.ravel(con.dual_value), Mv, upper)
        return data.certificate(Mv, bound, solver=name, solver_version=version,
                                tolerances=opts, times=times)

    cert, info = solve_certified(problem, certify, solvers=solvers, tol=tol,
                                 verbose=verbose)
    return SolverResult(
        M=project_psd(M.value), status=info["status"], objective=cert.objective,
        n_iter=info["n_iter"], certificate=cert, method="exact",
        info={"alpha": np.ravel(con.dual_value).copy(), "attempts": info["attempts"],
              "n_terms": int(con.shape[0])},
        time=time.perf_counter() - t0)


class _StructuralDeclared(DeclaredProblem):
    """Eq. 16 in its closed form, as printed, in the user's units
    (:func:`declared_problem`)."""

    def _family_objective(self, M):
        return self.data.objective(M)

    def _family_certificate(self, M):
        lam = self._dual("hinges")
        if lam is None:
            self._warn_no_multipliers()
            bound = -np.inf
        else:
            # the hinges' multipliers, made consistent with M where a hinge
            # is strictly active / inactive (hinge_dual_bound keeps the best)
            upper = self.data.objective(project_psd(M))
            bound = self.data.hinge_dual_bound(np.ravel(lam), M, upper)
        args = self._certificate_args()
        return self.data.certificate(M, bound, solver=args["solver"],
                                     times=args["times"])

    def _family_repair(self, M):
        # an interior-point M is PSD only to the solver's tolerance: its
        # projection is the point the exact path certifies
        if np.linalg.eigvalsh(M)[0] >= 0:
            return M
        return project_psd(M)

    def _update_parameters(self, values):
        # validated (ValueError naming C) before anything changes
        self.data = self.data.with_params(C=float(values["C"]))


@fill_doc
def declared_problem(data):
    """Eq. 16 as printed, in the user's units, unsolved.

    The 1-slack constraint set of Eq. 16 has one constraint per choice of
    rankings (exponentially many); its value at every ``M`` is the closed
    form ``Omega(M) + C H(M)`` (module docstring), declared as
    :func:`solve_exact` solves it::

        minimise_{M, s}  Omega(M) + C sum_t w_t s_t
        subject to  s_t >= 1 - 2 (d_j(M) - d_i(M))  (hinges),  s >= 0,
                    M PSD  (psd)

    with ``w_t = 1 / (|X| P_x N_x)`` and every distance at once.  Variables
    ``M`` (symmetric) and ``s``; parameter ``C``; constraints ``hinges``
    and ``psd``.  The certificate's dual bound
    (:meth:`StructuralData.hinge_dual_bound`) takes the multipliers of
    ``hinges`` from the last solve.

    Parameters
    ----------
    data : StructuralData

    {declared_returns_model}
    """

    check_instance(data, StructuralData, "data")
    d = data.n_features
    op = data.op
    Phi = op.X[op.i] - op.X[op.j]  # (n_pairs, d)
    i, j, w, _ = data.terms()
    # [declare:structural-closed-form]
    M = cp.Variable((d, d), symmetric=True, name="M")
    s = cp.Variable(len(i), nonneg=True, name="s")
    C = cp.Parameter(nonneg=True, value=data.C, name="C")
    dist = _sqdist_expr(M, Phi)  # all d_p = u_p^T M u_p at once
    cons = {"hinges": s >= 1 - 2 * (dist[j] - dist[i]), "psd": M >> 0}
    problem = cp.Problem(cp.Minimize(_omega_expr(data.regularizer, M)
                                     + C * (w @ s)), list(cons.values()))
    # [/declare]
    return _StructuralDeclared(
        family="qwise_structural", paper=PAPER, equation="Eq. 16", problem=problem,
        variables={"M": M, "s": s}, parameters={"C": C}, constraints=cons,
        metric_key="M", data=data)


def _weak_order_patterns(P, N):
    """Distinct ``y`` restricted to C^+ x C^- over every ranking with ties
    of ``P + N`` items: an array (n_patterns, P, N) of -1 / 0 / +1."""
    m = P + N
    levels = np.array(list(itertools.product(range(m), repeat=m)))  # (m^m, m)
    # y_ij = +1 when relevant i is ranked ahead of (lower level than) j
    y = np.sign(levels[:, None, P:] - levels[:, :P, None])  # (m^m, P, N)
    return np.unique(y.reshape(len(y), -1), axis=0).reshape(-1, P, N)


def structural_constraints(data, *, max_constraints=MAX_ENUMERATED):
    """Every 1-slack constraint of Eq. 16, written out from Eq. 17.

    For each query, every ranking (with ties) of its items is enumerated and
    reduced to its distinct ``y`` on ``C_x^+ x C_x^-``; ``psi`` is built
    literally from ``phi(x, c) = -u_c u_c^T``, ``Delta`` is the AUC loss
    (a tie counts 1/2).  A constraint is one choice of ranking per query, so
    their number is the product over queries: tiny instances only.

    Returns
    -------
    G : ndarray of shape (n_constraints, d, d)
        ``(1/|X|) sum_x (psi(x, y_x*) - psi(x, y_x))``.
    delta : ndarray of shape (n_constraints,)
        ``(1/|X|) sum_x Delta(y_x*, y_x)``.

    Raises
    ------
    ValueError
        When there would be more than ``max_constraints`` constraints.
    """
    Q = data.n_queries
    sizes = (data.n_relevant + data.n_irrelevant).astype(float)
    if float(np.sum(sizes * np.log(np.maximum(sizes, 1)))) > 64:
        raise ValueError("data: too many items per query to enumerate rankings.")
    op = data.op
    U = op.X[op.i] - op.X[op.j]
    per_query = []
    total = 1
    for x in range(Q):
        items = np.flatnonzero(data.item_query == x)
        rel = items[data.item_relevant[items]]
        irr = items[~data.item_relevant[items]]
        P, N = len(rel), len(irr)
        phi_rel = -np.einsum("pa,pb->pab", U[data.item_pair[rel]], U[data.item_pair[rel]])
        phi_irr = -np.einsum("pa,pb->pab", U[data.item_pair[irr]], U[data.item_pair[irr]])
        diff = phi_rel[:, None] - phi_irr[None, :]  # (P, N, d, d)

        def psi(y, diff=diff, P=P, N=N):
            return np.einsum("kij,ijab->kab", y, diff) / (P * N)

        Y = _weak_order_patterns(P, N)
        psi_star = psi(np.ones((1, P, N)))
        Gx = psi_star - psi(Y.astype(float))  # (n_patterns, d, d)
        Dx = np.sum((1 - Y) / 2.0, axis=(1, 2)) / (P * N)
        per_query.append((Gx, Dx))
        total *= len(Dx)
        if total > max_constraints:
            raise ValueError(
                f"data: Eq. 16 has more than max_constraints={max_constraints} "
                f"1-slack constraints here; use fewer queries or items.")
    combos = np.array(list(itertools.product(*[range(len(D)) for _, D in per_query])))
    G = sum(per_query[x][0][combos[:, x]] for x in range(Q)) / Q
    delta = sum(per_query[x][1][combos[:, x]] for x in range(Q)) / Q
    return G, delta


def solve_structural_enumerated(data, *, max_constraints=MAX_ENUMERATED,
                                solvers=SOLVERS, tol=1e-9):
    """Eq. 16 with every 1-slack constraint written out (tiny instances).

    The constraints of :func:`structural_constraints` in one CVXPY problem;
    its optimum equals :func:`solve_exact`'s (the closed form)
    and the cutting-plane solver's.  Certified: each constraint is a cut,
    so its multipliers give :meth:`StructuralData.dual_bound`.

    Returns
    -------
    SolverResult
        ``method="enumerated"``; ``info["n_constraints"]``.
    """
    t0 = time.perf_counter()
    G, delta = structural_constraints(data, max_constraints=max_constraints)
    d = data.n_features
    M = cp.Variable((d, d), symmetric=True, name="M")
    xi = cp.Variable(nonneg=True, name="xi")
    A = G.reshape(len(G), -1)
    con = A @ cp.vec(M, order="C") >= delta - xi
    problem = cp.Problem(cp.Minimize(_omega_expr(data.regularizer, M) + data.C * xi),
                         [con, M >> 0])

    def certify(name, version, opts, times):
        Mv = project_psd(M.value)
        lam = np.maximum(np.ravel(con.dual_value), 0.0)
        if lam.sum() > data.C:
            lam *= data.C / lam.sum()
        bound = data.dual_bound(np.tensordot(lam, G, axes=1), float(lam @ delta),
                                data.objective(Mv))
        return data.certificate(Mv, bound, solver=name, solver_version=version,
                                tolerances=opts, times=times)

    cert, info = solve_certified(problem, certify, solvers=solvers, tol=tol)
    return SolverResult(
        M=project_psd(M.value), status=info["status"], objective=cert.objective,
        n_iter=info["n_iter"], certificate=cert, method="enumerated",
        info={"n_constraints": len(delta), "xi": float(xi.value),
              "attempts": info["attempts"]},
        time=time.perf_counter() - t0)

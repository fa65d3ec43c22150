"""MMC, exact: Xing et al. (2002) as stated in Law et al. (2016), Eq. 2, in CVXPY.

The formulation (the specification every MMC solver answers to)::

    minimise_{M PSD}  sum_{(i,j) in S} D2_M(i, j)
    subject to        sum_{(i,j) in D} sqrt(D2_M(i, j)) >= 1

(RankDML's Eq. 1 is the constraint-based relative with ``D2 >= 1`` per
dissimilar pair and a Frobenius term; it is not this problem).  The
objective is ``<A_S, M>`` with the constant ``A_S = P_S^T P_S`` (``P_S``
the similar differences, one per row); each ``sqrt`` acts on an affine
expression of ``M``, so the constraint is a sum of concave functions
``>= 1``: DCP, and conic (second-order cones) after CVXPY's
canonicalisation.  ``diagonal=True`` uses ``M = diag(w)``, ``w >= 0``.

Changes from the paper, none of which changes the solution:

* **scaling** -- the declared problem is written in units where the data
  and the variable are O(1), for any scale of the features (the conic
  solvers' tolerances are absolute).  Each feature ``k`` is divided by its
  RMS difference over the similar pairs, ``s_k = sqrt(a_k / |S|)``
  (``a = diag(A_S)``), the objective is averaged over ``S`` and the
  constraint over ``D``::

      minimise_{Mt PSD}  <At, Mt>,        At = T A_S T / |S|  (unit diagonal)
      subject to         mean_D sqrt(phi_t^T Mt phi_t) >= 1,  phi_t = T phi

  with ``T = diag(1 / s_k)``; the solution is ``M = T Mt T / |D|^2``.
  Features with ``a_k = 0`` (constant within every similar pair) are left
  out of ``Mt``: for non-degenerate data no dissimilar pair varies along
  them either (:mod:`._problem`), so they change no distance and their
  rows of ``M`` are 0.  In the paper's units the optimum is typically
  1e-3 and ``M`` 1e-5, below the absolute tolerances of a first-order
  conic solver (SCS), and raw features of very different scales (wine)
  make the interior-point solve inaccurate;
* ``M`` is a symmetric variable with an explicit ``M >> 0`` (its dual is
  available); there are no hyperparameters, hence no ``cp.Parameter``;
* the returned point is post-processed: projected onto the PSD cone (it
  removes the solver's round-off negative eigenvalues) and scaled to
  ``g(M) = 1``, i.e. exactly feasible with objective ``r(M)``.

The certificate (:meth:`MMCData.certificate`) is computed from the primal
point alone -- objective ``f(M)``, the bound ``LB(sqrt(D2_M))`` derived in
:mod:`._problem`, feasibility -- so the solver's status and duals are
never trusted.
"""

import dataclasses
import time

import cvxpy as cp
import numpy as np

from .._backend import check_host_input
from .._exact import SOLVERS, solve_certified
from .._linalg import project_psd
from .._settings import FACE_MARGIN, FACE_REDUCE_ABOVE, FACE_RTOL
from .._trace import captured, record
from .._validation import check_instance
from ..model import DeclaredProblem
from ..result import Certificate, CertificateError, SolverError, Status
from ._problem import DEGENERATE_MSG, MMCData, mmc_result

__all__ = ["MMCModel", "solve_exact", "declared_problem", "PAPER"]

#: The paper, as :class:`~cvxmetric.model.DeclaredProblem` cites it (MMC is
#: Xing, Ng, Jordan, Russell: Distance metric learning, with application to
#: clustering with side-information (NIPS 2002), stated there as Eq. 2).
PAPER = ("Law, Thome, Cord: Learning a distance metric from relative "
         "comparisons between quadruplets of images (IJCV 2016), stating Xing, "
         "Ng, Jordan, Russell: Distance metric learning, with application to "
         "clustering with side-information (NIPS 2002)")


def _sqdist_expr(M, P):
    """Vectorised ``p^T M p`` for the rows of ``P`` (n_pairs, d)."""
    return cp.sum(cp.multiply(P @ M, P), axis=1)


class MMCModel:
    """Law et al. Eq. 2 (Xing's MMC) as the exact solver's CVXPY problem (scaled).

    This is the solver's internal model, in Jacobi-scaled and whitened units
    (module docstring); the problem as the paper prints it, in the user's
    units, is :func:`declared_problem`.

    Parameters
    ----------
    data : MMCData
    basis : ndarray of shape (r, k), optional
        Orthonormal columns in whitened coordinates: the *face-reduced*
        model ``Mw = basis Z basis^T`` with the variable ``Z`` (k, k), i.e.
        the same model on the projected differences ``psi @ basis``
        (:func:`solve_exact`).  Full only; default: the whole space.

    Attributes
    ----------
    problem : cvxpy.Problem
    M : cvxpy.Variable
        ``Mt`` of shape (r, r), symmetric (full), or ``wt`` of shape (r,),
        nonnegative (diagonal), in the scaled units of the module docstring.
    constraints : dict of cvxpy.Constraint
        ``dissimilar`` (``mean_D sqrt(...) >= 1``) and, full only, ``psd``.
    keep : ndarray of int, shape (r,)
        The features in the model (those with ``a_k > 0``).
    basis : ndarray of shape (r, k) or None
        The face of a reduced model (None: the declared model).
    feature_scale : ndarray of shape (r,)
        ``s_k``: ``M[keep][:, keep] = T Mt T / |D|^2``, ``T = diag(1 / s)``.
    """

    def __init__(self, data, basis=None):
        check_instance(data, MMCData, "data")
        if basis is not None:
            basis = np.asarray(basis, dtype=float)
            if data.diagonal or basis.ndim != 2 or \
                    basis.shape[0] != data.psi.shape[1] or basis.shape[1] < 1:
                raise ValueError(
                    f"basis: expected shape ({data.psi.shape[1]}, k) with "
                    f"k >= 1 for a full problem, got {basis.shape}.")
        self.data = data
        self.basis = basis
        D = data.dissimilar
        cons = {}
        if data.diagonal:
            # Jacobi units: a_k = 1 on the features some similar pair
            # varies along (for non-degenerate data no dissimilar pair
            # varies along the others)
            keep = np.flatnonzero(data.a > 0)
            Z2 = (data.Z_D * data.Z_D)[:, keep]  # (n_D, r)
            a = np.sum(data.Z_S[:, keep] ** 2, axis=0)
            rho = float(np.mean(np.sqrt(Z2.sum(axis=1))))
            M = cp.Variable(len(keep), nonneg=True, name="w")
            objective = a @ M
            d2 = (Z2 / rho ** 2) @ M  # (n_D,) affine in w
        else:
            keep = np.arange(data.psi.shape[1])
            psi = data.psi
            rho = float(np.mean(np.linalg.norm(psi, axis=1)))
            P = psi / rho  # whitened dissimilar differences, mean norm 1
            k = len(keep)
            if basis is not None:
                # tr(Mw) = tr(Z) and psi^T Mw psi = (basis^T psi)^T Z (...)
                P, k = P @ basis, basis.shape[1]
            M = cp.Variable((k, k), symmetric=True, name="M")
            objective = cp.trace(M)
            d2 = _sqdist_expr(M, P)
            cons["psd"] = M >> 0
        self.keep = keep
        self.rho = rho
        cons["dissimilar"] = cp.sum(cp.sqrt(d2)) / len(D) >= 1
        self.M = M
        self.constraints = cons
        self.problem = cp.Problem(cp.Minimize(objective), list(cons.values()))
        assert self.problem.is_dcp(), "MMC model must be DCP"

    def point(self):
        """The solver's point in the paper's units (``M`` or ``w``), or None.

        Projected onto the PSD cone (``w >= 0``) and scaled to ``g = 1``.
        """
        if self.M.value is None:
            return None
        data = self.data
        val = np.asarray(self.M.value, dtype=float) / self.rho ** 2
        if not np.all(np.isfinite(val)):
            return None
        if data.diagonal:
            xj = np.zeros(data.n_features)
            xj[self.keep] = np.maximum(val, 0.0)
            x = data.from_jacobi(xj)
        else:
            Mw = project_psd(0.5 * (val + val.T))
            if self.basis is not None:
                Mw = self.basis @ Mw @ self.basis.T
            x = data.from_white(Mw)
        if not data.g(x) > 0:
            return None
        return data.normalize(x)

    def solve(self, *, solvers=SOLVERS, tol=1e-9, verbose=False, bound_polish=None):
        """Solve; return a certified :class:`SolverResult`.

        Degenerate data (:attr:`MMCData.degenerate`) are not sent to a conic
        solver: the optimum is 0 and :meth:`MMCData.degenerate_solution`
        attains it; it is certified like any other point.

        Parameters
        ----------
        solvers : sequence of str
        tol : float
        verbose : bool
        bound_polish : callable, optional
            ``bound_polish(data, x) -> (bound, iterations)``: run (as a
            ``"bound"`` stage) when the plain bound at a solver's point
            leaves a gap (:func:`solve_exact`); without it the plain
            certificate judges the point.

        Raises
        ------
        CertificateError, SolverError
            From :func:`~cvxmetric._exact.solve_certified` when no solver
            yields a certified point.
        ValueError
            Naming ``X``, in place of a CertificateError (its ``__cause__``)
            whose reason is that no float64 matrix in the user's units
            carries the solution (:meth:`MMCData.check_representable`).
        """
        t0 = time.perf_counter()
        data = self.data
        if data.degenerate:
            cert = data.certificate(data.degenerate_solution(),
                                    solver="degenerate", times={})
            if cert.passed:
                return mmc_result(data, data.degenerate_solution(), cert,
                               Status.OPTIMAL, 0, "exact",
                               {"model": self, "degenerate": DEGENERATE_MSG},
                               time.perf_counter() - t0)
            # numerically borderline: let the conic solvers try

        def certify(name, version, opts, times):
            x = self.point()
            if x is None:  # no usable point: a certificate that cannot pass
                return Certificate.no_point(name, version, opts, times)
            def certificate(bound=None):
                return data.certificate(x, bound=bound, solver=name,
                                        solver_version=version, tolerances=opts,
                                        times=times)

            return _sharpened(data, x, certificate(), certificate, bound_polish)

        try:
            cert, info = solve_certified(self.problem, certify, solvers=solvers,
                                         tol=tol, verbose=verbose)
        except CertificateError as exc:
            x = self.point()
            if x is not None and np.all(np.isfinite(x)):
                try:
                    data.check_representable(x)
                except ValueError as cause:  # the reason no point certifies
                    raise cause from exc
            raise
        return mmc_result(data, self.point(), cert, info["status"], info["n_iter"],
                       "exact", {"model": self, "attempts": info["attempts"]},
                       time.perf_counter() - t0)


def _sharpened(data, x, cert, certificate, bound_polish):
    """The certificate ``cert`` of ``x``, its bound sharpened when it leaves a
    gap and ``bound_polish`` is given.

    ``certificate(bound)`` is the (pure) certificate of ``x`` with the bound
    ``max(bound, LB(sqrt(D2_x)))``; ``cert`` is ``certificate(None)``.  The
    bound at ``u = sqrt(D2_x)`` inherits the first-order error of a conic
    solver's ``x``; any ``u > 0`` gives a valid bound, so when the gap is not
    negligible a better ``u`` comes from ``bound_polish(data, x) -> (bound,
    iterations)`` (:func:`cvxmetric.mmc.fast.bound_polish`) -- a solve in its
    own right, traced as a ``"bound"`` stage.  The point certified is still
    ``x``.
    """
    if bound_polish is None or not (cert.rel_gap > 1e-2 * cert.tol_gap
                                    and cert.max_violation <= cert.tol_feas):
        return cert
    t0 = time.perf_counter()
    before = cert.rel_gap
    with captured():  # the short run is this stage's work, not a stage of its own
        bound, n_iter = bound_polish(data, x)
    tightened = bound > cert.dual_bound
    if tightened:
        cert = _polished(certificate(bound))
    record("bound polish", "bound", iterations=n_iter,
           seconds=time.perf_counter() - t0, gap=cert.rel_gap,
           status="tightened" if tightened else "no better bound",
           why=f"the bound at the point left gap {before:.2g}")
    return cert


def _polished(cert):
    """``cert``, marked as bounded by a polished dual point."""
    cert.tolerances["bound"] = "polished"
    return cert


def _face_solve(data, warm_start, solve):
    """Certified solution on the face of a fast solution, or ``None``.

    The optimal ``M`` of MMC is typically of low rank (3 of 61 whitened
    directions on raw digits); the interior-point solve of the declared
    model, whose every dissimilar pair couples all ``r (r + 1) / 2`` entries
    of ``Mw``, costs ``O((r^2 + |D|)^3)`` per iteration.  The fast solution
    ``warm_start(data)`` gives the face: the top eigenvectors ``V_k`` of its
    ``Mw`` (eigenvalues above :data:`FACE_RTOL` of the largest), widened by
    a margin.  The model with ``Mw = V_k Z V_k^T`` is :class:`MMCModel` on
    ``psi @ V_k``, solved by ``solve(model)``.  Its point is a feasible
    point of the declared problem and is certified *on the declared
    problem*: the bound ``LB(u)`` takes ``lambda_max`` over the whole
    whitened space, so a face that misses the optimum cannot pass.  When it
    does not pass, the face is doubled, up to the whole space (``None``:
    the caller solves the declared model).
    """
    t0 = time.perf_counter()
    warm = warm_start(data)
    lam, V = np.linalg.eigh(data.to_white(warm.M))
    lam, V = lam[::-1], V[:, ::-1]
    r = lam.size
    if not (np.all(np.isfinite(lam)) and lam[0] > 0):
        return None
    rank = int(np.sum(lam > FACE_RTOL * lam[0]))
    k = min(r, max(2 * rank, rank + FACE_MARGIN))
    tried = []
    while k < r:
        try:
            res = solve(MMCModel(data, basis=V[:, :k]))
        except SolverError as exc:
            tried.append({"k": k, "error": type(exc).__name__})
            k = min(r, 2 * k)
            continue
        info = dict(res.info)
        info["face"] = {"k": k, "r": r, "fast_rank": rank, "tried": tried,
                        "warm_status": warm.status, "warm_seconds": warm.time}
        return dataclasses.replace(res, info=info,
                                   time=time.perf_counter() - t0)
    return None


def solve_exact(data, *, warm_start=None, bound_polish=None, solvers=SOLVERS,
                tol=1e-9, verbose=False, reduce="auto"):
    """Certified exact solution of MMC (full or diagonal, as ``data`` says).

    The estimators and the problem collection call it through
    ``cvxmetric.formulations.formulation("mmc").solve_exact(data, ...)``,
    which hands over the ``warm_start`` and ``bound_polish`` that the
    registry declares (:func:`cvxmetric.mmc.fast.warm_start`,
    :func:`cvxmetric.mmc.fast.bound_polish`); called bare, it runs neither:
    the declared model is solved (no face reduction) and the plain
    certificate judges its point.

    Parameters
    ----------
    data : MMCData
    warm_start : callable, optional
        ``warm_start(data) -> SolverResult``: the fast solution whose face
        the face reduction solves on (``reduce``); without it the face
        reduction is skipped and the declared model is solved.
    bound_polish : callable, optional
        ``bound_polish(data, x) -> (bound, iterations)``: a short solve
        for a better dual point of the bound at the solver's point ``x``,
        run as a traced ``bound polish`` stage (kind ``"bound"``) when the
        plain bound leaves a gap (unless it is already 100 times inside
        the tolerance); without it the plain certificate stands.
    solvers : sequence of str
        Clarabel first, SCS as fallback.
    tol : float
        Solver tolerance.
    verbose : bool
    reduce : {"auto", True, False}
        Solve on the face of ``warm_start``'s solution first (full ``M``
        only; the point is certified on the declared problem, and the
        declared model is solved when the face does not certify):
        ``"auto"`` when the dense constraint block has more than
        :data:`FACE_REDUCE_ABOVE` coefficients and ``warm_start`` is given,
        ``True`` always (``warm_start`` is then required).

    Returns
    -------
    SolverResult
        ``M`` in the paper's units with ``g(M) = 1`` (so ``objective =
        r(M)``); ``info["scale_free"] = r(M)``, ``info["model"]`` the
        :class:`MMCModel` solved (its ``problem`` and variable; a reduced
        model has ``basis``), ``info["face"]`` the face's size when a
        reduced model was solved, ``info["w"]`` the diagonal when
        ``data.diagonal``, ``info["degenerate"]`` the reason when the data
        are degenerate.
    """
    _check_host(data)
    if reduce not in ("auto", True, False):
        raise ValueError(f"reduce: expected 'auto', True or False, got {reduce!r}.")
    if reduce is True and warm_start is None:
        raise ValueError("warm_start: reduce=True solves on the face of a fast "
                         "solution; give warm_start (e.g. through "
                         "formulation('mmc').solve_exact).")

    def solve(model):
        return model.solve(solvers=solvers, tol=tol, verbose=verbose,
                           bound_polish=bound_polish)

    if not data.diagonal and not data.degenerate and warm_start is not None \
            and reduce is not False:
        r = data.psi.shape[1]
        if reduce is True or r * (r + 1) // 2 * data.n_dissimilar > FACE_REDUCE_ABOVE:
            res = _face_solve(data, warm_start, solve)
            if res is not None:
                return res
    return solve(MMCModel(data))


# ---------------------------------------------------------------------------
# The declared problem (cvxmetric.model's contract)
# ---------------------------------------------------------------------------


class _MMCDeclared(DeclaredProblem):
    """Eq. 2 as printed, in the user's units.

    ``bound_polish`` (:func:`declared_problem`) sharpens the bound at the
    point the certified solve accepts, as a traced stage of that solve; the
    bound it found is kept (``_polished_at``: the point and the bound) so
    that :meth:`certificate` of that point, itself pure, is the one the
    solve judged.
    """

    bound_polish = None
    _polished_at = None

    def solve_certified(self, *, solvers=SOLVERS, tol=1e-9):
        """:meth:`DeclaredProblem.solve_certified`, its bound polished by
        ``bound_polish`` where the plain bound at its point leaves a gap.

        When no solver's point of the problem as printed passes its
        certificate -- on raw features the optimum is about 1e-3 and ``M``
        1e-5, below the conic solvers' absolute tolerances, and features of
        very different scales (raw wine) leave the interior-point point far
        off -- the declared problem takes the exact path's point
        (:func:`solve_exact`: the same problem in scaled units, the same
        solvers and tolerance), feasible for the problem as printed and
        certified on it.  A problem the user modified is solved as printed
        only.
        """
        # a solve establishes its own point's bound, not an earlier one's
        self._polished_at = None
        try:
            return super().solve_certified(solvers=solvers, tol=tol)
        except CertificateError:
            if self._modified:
                raise
            result = solve_exact(self.data, solvers=solvers, tol=tol,
                                 bound_polish=self.bound_polish)
        x = _point_key(self.data.as_variable(result.M))
        self.variable.value = x
        cert = result.certificate
        if cert.tolerances.get("bound") == "polished":
            self._polished_at = (x, cert.dual_bound)
        return self.objective()

    def _family_objective(self, M):
        # f(M) = sum_S D2_M, as printed (not scaled to g = 1)
        return self.data.f(self.data.as_variable(M))

    def _family_certificate(self, M, bound=None):
        # the bound LB(sqrt(D2_M)) needs no multipliers; the certificate is
        # of M scaled to g(M) = 1 (MMCData.certificate).  At the point the
        # certified solve accepted, the bound its polish found (any u > 0
        # gives a valid bound) -- nothing is solved here
        x = self.data.as_variable(M)
        key = _point_key(x)
        if bound is None and self._polished_at is not None \
                and np.array_equal(key, self._polished_at[0]):
            bound = self._polished_at[1]
        cert = self.data.certificate(x, bound=bound, **self._certificate_args())
        return cert if bound is None else _polished(cert)

    def _family_sharpen(self, M, cert):
        # the certified path's polish (a "bound" stage of the solve), kept
        # for certificate(M): u = sqrt(D2_M) carries the solver's error to
        # first order, a short fast run started at M finds a better u
        x = self.data.as_variable(M)
        cert = _sharpened(self.data, x, cert,
                          lambda bound: self._family_certificate(M, bound),
                          self.bound_polish)
        polished = cert.tolerances.get("bound") == "polished"
        self._polished_at = (_point_key(x), cert.dual_bound) if polished else None
        return cert

    def _family_repair(self, M):
        # an interior-point M of Eq. 2 is PSD only to the solver's
        # tolerance (MMC's optima are low-rank: eigenvalues of -1e-7 times
        # the largest are common on raw data): its projection, scaled to
        # g = 1, is feasible -- the point the certificate is of, as in the
        # exact path
        if self.diagonal:
            x = np.maximum(np.diag(M), 0.0)
        elif np.linalg.eigvalsh(M)[0] >= 0:
            return M
        else:
            x = project_psd(M)
        x = self.data.normalize(x)
        return np.diag(x) if self.diagonal else x


def _point_key(x):
    """``x`` as :meth:`MMCData.certificate` reads it (``M`` symmetrised)."""
    return x if x.ndim == 1 else 0.5 * (x + x.T)


def _check_host(data):
    """The CVXPY path runs on NumPy: refuse data on another namespace by name."""
    if isinstance(data, MMCData):
        check_host_input(data.X, "data", "MMC's exact solve (CVXPY)")


def declared_problem(data, *, bound_polish=None):
    """Eq. 2 exactly as printed, in the user's units, unsolved::

        minimise_{M}  sum_S D2_M(i, j)
        subject to    sum_D sqrt(D2_M(i, j)) >= 1,   M PSD

    with ``D2_M = rowsum((Phi M) * Phi)`` over the difference vectors
    ``Phi`` of the pairs (``Phi_S``, ``Phi_D``).  Full: the variable ``M``
    (symmetric) and the constraints ``dissimilar`` and ``psd``
    (``M >> 0``).  Diagonal (``data.diagonal``): the variable ``w``,
    ``M = diag(w)``, ``D2 = (Phi * Phi) w``, and the constraints
    ``dissimilar`` and ``nonneg`` (``w >= 0``).  No hyperparameters.

    Unlike :class:`MMCModel` (the exact solver's Jacobi-scaled, whitened
    model) nothing is scaled: on raw data the optimum and ``M`` can be tiny
    (1e-3, 1e-5), below the absolute tolerances of a first-order solver.

    Parameters
    ----------
    data : MMCData
    bound_polish : callable, optional
        ``bound_polish(data, x) -> (bound, iterations)``
        (:func:`cvxmetric.mmc.fast.bound_polish`; the estimators'
        ``declared_problem`` pass the registry's): the certified solve
        (``solve()`` / ``solve_certified()``) runs it as a ``bound polish``
        stage when the plain bound at its point leaves a gap, as
        :func:`solve_exact` does.

    Returns
    -------
    DeclaredProblem
        See :mod:`cvxmetric.model`; the certificate bounds the optimum from
        the primal point alone (:meth:`MMCData.certificate`) and solves
        nothing: at the point the certified solve accepted, its bound is
        the one that solve established (polished or not), elsewhere the
        plain bound ``LB(sqrt(D2_M))``.
    """
    check_instance(data, MMCData, "data")
    _check_host(data)
    # [declare:mmc-eq2]
    X, S, D = data.X, data.similar, data.dissimilar
    P_S = X[S[:, 0]] - X[S[:, 1]]  # (n_S, d)
    P_D = X[D[:, 0]] - X[D[:, 1]]  # (n_D, d)
    d = data.n_features
    cons = {}
    if data.diagonal:
        var = cp.Variable(d, name="w")
        d2_S = (P_S * P_S) @ var
        d2_D = (P_D * P_D) @ var
        cone = ("nonneg", var >= 0)
        key = "w"
    else:
        var = cp.Variable((d, d), symmetric=True, name="M")
        d2_S = _sqdist_expr(var, P_S)
        d2_D = _sqdist_expr(var, P_D)
        cone = ("psd", var >> 0)
        key = "M"
    cons["dissimilar"] = cp.sum(cp.sqrt(d2_D)) >= 1
    cons[cone[0]] = cone[1]
    problem = cp.Problem(cp.Minimize(cp.sum(d2_S)), list(cons.values()))
    # [/declare]
    dp = _MMCDeclared(
        family="mmc", paper=PAPER,
        equation="Eq. 2 (diagonal)" if data.diagonal else "Eq. 2",
        problem=problem, variables={key: var}, parameters={},
        constraints=cons, metric_key=key, data=data)
    dp.bound_polish = bound_polish
    return dp

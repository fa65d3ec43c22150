"""A certificate for any solved CVXPY problem: a rigorous bound on its optimum.

For the conic form ``min 1/2 x^T P x + c^T x + d`` s.t. ``A x + s = b``,
``s in K`` that CVXPY hands its solvers (:mod:`cvxmetric._conic`), every
``y`` in the dual cone ``K*`` and every point ``x0`` give, for each feasible
``x`` (convexity of the quadratic, then ``y^T s >= 0``)::

    f(x) >= d - 1/2 x0^T P x0 - b^T y + r^T x,     r = P x0 + c + A^T y.

So ``p* >= d - 1/2 x0^T P x0 - b^T y + inf_{x in B} r^T x`` for any box
``B`` that holds an optimal point.  The solver's dual is put exactly into
``K*`` (its small violations are repaired, not trusted), which leaves a
small residual ``r``; the box comes from the problem's own data
(:class:`cvxmetric._bounds.BoundSystem`: its constraints, and the level set
``f <= U`` of the objective), from a radius the user states, or is
missing -- then there is no bound and the certificate does not pass.  A
second bound corrects the dual instead, so that ``r = 0`` to rounding
(:class:`_Closer`), and pays for the correction's small departure from
``K*`` over the box of the cones' slacks (``lambda_min(Y') tr S`` for a
PSD block); the better of the two is reported.  This is how verified SDP
bounds are computed (Jansson, Chaykin and Keil,
"Rigorous error bounds for the optimal value in semidefinite
programming"; Neumaier and Shcherbina, "Safe bounds in linear and
mixed-integer linear programming").

The level ``U`` need not be known to exceed the optimum: writing ``L(U)``
for the bound over the box of the level set ``U`` (non-increasing in
``U``), any ``V <= L(V)`` is a valid lower bound (were ``p* < V``, then
``p* >= L(p*) >= L(V) >= V``), and ``V = min(U, L(U))`` is one for every
``U``.
"""

import dataclasses
import math
import time
import weakref
from dataclasses import dataclass, field

import cvxpy as cp
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sp_linalg
from scipy.linalg import cho_factor, cho_solve

from ._bounds import BoundSystem
from ._conic import (
    SUPPORTED_SOLVERS,
    conic_form,
    diagonal_rows,
    form_of,
    into_dual_cone,
    into_dual_cone_block,
    smat,
)
from ._settings import BOUND_DENSE_MAX, CLOSE_ROUNDS
from ._tolerances import EXACT_GAP, FEASIBILITY
from .result import Certificate, SolverError

__all__ = ["ProblemCertificate", "certified_solve", "certify", "conic_solve"]

#: The conic solution of the last solve that went through :func:`conic_solve`,
#: per problem: ``(form, x, y, snapshot)``, ``form`` a function that builds
#: the :class:`~cvxmetric._conic.ConicForm` (:func:`~cvxmetric._conic.form_of`).
_KEPT = weakref.WeakKeyDictionary()

#: The last certificate :func:`certify` computed, per problem, with what it
#: was of: ``(key, certificate)`` (:func:`_same_key`).
_JUDGED = weakref.WeakKeyDictionary()


@dataclass
class ProblemCertificate(Certificate):
    """The certificate of a point of any CVXPY problem (:func:`certify`).

    Besides :class:`~cvxmetric.Certificate`'s fields, in the problem's own
    sense (for a maximisation ``dual_bound`` is an upper bound and
    ``gap = dual_bound - objective``):

    Attributes
    ----------
    sense : str
        ``"minimize"`` or ``"maximize"``.
    violations : dict
        The largest violation of each constraint at the point, in the
        user's units (CVXPY's ``violation()``; a PSD constraint's is the
        most negative eigenvalue), keyed ``"<index>: <constraint>"``; the
        variables' own attributes (``nonneg=True``, ``PSD=True``) are
        ``"<name> (attribute)"``.
    radius : float
        Euclidean norm of the farthest point of the box the bound rests on,
        over the coordinates whose residual is not zero (``inf``: none).
    radius_source : str
        Where that box comes from.
    dual_source : str
        Where the dual vector came from.
    message : str
        What is missing when no bound could be stated.
    """

    sense: str = "minimize"
    violations: dict = field(default_factory=dict)
    radius: float = np.inf
    radius_source: str = ""
    dual_source: str = ""
    message: str = ""


def conic_solve(problem, solver="CLARABEL", *, verbose=False, **options):
    """Solve ``problem`` as ``problem.solve(solver=solver, **options)`` does,
    keeping the solver's conic solution for :func:`certify`.

    Returns
    -------
    float
        ``problem.value``.
    """
    solver = str(solver).upper()
    data, chain, inverse = problem.get_problem_data(solver, solver_opts=dict(options))
    start = time.perf_counter()
    raw = chain.solve_via_data(problem, data, False, verbose, dict(options))
    problem._solve_time = time.perf_counter() - start
    problem.unpack_results(raw, chain, inverse)
    x, y = _raw_xy(raw)
    if x is not None and y is not None and solver in SUPPORTED_SOLVERS:
        # the conic form is built only if a certificate asks for it
        _KEPT[problem] = (form_of(problem, data, inverse, solver), x, y,
                          _snapshot(problem))
    return problem.value


def _raw_xy(raw):
    """``(x, y)`` of a Clarabel or SCS answer (``None`` where absent)."""
    if isinstance(raw, dict):
        x, y = raw.get("x"), raw.get("y")
    else:
        x, y = getattr(raw, "x", None), getattr(raw, "z", None)
    if x is None or y is None:
        return None, None
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        return None, None
    return x, y


def _snapshot(problem):
    """The values a kept conic solution belongs to."""
    return [None if v.value is None else np.array(v.value, copy=True)
            for v in problem.variables()] + [
        None if p.value is None else np.array(p.value, copy=True)
        for p in problem.parameters()]


def _same_snapshot(a, b):
    return len(a) == len(b) and all(
        (u is None and v is None) or (u is not None and v is not None
                                      and u.shape == v.shape and np.array_equal(u, v))
        for u, v in zip(a, b))


def certified_solve(problem, solver="CLARABEL", *, radius=None, tol_gap=EXACT_GAP,
                    tol_feas=FEASIBILITY, **options):
    """:func:`conic_solve`, then :func:`certify`: ``(value, certificate)``."""
    value = conic_solve(problem, solver, **options)
    return value, certify(problem, radius=radius, tol_gap=tol_gap, tol_feas=tol_feas)


def certify(problem, *, radius=None, tol_gap=EXACT_GAP, tol_feas=FEASIBILITY):
    """Certify the point a solved CVXPY problem holds, without trusting the
    solver: the objective recomputed at the variables' values, every
    constraint's violation, and a valid bound on the optimum.

    The bound needs a dual vector of the conic form: the solver's own when
    the last solve went through :func:`conic_solve` (as every solve of the
    package does), otherwise one computed by Clarabel on the conic data
    (one extra solve; recorded in ``dual_source``).  It needs a box holding
    an optimal point, found in this order: the problem's constraints and
    the level set of its objective, then ``radius``; without one it states
    no bound and does not pass.

    Parameters
    ----------
    problem : cvxpy.Problem
        Solved: every variable has a value (any status, any solver).
    radius : float or dict, optional
        A bound the user vouches for: every entry of every variable (a
        float), or of the variables given (``{variable: bound}``), is at
        most this in absolute value at some optimal point.
    tol_gap, tol_feas : float
        What :attr:`~cvxmetric.Certificate.passed` judges the relative gap
        and the violation (relative to ``max(1, |objective|)``) against.

    Returns
    -------
    ProblemCertificate

    Raises
    ------
    ValueError
        ``problem`` is not a CVXPY problem, is not DCP, or has a variable
        with no value; ``radius`` is not positive and finite.
    """
    _check_problem(problem)
    bounds = _user_radius(problem, radius)
    # a certified solve has judged this very point already (the declared
    # problem's solve, then its certificate()): the same answer, not again
    key = (_KEPT.get(problem), _snapshot(problem), tuple(sorted(bounds.items())),
           tol_gap, tol_feas)
    judged = _JUDGED.get(problem)
    if judged is not None and _same_key(judged[0], key):
        return dataclasses.replace(judged[1])
    started = time.perf_counter()
    objective = float(np.asarray(problem.objective.value, dtype=float).reshape(-1)[0])
    violations = _violations(problem)
    form, x0, y, dual_source = _dual(problem)
    names = {v.id: v.name() for v in problem.variables()}
    cert = _bound(form, x0, y, objective, bounds, radius is not None, names)
    elapsed = time.perf_counter() - started
    out = _certificate(problem, form, objective, violations, cert, dual_source,
                       tol_gap, tol_feas, elapsed)
    _JUDGED[problem] = (key, out)
    return dataclasses.replace(out)


def _same_key(a, b):
    """The same kept dual (the same object), values, radius and tolerances."""
    return (a[0] is b[0] and _same_snapshot(a[1], b[1]) and a[2:] == b[2:])


def _check_problem(problem):
    if not isinstance(problem, cp.Problem):
        raise ValueError(f"problem: expected a cvxpy.Problem, got "
                         f"{type(problem).__name__}.")
    if not problem.is_dcp():
        raise ValueError("problem: not DCP; only convex problems have a dual bound.")
    missing = [v.name() for v in problem.variables() if v.value is None]
    if missing:
        raise ValueError(f"problem: variable(s) {', '.join(missing[:5])} have no "
                         f"value; solve the problem first.")


def _user_radius(problem, radius):
    """``{variable id: bound}`` from ``radius``."""
    if radius is None:
        return {}
    items = (radius.items() if isinstance(radius, dict)
             else [(v, radius) for v in problem.variables()])
    out = {}
    for var, value in items:
        if not isinstance(var, cp.Variable):
            raise ValueError("radius: keys must be the problem's cvxpy variables.")
        value = float(value)
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"radius: expected a positive finite bound, got {value!r}.")
        out[var.id] = value
    return out


def _violations(problem):
    """``{label: largest violation}`` of the constraints and attributes."""
    out = {}
    for k, con in enumerate(problem.constraints):
        out[f"{k}: {_short(con)}"] = _worst(con)
    for var in problem.variables():
        for con in var.domain:
            out[f"{var.name()} (attribute)"] = max(
                out.get(f"{var.name()} (attribute)", 0.0), _worst(con))
    return out


def _short(con):
    text = str(con)
    return text if len(text) <= 60 else text[:57] + "..."


def _worst(con):
    try:
        v = con.violation()
    except (ValueError, TypeError, AttributeError):
        return np.inf
    v = np.asarray(v, dtype=float)
    return float(np.max(v)) if v.size else 0.0


def _dual(problem):
    """``(form, x0, y, source)``: the kept conic solution, or one Clarabel
    computes on the conic data."""
    kept = _KEPT.get(problem)
    if kept is not None and _same_snapshot(kept[3], _snapshot(problem)):
        form, x, y = kept[0](), kept[1], kept[2]
        return form, x, y, f"{form.solver}'s dual of this solve"
    form, data, chain, _ = conic_form(problem, "CLARABEL")
    from ._exact import solver_options

    opts = solver_options("CLARABEL", 1e-9)
    try:
        raw = chain.solve_via_data(problem, data, False, False, opts)
    except Exception as exc:  # noqa: BLE001 - any solver failure: no dual
        raise SolverError(f"problem: no dual was kept and Clarabel could not "
                          f"compute one ({exc}).") from None
    x, y = _raw_xy(raw)
    if y is None:
        raise SolverError("problem: no dual was kept and Clarabel returned none.")
    return form, x, y, "computed by Clarabel on the conic data (no dual was kept)"


def _bound(form, x0, y, objective, user_bounds, user_given, names):
    """The lower bound on the conic optimum (see the module docstring): the
    better of :func:`_box_bound` and :func:`_deficit_bound`."""
    y = into_dual_cone(y, form)
    # the point the quadratic is linearised at (any point gives a valid bound)
    xq = None if form.P is None else (np.zeros(form.n) if x0 is None else x0)
    lo, hi = _start_box(form, user_bounds)
    conic_value = form.sense * objective
    U = conic_value if np.isfinite(conic_value) else np.inf
    system = BoundSystem(form)
    start = lo, hi
    lo, hi = system.box(U, *start)
    found = [_box_bound(form, xq, y, lo, hi), _deficit_bound(form, xq, y, lo, hi, U)]
    if not any(f.finite for f in found) and x0 is not None:
        # what propagation and the multipliers left open: probe from x0
        lo, hi = system.box(U, *start, witness=x0)
        found = [_box_bound(form, xq, y, lo, hi), _deficit_bound(form, xq, y, lo, hi, U)]
    best = max(found, key=lambda f: f.value)
    if not best.finite:
        return _Found(-np.inf, np.inf, "", found[0].missing,
                      _missing_message(form, found[0].missing, names))
    value = min(U, best.value) if np.isfinite(U) else best.value
    source = ("the problem's constraints and the level set of its objective at "
              f"{conic_value:.6g}" + (", with the radius given" if user_given else "")
              + "; " + best.how)
    return _Found(float(value), best.radius, source)


@dataclass
class _Found:
    value: float                    # a lower bound (-inf: none)
    radius: float
    how: str                        # what it rests on
    missing: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    message: str = ""               # what is missing, for the user

    @property
    def finite(self):
        return bool(np.isfinite(self.value))


def _dual_value(form, xq, y):
    """``d - 1/2 xq^T P xq - b^T y``."""
    quad = 0.0 if xq is None else 0.5 * float(xq @ (form.P @ xq))
    return form.offset - quad - math.fsum(form.b * y)


def _box_bound(form, xq, y, lo, hi):
    """``y`` in ``K*``; its residual ``r`` over the box of ``x``."""
    r, _ = _residual(form, xq, y)
    term, missing = _residual_term(r, lo, hi)
    if missing.size:
        return _Found(-np.inf, np.inf, "", missing)
    needed = r != 0
    radius = float(np.sqrt(np.sum(np.maximum(lo[needed] ** 2, hi[needed] ** 2))))
    return _Found(_dual_value(form, xq, y) + term, radius,
                  "the dual's residual bounded over the box of the variables")


def _deficit_bound(form, xq, y, lo, hi, target=np.inf):
    """The residual closed exactly (:class:`_Closer`), and what that costs:
    ``y'`` leaves ``K*`` a little, and ``<y'_k, s_k> >= -deficit_k`` over the
    box of each cone's ``s_k = b_k - A_k x`` (a PSD block: ``lambda_min(Y')
    tr S``), as verified SDP bounds do.  The cheap correction first, then
    the targeted one, each alternated with the projection on ``K*``
    (:data:`CLOSE_ROUNDS` times), until the bound is within a tenth of the
    package's gap of ``target``; the best bound is kept."""
    s_lo, s_hi = _slack_box(form, lo, hi)
    best = _Found(-np.inf, np.inf, "")
    goal = target - 0.1 * EXACT_GAP * max(1.0, abs(target))
    for targeted in (False, True):
        z = y
        for _ in range(CLOSE_ROUNDS):
            # the weights follow the multipliers: one a round left at zero
            # is not moved again
            closer = _Closer(form, xq, z, s_hi, targeted)
            if not closer.ready:
                break
            y2, r2, size = closer.close(z)
            with np.errstate(invalid="ignore"):
                r2 = np.where(np.abs(r2) <= 64 * np.finfo(float).eps * size, 0.0, r2)
            term, missing = _residual_term(r2, lo, hi)
            if missing.size:
                return _Found(-np.inf, np.inf, "", missing)
            deficit = sum(_block_deficit(form, blk, y2, s_lo, s_hi)
                          for blk in form.blocks)
            value = _dual_value(form, xq, y2) + term + deficit
            if value > best.value:
                best = _Found(value, _radius(lo, hi), "the dual made exactly "
                              "feasible, its cone deficit bounded over the box of "
                              "the cones' slacks")
            if deficit == 0 or best.value >= goal:
                return best
            z = into_dual_cone(y2, form)
    return best


def _radius(lo, hi):
    finite = np.isfinite(lo) & np.isfinite(hi)
    return float(np.sqrt(np.sum(np.maximum(lo[finite] ** 2, hi[finite] ** 2))))


def _move_costs(form, y, s_hi):
    """``(w, cheap)``: per multiplier, what moving it may cost the bound (the
    weight of the least-norm correction; ``inf``: it does not move), and
    whether that is nothing.  An equality's multiplier is free; an active
    inequality's may move by up to ``y_j`` at no cost (weight ``1 / y_j``);
    an inactive one's, or a cone's on its boundary, costs the reach of its
    slack (``inf`` where unbounded)."""
    scale = max(1.0, float(np.abs(y).max()))
    tiny = 1e-12 * scale
    w = np.full(form.b.size, np.inf)
    cheap = np.zeros(form.b.size, dtype=bool)
    for blk in form.blocks:
        part = slice(blk.start, blk.stop)
        yk, hk = y[part], s_hi[part]
        if blk.kind == "zero":
            w[part] = 1e-8 / scale
            cheap[part] = True
        elif blk.kind == "nonneg":
            active = yk > tiny
            w[part] = np.where(active, 1.0 / np.maximum(yk, tiny), hk / tiny)
            cheap[part] = active
        elif blk.kind == "psd":
            # the optimal dual is singular (complementary to M): any move may
            # leave the cone, at the trace's reach
            w[part] = np.sum(s_hi[diagonal_rows(blk, form.solver)]) / tiny
    return np.where(np.isfinite(w), np.maximum(w, 1e-300), np.inf), cheap


class _Closer:
    """Closes the residual ``r = P xq + c + A^T y`` exactly (to rounding).

    A column with a *singleton* row (a row whose only entry is in that
    column: ``x_k >= 0``, a PSD variable's own entry of its cone) is closed
    on the cheapest such row, one division per column.  The other columns
    -- with ``targeted``, also those whose singleton rows all cost
    something (a PSD variable's, whose multipliers sit on the cone's
    boundary) -- are closed first by the correction of least weighted norm,
    ``y += W^-1 A_u z`` with ``(A_u^T W^-1 A_u) z = -r_u`` (``A_u`` those
    columns: a small system)."""

    def __init__(self, form, xq, y, s_hi, targeted):
        self.form, self.xq = form, xq
        weights, cheap = _move_costs(form, y, s_hi)
        A = form.A.tocsr()
        own_row, self.own_val = _singleton_rows(A, weights)
        if targeted:
            costly = own_row >= 0
            costly[costly] = ~cheap[own_row[costly]]
            own_row[costly] = -1
        self.own_row = own_row
        self.closed = np.flatnonzero(own_row >= 0)
        self.open = np.flatnonzero(own_row < 0)
        self.ready = bool(self.open.size or self.closed.size) and (
            not targeted or self.open.size > 0)
        if self.open.size and self.ready:
            self.ready = self._factor(A, weights)

    def _factor(self, A, weights):
        inv = np.where(np.isfinite(weights), 1.0 / weights, 0.0)
        Au = A[:, self.open].tocsr()
        self.WAu = sp.diags(inv) @ Au
        moving = np.flatnonzero(inv > 0)
        try:
            if self.open.size <= BOUND_DENSE_MAX:
                # dense rows (a PSD variable's entries in every hinge): BLAS
                D = Au[moving].toarray()                         # (rows, open)
                gram = (D.T * inv[moving]) @ D
                gram[np.diag_indices_from(gram)] += 1e-14 * max(
                    float(np.abs(np.diag(gram)).max()), 1e-300)
                factor = cho_factor(gram)
                self.solve = lambda v: cho_solve(factor, v)
            else:
                gram = (Au.T @ self.WAu).tocsc()
                ridge = 1e-14 * max(float(np.abs(gram.diagonal()).max()), 1e-300)
                lu = sp_linalg.splu((gram + ridge * sp.eye(self.open.size)).tocsc())
                self.solve = lu.solve
        except (np.linalg.LinAlgError, RuntimeError, ValueError):
            return False
        return True

    def close(self, y):
        """``(y', r', size)``: ``y'`` with the residual closed, the residual
        left and the sum of its terms' magnitudes."""
        y2 = y.copy()
        if self.open.size:
            for _ in range(3):
                r, _ = _residual(self.form, self.xq, y2)
                step = self.solve(-r[self.open])
                if not np.all(np.isfinite(step)):
                    break
                y2 = y2 + self.WAu @ step
        rows = self.own_row[self.closed]
        for _ in range(2):
            r, _ = _residual(self.form, self.xq, y2)
            # rows are distinct per column: each division closes its column
            y2[rows] -= r[self.closed] / self.own_val[self.closed]
        r, size = _residual(self.form, self.xq, y2)
        return y2, r, size


def _singleton_rows(A, weights):
    """Per column, the cheapest finite-weight row whose only entry it holds
    (``-1``: none), and that entry.  Each row serves one column."""
    n = A.shape[1]
    counts = np.diff(A.indptr)
    rows = np.flatnonzero((counts == 1) & np.isfinite(weights))
    cols = A.indices[A.indptr[rows]]
    vals = A.data[A.indptr[rows]]
    own_row = np.full(n, -1)
    own_val = np.zeros(n)
    if rows.size:
        order = np.lexsort((weights[rows], cols))     # by column, cheapest first
        first = np.r_[True, cols[order][1:] != cols[order][:-1]]
        pick = order[first]
        own_row[cols[pick]] = rows[pick]
        own_val[cols[pick]] = vals[pick]
    return own_row, own_val


def _slack_box(form, lo, hi):
    """Interval bounds on ``s = b - A x`` over the box, with each cone's own
    sign constraints."""
    A = form.A.tocsr()
    Ap, An = A.maximum(0), A.minimum(0)
    with np.errstate(invalid="ignore"):
        lo_f, hi_f = np.where(np.isfinite(lo), lo, 0.0), np.where(np.isfinite(hi), hi, 0.0)
        ax_hi = Ap @ hi_f + An @ lo_f
        ax_lo = Ap @ lo_f + An @ hi_f
    inf_hi = (abs(Ap) @ ~np.isfinite(hi) + abs(An) @ ~np.isfinite(lo)) > 0
    inf_lo = (abs(Ap) @ ~np.isfinite(lo) + abs(An) @ ~np.isfinite(hi)) > 0
    s_hi = np.where(inf_lo, np.inf, form.b - ax_lo)
    s_lo = np.where(inf_hi, -np.inf, form.b - ax_hi)
    return s_lo, s_hi


def _block_deficit(form, blk, y, s_lo, s_hi):
    """A lower bound on ``<y_k, s_k>`` over ``s_k`` in the cone and its box
    (``0`` when ``y_k`` lies in ``K*``)."""
    yk = y[blk.start:blk.stop]
    lo, hi = s_lo[blk.start:blk.stop], s_hi[blk.start:blk.stop]
    if blk.kind == "zero":
        return 0.0                                 # s_k = 0
    if blk.kind == "nonneg":
        neg = yk < 0
        return float(np.sum(yk[neg] * hi[neg])) if neg.any() else 0.0
    if blk.kind == "psd":
        order = int(blk.param)
        lam = np.linalg.eigvalsh(smat(yk, order, form.solver))[0]
        if lam >= 0:
            return 0.0
        # lambda_min(Y) tr S
        return float(lam * np.sum(s_hi[diagonal_rows(blk, form.solver)]))
    if blk.kind == "soc":
        gap = yk[0] - np.linalg.norm(yk[1:])
        return 0.0 if gap >= 0 else float(gap * hi[0])
    inside = into_dual_cone_block(yk, blk)
    off = np.linalg.norm(yk - inside)
    if off == 0:
        return 0.0
    reach = np.sqrt(np.sum(np.maximum(lo ** 2, hi ** 2)))
    return float(-off * reach)


def _start_box(form, user_bounds):
    lo = np.full(form.n, -np.inf)
    hi = np.full(form.n, np.inf)
    for vid, bound in user_bounds.items():
        if vid in form.columns:
            start, stop = form.columns[vid]
            stop = form.n if stop is None else stop
            lo[start:stop] = -bound
            hi[start:stop] = bound
    return lo, hi


def _residual(form, x0, y):
    """``r = P x0 + c + A^T y`` and the sum of its terms' magnitudes."""
    r = form.c + form.A.T @ y
    size = np.abs(form.c) + abs(form.A).T @ np.abs(y)
    if form.P is not None and x0 is not None:
        r = r + form.P @ x0
        size = size + abs(form.P) @ np.abs(x0)
    return r, size


def _residual_term(r, lo, hi):
    """``inf_{lo <= x <= hi} r^T x`` and the coordinates that make it ``-inf``."""
    with np.errstate(invalid="ignore"):
        part = np.where(r > 0, r * lo, np.where(r < 0, r * hi, 0.0))
    missing = np.flatnonzero(~np.isfinite(part))
    return math.fsum(part[np.isfinite(part)]), missing


def _missing_message(form, missing, names):
    """What no bound covers: the user's variables by name, and how many
    coordinates of the variables CVXPY introduced for its atoms."""
    mine, theirs = [], 0
    for vid, (start, stop) in form.columns.items():
        stop = form.n if stop is None else stop
        count = int(np.sum((missing >= start) & (missing < stop)))
        if count and vid in names:
            mine.append(names[vid])
        elif count:
            theirs += count
    parts = []
    if mine:
        parts.append(f"variable(s) {', '.join(mine[:5])}")
    if theirs:
        parts.append(f"{theirs} coordinate(s) of the variables CVXPY introduced "
                     f"for the problem's atoms")
    advice = ("pass radius= (a bound on those variables at an optimal point) or add "
              "a constraint that bounds them" if mine else
              "add a constraint that bounds the atoms' arguments (a radius on the "
              "problem's own variables bounds them only through the constraints)")
    return (f"no bound: {' and '.join(parts)} are not bounded by the problem's "
            f"constraints and the level set of its objective; {advice}.")


def _certificate(problem, form, objective, violations, bound, dual_source,
                 tol_gap, tol_feas, elapsed):
    worst = max(violations.values(), default=0.0)
    if form.sense > 0:
        dual_bound, gap = bound.value, objective - bound.value
    else:
        dual_bound, gap = -bound.value, -bound.value - objective
    scale = max(1.0, abs(objective)) if np.isfinite(objective) else np.nan
    rel = abs(gap) / scale if np.isfinite(gap) else np.inf
    if not np.isfinite(dual_bound):
        gap = rel = np.inf
    stats = problem.solver_stats
    return ProblemCertificate(
        objective=objective, dual_bound=float(dual_bound), gap=float(gap),
        rel_gap=float(rel), max_violation=float(worst), min_eig=_min_eig(problem),
        solver=getattr(stats, "solver_name", "") or "", times={"certify": elapsed},
        tol_gap=tol_gap, tol_feas=tol_feas, scale=float(scale),
        sense="minimize" if form.sense > 0 else "maximize", violations=violations,
        radius=bound.radius, radius_source=bound.how, dual_source=dual_source,
        message=bound.message)


def _min_eig(problem):
    """Least eigenvalue over the PSD variables and PSD constraints (``nan``
    where there are none)."""
    mats = [v.value for v in problem.variables() if v.attributes.get("PSD")
            or v.attributes.get("NSD")]
    mats += [con.args[0].value for con in problem.constraints
             if isinstance(con, cp.constraints.PSD)]
    eigs = [np.linalg.eigvalsh(0.5 * (M + M.T))[0] for M in mats
            if M is not None and np.ndim(M) == 2]
    return float(min(eigs)) if eigs else np.nan

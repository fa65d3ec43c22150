"""The conic form CVXPY hands a solver, and what a certificate needs of it.

CVXPY compiles a problem to

    minimise  1/2 x^T P x + c^T x + d   subject to   A x + s = b,  s in K,

with ``K`` a product of cones in a fixed order: the zero cone (equalities),
the nonnegative orthant, second-order cones, PSD cones (a triangle of the
matrix, off-diagonal entries scaled by sqrt(2)), exponential cones, 3-d
power cones and (Clarabel's) generalized power cones.  This module reads that form (:func:`conic_form`), puts a
dual vector exactly into the dual cone ``K*`` (:func:`into_dual_cone`) and
states the linear inequalities every point of ``K`` satisfies
(:func:`cone_rows`), from which :mod:`cvxmetric._bounds` derives bounds on
``x``.
"""

import functools
from dataclasses import dataclass

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

__all__ = [
    "SUPPORTED_SOLVERS",
    "Block",
    "ConicForm",
    "cone_rows",
    "conic_form",
    "diagonal_rows",
    "form_of",
    "into_dual_cone",
    "into_dual_cone_block",
]

#: Solvers whose conic layout (and raw solution) this module reads.
SUPPORTED_SOLVERS = ("CLARABEL", "SCS")

_SQRT2 = np.sqrt(2.0)


@dataclass(frozen=True)
class Block:
    """One cone of ``K``: its kind, the rows ``start:stop`` of ``A``/``b``/``s``
    it holds and its parameter (the matrix order of a PSD cone, the
    exponent of a power cone)."""

    kind: str
    start: int
    stop: int
    param: float = 0.0
    alphas: tuple = ()


@dataclass
class ConicForm:
    """The conic data of one problem in one solver's layout.

    Attributes
    ----------
    P : sparse matrix of shape (n, n) or None
        Symmetric; ``None`` for a linear objective.
    c : ndarray of shape (n,)
    offset : float
        The objective's constant ``d``.
    A : sparse matrix of shape (m, n)
    b : ndarray of shape (m,)
    blocks : list of Block
    solver : str
        The layout (``"CLARABEL"`` or ``"SCS"``: the PSD triangle differs).
    columns : dict
        ``variable id -> (first column, size)`` of the variables CVXPY kept.
    lower, upper : ndarray of shape (n,) or None
        Bounds on ``x`` the solver takes apart from ``A`` (CVXPY passes
        them only to solvers that accept them).
    sense : int
        ``1`` when the user's problem minimises, ``-1`` when it maximises
        (CVXPY then minimises the negated objective).
    """

    P: object
    c: np.ndarray
    offset: float
    A: object
    b: np.ndarray
    blocks: list
    solver: str
    columns: dict
    lower: object = None
    upper: object = None
    sense: int = 1

    @property
    def n(self):
        return self.c.size


def conic_form(problem, solver, solver_opts=None):
    """``(form, data, chain, inverse)`` of ``problem`` compiled for ``solver``.

    The last three are CVXPY's own (``Problem.get_problem_data``), so that
    a caller can run the solver on ``data`` and unpack its answer.
    """
    data, chain, inverse = problem.get_problem_data(
        solver, solver_opts=dict(solver_opts or {}))
    return form_of(problem, data, inverse, solver)(), data, chain, inverse


def form_of(problem, data, inverse, solver):
    """A function of no argument that builds (once) the :class:`ConicForm` of
    CVXPY's ``data`` for ``solver``: a solve keeps it without paying for the
    form unless a certificate asks for it."""
    sense = -1 if isinstance(problem.objective, cp.Maximize) else 1
    offset = float(np.asarray(inverse[-1][cp.settings.OFFSET]).reshape(-1)[0])

    @functools.cache
    def build():
        P = data.get(cp.settings.P)
        if P is not None:
            P = sp.csr_array(P)
            if P.nnz == 0:
                P = None
        return ConicForm(
            P=P, c=np.asarray(data[cp.settings.C], dtype=float).ravel(), offset=offset,
            A=sp.csr_array(data[cp.settings.A]),
            b=np.asarray(data[cp.settings.B], dtype=float).ravel(),
            blocks=_blocks(data["dims"]), solver=solver,
            columns=_column_spans(data["param_prob"].var_id_to_col),
            lower=_bounds_or_none(data.get("lower_bounds")),
            upper=_bounds_or_none(data.get("upper_bounds")), sense=sense)

    return build


def _bounds_or_none(value):
    return None if value is None else np.asarray(value, dtype=float).ravel()


def _column_spans(starts):
    """``id -> (start, stop)`` from the variables' first columns (``stop`` is
    ``None`` for the last)."""
    order = sorted(starts.items(), key=lambda kv: kv[1])
    stops = [int(start) for _, start in order[1:]] + [None]
    return {vid: (int(start), stop) for (vid, start), stop in zip(order, stops)}


def _blocks(dims):
    """The cones of ``dims`` (a CVXPY ``ConeDims``) in the solvers' order."""
    blocks, at = [], 0

    def add(kind, size, param=0.0):
        nonlocal at
        if size:
            blocks.append(Block(kind, at, at + size, float(param)))
            at += size

    add("zero", int(dims.zero))
    add("nonneg", int(dims.nonneg))
    for size in dims.soc:
        add("soc", int(size))
    for order in dims.psd:
        add("psd", int(order) * (int(order) + 1) // 2, order)
    for _ in range(int(dims.exp)):
        add("exp", 3)
    for alpha in dims.p3d:
        add("pow", 3, alpha)
    for alphas in getattr(dims, "pnd", None) or ():
        # Clarabel's generalized power cone (x, z): prod x_i^a_i >= |z|, one z
        blocks.append(Block("pown", at, at + len(alphas) + 1, 0.0,
                            tuple(float(a) for a in alphas)))
        at += len(alphas) + 1
    return blocks


def svec_index(order, solver):
    """``(i, j)`` of the triangle entries of a PSD block, in ``solver``'s order
    (Clarabel: upper triangle by columns; SCS: lower triangle by columns)."""
    i, j = np.triu_indices(order)
    if solver == "SCS":
        i, j = j, i                       # lower triangle: (col, row) swapped
        key = np.lexsort((i, j))          # by column, then row
    else:
        key = np.lexsort((i, j))
    return i[key], j[key]


def diagonal_rows(blk, solver):
    """The rows of ``s`` (absolute) that hold a PSD block's diagonal."""
    i, j = svec_index(int(blk.param), solver)
    return blk.start + np.flatnonzero(i == j)


def smat(v, order, solver):
    """The symmetric matrix of a PSD block's vector ``v``."""
    i, j = svec_index(order, solver)
    scale = np.where(i == j, 1.0, 1.0 / _SQRT2)
    S = np.zeros((order, order))
    S[i, j] = v * scale
    S[j, i] = v * scale
    return S


def svec(S, solver):
    """Inverse of :func:`smat`."""
    i, j = svec_index(S.shape[0], solver)
    return S[i, j] * np.where(i == j, 1.0, _SQRT2)


# -- the dual cone ---------------------------------------------------------------


def into_dual_cone(y, form):
    """A copy of ``y`` that lies exactly in ``K*``, changed only where ``y``
    leaves it: zero-cone entries are free, the orthant, second-order and PSD
    cones (self-dual) are projected, an exponential or power cone's entries
    are raised along the cone's own recession directions until inside."""
    y = np.array(y, dtype=float, copy=True)
    for blk in form.blocks:
        y[blk.start:blk.stop] = into_dual_cone_block(y[blk.start:blk.stop], blk,
                                                     form.solver)
    return y


def into_dual_cone_block(part, blk, solver="CLARABEL"):
    """:func:`into_dual_cone` of one block's entries (a new array)."""
    part = np.array(part, dtype=float, copy=True)
    if blk.kind == "nonneg":
        np.maximum(part, 0.0, out=part)
    elif blk.kind == "soc":
        part = _project_soc(part)
    elif blk.kind == "psd":
        order = int(blk.param)
        w, V = np.linalg.eigh(smat(part, order, solver))
        part = svec((V * np.maximum(w, 0.0)) @ V.T, solver)
    elif blk.kind == "exp":
        part = _into_dual_exp(part)
    elif blk.kind == "pow":
        part = _into_dual_pow(part, blk.param)
    elif blk.kind == "pown":
        part = _into_dual_pown(part, np.asarray(blk.alphas))
    return part


def _project_soc(v):
    t, z = v[0], v[1:]
    nz = np.linalg.norm(z)
    if nz <= t:
        return v
    if nz <= -t:
        return np.zeros_like(v)
    a = 0.5 * (t + nz)
    return np.concatenate(([a], a * z / nz))


def _into_dual_exp(v):
    """Into K*_exp = cl{(u, v, w): u < 0, -u exp(v / u) <= e w}."""
    u, vv, w = v
    if u < 0:
        with np.errstate(over="ignore"):
            need = -u * np.exp(vv / u - 1.0)
        if np.isfinite(need):
            return np.array([u, vv, max(w, need)])
        return np.zeros(3)
    # the boundary u = 0: v, w >= 0
    return np.array([0.0, max(vv, 0.0), max(w, 0.0)])


def _into_dual_pow(v, alpha):
    """Into the dual power cone (u/a)^a (v/(1-a))^(1-a) >= |w|, u, v >= 0."""
    u, vv, w = max(v[0], 0.0), max(v[1], 0.0), v[2]
    have = (u / alpha) ** alpha * (vv / (1 - alpha)) ** (1 - alpha)
    if have >= abs(w):
        return np.array([u, vv, w])
    if have > 0:
        k = abs(w) / have                 # the cone's function is 1-homogeneous
        return np.array([u * k, vv * k, w])
    return np.array([alpha * abs(w), (1 - alpha) * abs(w), w])


def _into_dual_pown(v, alphas):
    """Into the dual generalized power cone prod (u_i/a_i)^a_i >= |w|, u >= 0."""
    u, w = np.maximum(v[:-1], 0.0), v[-1]
    with np.errstate(divide="ignore"):
        have = float(np.exp(np.sum(alphas * np.log(u / alphas))))
    if have >= abs(w):
        return np.concatenate([u, [w]])
    if have > 0:
        return np.concatenate([u * abs(w) / have, [w]])   # 1-homogeneous
    return np.concatenate([alphas * abs(w), [w]])


# -- linear inequalities every point of K satisfies --------------------------


def cone_rows(form):
    """``(G, h)`` with ``G s <= h`` for every ``s`` in ``K`` (a sparse matrix
    over the rows of ``s``): equalities both ways, nonnegativity, and the
    linear consequences of each cone -- ``|z_i| <= t`` (second-order),
    ``2 |S_ij| <= S_ii + S_jj`` and ``S_ii >= 0`` (PSD), ``x + y <= z`` with
    ``y, z >= 0`` (exponential: ``y exp(x/y) >= y + x``), and weighted AM-GM
    ``|z| <= a x + (1-a) y`` (power; ``|z| <= sum a_i x_i`` for the
    generalized one).  Every right-hand side is zero."""
    parts = [_block_rows(blk, form.solver) for blk in form.blocks]
    count, rows, cols, vals = 0, [], [], []
    for r, c, v, n in parts:
        rows.append(r + count)
        cols.append(c)
        vals.append(v)
        count += n
    if not parts:
        return sp.csr_array((0, form.b.size)), np.zeros(0)
    G = sp.csr_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                     shape=(count, form.b.size))
    return G, np.zeros(count)


def _rows(entries):
    """COO arrays (and the count) of rows given as ``[(indices, coefficients), ...]`` (each
    an array of shape (n_rows, k)); the row numbers follow the list."""
    rows, cols, vals, at = [], [], [], 0
    for idx, coef in entries:
        idx = np.atleast_2d(idx)
        n, k = idx.shape
        rows.append(np.repeat(np.arange(at, at + n), k))
        cols.append(idx.ravel())
        vals.append(np.broadcast_to(coef, (n, k)).ravel())
        at += n
    return (np.concatenate(rows), np.concatenate(cols).astype(np.int64),
            np.concatenate(vals).astype(float), at)


def _block_rows(blk, solver):
    """COO arrays of the rows ``g^T s <= 0`` of one block."""
    k = blk.start
    own = np.arange(k, blk.stop)[:, None]
    if blk.kind == "zero":
        return _rows([(own, [1.0]), (own, [-1.0])])
    if blk.kind == "nonneg":
        return _rows([(own, [-1.0])])
    if blk.kind == "soc":
        z = np.arange(k + 1, blk.stop)[:, None]
        pair = np.hstack([z, np.full_like(z, k)])
        return _rows([([[k]], [-1.0]), (pair, [1.0, -1.0]), (pair, [-1.0, -1.0])])
    if blk.kind == "exp":
        return _rows([([[k + 1]], [-1.0]), ([[k + 2]], [-1.0]),
                      ([[k, k + 1, k + 2]], [1.0, 1.0, -1.0])])
    if blk.kind == "pow":
        a = blk.param
        trio = [[k + 2, k, k + 1]]
        return _rows([([[k]], [-1.0]), ([[k + 1]], [-1.0]),
                      (trio, [1.0, -a, a - 1.0]), (trio, [-1.0, -a, a - 1.0])])
    if blk.kind == "pown":
        a = np.asarray(blk.alphas)
        xs = np.arange(k, blk.stop - 1)
        every = [np.r_[blk.stop - 1, xs]]
        return _rows([(xs[:, None], [-1.0]), (every, np.r_[1.0, -a]),
                      (every, np.r_[-1.0, -a])])
    return _psd_rows(blk, solver)


def _psd_rows(blk, solver):
    order = int(blk.param)
    i, j = svec_index(order, solver)
    pos = blk.start + np.arange(i.size)
    diag = np.empty(order, dtype=np.int64)
    diag[i[i == j]] = pos[i == j]
    off = i != j
    # s_ab = sqrt(2) S_ab:  +-S_ab - (S_aa + S_bb) / 2 <= 0
    trio = np.column_stack([pos[off], diag[i[off]], diag[j[off]]])
    return _rows([(diag[:, None], [-1.0]),
                  (trio, [1.0 / _SQRT2, -0.5, -0.5]),
                  (trio, [-1.0 / _SQRT2, -0.5, -0.5])])

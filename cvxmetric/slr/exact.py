"""SLR, exact: Eq. 1 and Eq. 4 of Qian, Baytas, Jin, Jain, Zhu (2015) in CVXPY.

Eq. 4 (the specification every SLR solver answers to; ``X`` is (n, d) with
one sample per row, the paper's ``X^T M X`` is ``K = X M X^T``)::

    minimise_{M in R^{d x d}}
        sum_{i, j: y_i = y_j}  [delta1 - x_i^T M x_j]_+^2
      + sum_{i, k: y_i != y_k} [x_i^T M x_k - delta2]_+^2

over *all ordered* pairs, the same-class sum including ``i = j`` (as the
Eq. 2 target does: ``Y_ii = 1``).  Defaults ``delta1 = 1``, ``delta2 = 0``
(the paper's experiments).  Changes from the paper: none in the objective.

Three equivalent CVXPY forms (``form=``), all certified on Eq. 4 itself by
:meth:`~cvxmetric.slr.SLRData.certificate`:

``"declared"``
    The statement above with the variable ``M`` (d, d) and ``K = X M X^T``:
    ``n^2`` hinge terms in ``d^2`` variables.  When ``rank(X) < d`` the
    minimiser is not unique (``M`` is free outside ``range(X^T)``); the
    solver returns one.  Meant for small ``d``.
``"range"``
    The Gram rewrite.  With the thin SVD ``X = U S V^T`` (rank ``r``),
    ``X M X^T = U Z U^T`` with ``Z = S V^T M V S``, and ``M -> Z`` maps onto
    all of ``R^{r x r}``.  Hence ``||X M X^T - T||_F^2 = ||Z - U^T T U||_F^2 +
    (||T||_F^2 - ||U^T T U||_F^2)``: ``M`` fits the part of a target ``T`` in
    ``range(U) x range(U)`` exactly and never the rest.  Minimising over
    ``Z`` first (``Z = U^T T U``) leaves a problem in the targets only,
    ``min_{T in B} ||T||_F^2 - ||U^T T U||_F^2`` (the squared distance
    from the box ``B`` to the subspace ``{U Z U^T}``): ``n^2`` variables.
    Minimising over ``T`` first instead (entry by entry: the squared
    hinge) leaves the problem in ``Z`` alone, which is the one solved

        minimise_Z  sum_ij [b_ij - s_ij u_i^T Z u_j]_+^2,

    ``b_ij = delta1, s_ij = +1`` on same-class and ``b_ij = -delta2,
    s_ij = -1`` on different-class pairs, ``u_i`` the rows of ``U``:
    ``n^2`` terms in ``r^2 <= d^2`` variables.  ``M`` is recovered as
    ``V S^{-1} Z S^{-1} V^T`` (the minimum-norm minimiser).
``"symmetric"`` (default)
    Eq. 4 is invariant under ``Z -> Z^T`` (the class relation is
    symmetric), and convex, so ``(Z + Z^T) / 2`` is a minimiser whenever
    ``Z`` is: restrict to symmetric ``Z`` (``p = r (r + 1) / 2``
    variables).  The terms ``(i, j)`` and ``(j, i)`` are then equal, so each
    unordered pair ``i < j`` enters once with weight 2 and ``i = j`` with
    weight 1: ``n (n + 1) / 2`` terms, the weights' square roots folded into
    the residuals.  The minimum is the same; the returned ``M`` is a
    symmetric minimiser.

``delta1`` and ``delta2`` are ``cp.Parameter``; the problems are DPP
(asserted).  The objective may be 0: when the classes are separable by a
bilinear form -- always when ``n <= r``, where ``U Z U^T`` can be any
``n x n`` matrix, e.g. the Eq. 2 target -- the minimiser is not unique and
the certificate's zero lower bound proves optimality.

:func:`solve_eq1` states Eq. 1 (least squares on a fixed target) in CVXPY;
its closed form Eq. 3 is :func:`~cvxmetric.slr.eq3_closed_form`.
"""

import dataclasses
import time

import cvxpy as cp
import numpy as np
import scipy.sparse

from .._exact import SOLVERS, solve_certified, solver_options
from .._face import polish_on_faces
from .._settings import (
    EXACT_MAX_COEFFICIENTS,
    MARGIN_BAND,
    MARGIN_TERMS,
    REDUCE_ABOVE,
    SELECT_WEIGHT,
)
from .._validation import check_instance, check_option, check_samples
from ..result import Certificate, SolverError, SolverResult
from ._problem import SLRData, check_thresholds, smat, svec

__all__ = ["SLRModel", "solve_exact", "solve_eq1", "FORMS", "EXACT_MAX_COEFFICIENTS"]

#: Values of ``form`` in :class:`SLRModel` / :func:`solve_exact`.
FORMS = ("symmetric", "range", "declared")


class SLRModel:
    """Eq. 4 as a CVXPY problem in one of :data:`FORMS`.

    Every form is written with a sparse coupling: a matrix variable ``W``
    (``r x n``: ``W = Z U^T``; ``d x n`` for ``"declared"``: ``W = M X^T``)
    holds the products with the samples, and each pair's similarity
    ``K_ij = u_i^T W[:, j]`` (``x_i^T W[:, j]``) involves ``r`` (``d``) of its
    entries.  Written directly, every pair would involve all ``p`` (``r^2``,
    ``d^2``) matrix variables; the interior-point factorisation of those
    dense columns is what made the direct form 5-10x slower (measured on
    150 digits, ``r = 12``).  The squared hinges are epigraphs
    ``min sum t^2`` subject to ``t >= b - s K`` (``t >= 0`` is implied:
    ``min_{t >= a} t^2 = [a]_+^2``).

    Parameters
    ----------
    data : SLRData
    form : {"symmetric", "range", "declared"}

    Attributes
    ----------
    problem : cvxpy.Problem
    variable : cvxpy.Variable
        ``Z`` (r, r), symmetric for ``"symmetric"``, or ``M`` (d, d) for
        ``"declared"``.
    params : dict of cvxpy.Parameter
        ``delta1`` and ``delta2``.
    """

    def __init__(self, data, form="symmetric"):
        check_option(form, "form", FORMS)
        n_terms = (data.n_samples * (data.n_samples + 1) // 2 if form == "symmetric"
                   else data.n_samples ** 2)
        width = data.n_features if form == "declared" else data.rank
        if n_terms * width > EXACT_MAX_COEFFICIENTS:
            # measured: CVXPY's canonicalisation alone holds ~180 bytes per
            # coefficient (1.1 GB at n = 600, r = 30) and Clarabel as much
            # again; beyond the limit the solve would not fit in 4 GiB and
            # would end in an allocation failure that aborts the process
            raise ValueError(
                f"X: the exact CVXPY form of Eq. 4 has {n_terms} hinge terms of "
                f"{width} coefficients each ({n_terms * width:.3g} > "
                f"EXACT_MAX_COEFFICIENTS = {EXACT_MAX_COEFFICIENTS:.0e}), too large "
                f"for a conic solve in 4 GiB; use solver='newton', certified on the "
                f"same Eq. 4.")
        self.data = data
        self.form = form
        d1 = cp.Parameter(value=data.delta1, name="delta1")
        d2 = cp.Parameter(value=data.delta2, name="delta2")
        self.params = {"delta1": d1, "delta2": d2}
        n = data.n_samples
        if form == "symmetric":
            # each unordered pair once: weight 2 off the diagonal, folded
            # into the residual as sqrt(2)
            i, j = np.triu_indices(n)
            weight = np.where(i == j, 1.0, np.sqrt(2.0))
        else:
            i, j = np.indices((n, n)).reshape(2, -1)
            weight = np.ones(i.size)
        same = data.y[i] == data.y[j]
        if form == "declared":
            var = cp.Variable((data.n_features, data.n_features), name="M")
            B = data.Xs  # K = X M X^T = Xs (scale^2 M) Xs^T: M in Xs's units
        else:
            var = cp.Variable((data.rank, data.rank), name="Z",
                              symmetric=form == "symmetric")
            B = data.U  # K = U Z U^T
        W = cp.Variable((B.shape[1], n), name="W")
        K = cp.sum(cp.multiply(B[i].T, W[:, j]), axis=0)  # K_ij, (n_terms,)
        t = cp.Variable(i.size, name="t")
        target = d1 * (weight * same) - d2 * (weight * ~same)
        cons = [W == var @ B.T,
                t >= target - cp.multiply(weight * np.where(same, 1.0, -1.0), K)]
        self.variable = var
        self.problem = cp.Problem(cp.Minimize(cp.sum_squares(t)), cons)
        assert self.problem.is_dpp(), "SLR model must be DPP"

    def set_params(self, delta1=None, delta2=None):
        """Change the thresholds in place (re-solves without recompiling)."""
        d1 = self.data.delta1 if delta1 is None else delta1
        d2 = self.data.delta2 if delta2 is None else delta2
        d1, d2 = check_thresholds(d1, d2)  # before touching the model
        self.params["delta1"].value = d1
        self.params["delta2"].value = d2
        self.data = dataclasses.replace(self.data, delta1=d1, delta2=d2)

    def matrices(self):
        """``(M, Z)`` from the variable's value."""
        data, val = self.data, self.variable.value
        if val is None:
            return None, None
        val = np.asarray(val, dtype=float)
        if self.form == "declared":
            # the variable is scale^2 M (the model is built on X / scale)
            W = data.V * data.s
            Z = W.T @ val @ W
            M = (val / data.scale) / data.scale
            if not np.all(np.isfinite(M)) or np.any((M == 0) & (val != 0)):
                return data.M_of_Z(Z), Z  # raises the representability error
            return M, Z
        return data.M_of_Z(val), val

    def solve(self, *, solvers=SOLVERS, tol=1e-9, verbose=False):
        """Solve and return a certified :class:`SolverResult`."""
        t0 = time.perf_counter()

        def certify(name, version, opts, times):
            M, Z = self.matrices()
            cert, parts = self.data.certificate(
                M, Z=Z, solver=name, solver_version=version, tolerances=opts,
                times=times, return_parts=True)
            if parts.get("z_rel_gap", np.inf) <= cert.tol_gap:
                # the solver's point is optimal: M must carry it
                self.data.check_representable(parts)
            return cert

        cert, info = solve_certified(self.problem, certify, solvers=solvers, tol=tol,
                                     verbose=verbose)
        M, _ = self.matrices()
        return SolverResult(
            M=M, status=info["status"], objective=cert.objective,
            n_iter=info["n_iter"], certificate=cert, method="exact",
            info={"form": self.form, "attempts": info["attempts"]},
            time=time.perf_counter() - t0,
        )


#: The margin-set reduction's ladder (:func:`_reduced_solve`): one band,
#: its face corrected round after round.
FACE_LADDER = (MARGIN_BAND,)


class _ReducedModel:
    """Eq. 4 on a partition of the terms (the margin-set reduction).

    Over ordered pairs, with ``a_ij(Z) = b_ij - s_ij u_i^T Z u_j``:
    ``V`` (active at the guess) enters as the quadratic ``sum_V a_ij^2`` --
    one ``p x p`` form, never one row per term; ``W`` (near the margin)
    keeps its hinges ``[a_ij]_+^2``, written on ``Z U_J^T`` as the declared
    model does; the rest is left out.  Plus the selection term
    ``(eps / 2) ||Z - Z_0||_F^2``.  The variable is ``z = svec(Z)`` (p,).
    """

    def __init__(self, data, V, W, eps, Z0):
        U, r = data.U, data.rank
        p = r * (r + 1) // 2
        Q = data._sym_features()  # (n, p)
        Gq = np.zeros((p, p))
        Gl = np.zeros((r, r))
        const = 0.0
        for k, (rows, same) in enumerate(data._blocks()):
            m = V[k]
            if not m.any():
                continue
            Gq += Q[rows].T @ (m.astype(float) @ Q)
            bs = np.where(same, data.delta1, data.delta2)  # b s on both kinds
            Lam = np.where(m, bs, 0.0)
            Gl += U[rows].T @ (Lam @ U)
            b = np.where(same, data.delta1, -data.delta2)
            const += float(np.sum(np.where(m, b * b, 0.0)))
        # sum_V a^2 = const - 2 <Gl, Z> + z^T (H_V / 2) z, H_V = 2 sum_V phi phi^T
        H = data._hessian_from_gram(Gq) if np.any([v.any() for v in V]) else Gq
        # passed to the solver as the QP matrix itself (psd_wrap: H is a
        # Gram matrix, PSD by construction); a factor L^T z would be p^2
        # coefficients of canonicalised affine map
        z = cp.Variable(p, name="z")
        obj = (cp.quad_form(z, cp.psd_wrap(0.25 * (H + H.T)))
               - 2.0 * (svec(Gl) @ z) + const)
        self.n_margin = 0
        if W[0].size:
            i, j = W
            iu = np.triu_indices(r)
            # Z = smat(z) as a linear map: vec(Z) = S z
            scale = np.where(iu[0] == iu[1], 1.0, 1.0 / np.sqrt(2.0))
            rows_ = np.concatenate([iu[0] * r + iu[1], iu[1] * r + iu[0]])
            cols_ = np.concatenate([np.arange(p), np.arange(p)])
            vals_ = np.concatenate([scale, scale])
            diag = iu[0] == iu[1]
            dup = np.concatenate([np.zeros(p, bool), diag])  # diagonal once
            S = scipy.sparse.csr_matrix((vals_[~dup], (rows_[~dup], cols_[~dup])),
                                        shape=(r * r, p))
            Zx = cp.reshape(S @ z, (r, r), order="C")
            J, jpos = np.unique(j, return_inverse=True)
            WJ = Zx @ U[J].T  # (r, |J|)
            K = cp.sum(cp.multiply(U[i].T, WJ[:, jpos]), axis=0)
            same = data.y[i] == data.y[j]
            # unordered pairs: (i, j) and (j, i) are equal terms, weight 2
            wt = np.sqrt(np.where(i == j, 1.0, 2.0))
            target = np.where(same, data.delta1, -data.delta2) * wt
            sgn = np.where(same, 1.0, -1.0) * wt
            t = cp.Variable(i.size, name="t")
            self.margin_constraint = t >= target - cp.multiply(sgn, K)
            obj = obj + cp.sum_squares(t)
            self.n_margin = int(i.size)
            cons = [self.margin_constraint]
        else:
            cons = []
        self.z = z
        self.r = r
        select = 0.5 * eps * cp.sum_squares(z - svec(Z0))
        self.problem = cp.Problem(cp.Minimize(obj + select), cons)

    def Z(self):
        if self.z.value is None or not np.all(np.isfinite(self.z.value)):
            return None
        return smat(self.z.value, self.r)


def _hinge_blocks(data, Z):
    """Hinge arguments per row block at a symmetric ``Z`` (ordered pairs)."""
    U = data.U
    W = (0.5 * (Z + Z.T)) @ U.T
    return [data._args(U[rows] @ W, same) for rows, same in data._blocks()]


def _margin_pairs(data, blocks, band):
    """Unordered pairs ``i <= j`` with ``|a_ij| <= band`` (index arrays)."""
    out_i, out_j = [], []
    for (rows, _), a in zip(data._blocks(), blocks):
        bi, bj = np.nonzero(np.abs(a) <= band)
        bi = bi + rows.start
        up = bi <= bj
        out_i.append(bi[up])
        out_j.append(bj[up])
    return np.concatenate(out_i), np.concatenate(out_j)


def _reduced_solve(data, warm, solvers, tol, verbose, max_rounds):
    """Certified solution of Eq. 4 from the margin-set reduction, or ``None``.

    The partition comes from the point ``Z_0`` of the warm result ``warm``
    (the semismooth Newton solution, :func:`cvxmetric.slr.fast.warm_start`,
    when the registry's exact path is called): terms
    active beyond the band (``a > band``) form ``V``, terms within it
    ``W``, the others are left out.  Eq. 4 is continuously differentiable
    and ``[a]_+^2``, ``a^2`` and ``0`` have the same value and gradient
    wherever ``a >= 0``, ``a >= 0`` and ``a <= 0`` respectively; so when, at
    the reduced minimiser, every ``V`` term is active and every left-out
    term inactive, the reduced model's gradient is the whole problem's and
    the point minimises Eq. 4 (up to the selection term).  Inconsistent
    terms move to ``W`` and the model is solved again.  The selection term
    ``(eps / 2) ||Z - Z_0||_F^2`` (``eps = SELECT_WEIGHT``, small next to
    the Hessian of Eq. 4 in ``Z``, which lies between 0 and ``2 I``) selects
    one minimiser where there are many: when the classes are separable by a
    bilinear form (standardised breast_cancer) every ``Z`` of an unbounded
    set attains 0, the interior-point iterates drift along it, and a point
    far from ``Z_0`` activates terms the reduction left out, round after
    round.  The solution is a proximal step from ``Z_0`` on the reduced
    model, so its value is at most ``f(Z_0)`` when the partition is
    consistent (``Z_0`` is feasible for it).  Every point returned
    is certified on the whole Eq. 4 by :meth:`SLRData.certificate`, so
    neither the guess nor the selection can pass off a point that is not
    optimal to the package's tolerance.
    """
    Z0 = data.Z_of_M(warm.M)
    Z0 = 0.5 * (Z0 + Z0.T)
    eps = SELECT_WEIGHT
    sizes = []

    def read(band):
        V, i0, j0 = _first_partition(data, Z0, band)
        return face(V, i0, j0, None)

    def face(V, i0, j0, extra):
        # the pairs moved to W by the rounds so far (extra; None: none)
        # identify the face: V is the first partition's less those moved
        # from it
        i, j = _round_pairs(data, i0, j0, extra)
        return (i.tobytes(), j.tobytes()), (V, i0, j0, i, j, extra)

    def solve(margin):
        V, _, _, i, j, _ = margin
        if i.size * data.rank > EXACT_MAX_COEFFICIENTS:
            return None
        sizes.append({"active": int(sum(v.sum() for v in V)), "margin": int(i.size)})
        model = _ReducedModel(data, V, (i, j), eps, Z0)
        try:
            cert, info = solve_certified(model.problem, _reduced_certify(data, model),
                                         solvers=solvers, tol=tol, verbose=verbose)
        except SolverError:
            cert, info = None, None
        return cert, info, model.Z()

    def correct(margin, candidate):
        V, i0, j0, i, j, extra = margin
        Z = candidate[2]
        new = None if Z is None else _repair_partition(data, Z, V, i, j)
        if new is None:
            return None
        if extra is not None:
            new = (np.concatenate([extra[0], new[0]]), np.concatenate([extra[1], new[1]]))
        return face(V, i0, j0, new)

    # one rung (the margin band), corrected round after round until a
    # reduced model's point is certified on the whole Eq. 4
    out = polish_on_faces(FACE_LADDER, read, solve,
                          lambda cand: 0.0 if cand[0] is not None else np.inf,
                          correct=correct, rounds=max_rounds, target=0.0)
    found = out.first()
    if found is None or found[0] is None:
        return None
    cert, info, Z = found
    return SolverResult(
        M=data.M_of_Z(Z), status=info["status"], objective=cert.objective,
        n_iter=info["n_iter"], certificate=cert, method="exact",
        info={"form": "reduced", "attempts": info["attempts"],
              "reduced": True, "round_sizes": sizes, "select_weight": eps,
              "warm_status": warm.status},
        time=0.0)


def _first_partition(data, Z0, band=MARGIN_BAND):
    """The reduction's first partition at the Newton point ``Z0``, with the
    margin band ``band (delta1 - delta2)``.

    Returns
    -------
    V : list of ndarray of bool
        Per row block, the terms active beyond the band (``a > band``).
    i0, j0 : ndarray of int
        The margin set ``W``: unordered pairs with ``|a_ij| <= band``, the
        band narrowed so that ``W`` has at most about ``MARGIN_TERMS`` pairs.
    """
    a = _hinge_blocks(data, Z0)
    band = band * (data.delta1 - data.delta2)
    # ordered pairs: each unordered pair twice, its diagonal once
    flat = np.abs(np.concatenate([x.ravel() for x in a]))
    if flat.size > 2 * MARGIN_TERMS:
        band = min(band, float(np.partition(flat, 2 * MARGIN_TERMS)[2 * MARGIN_TERMS]))
    del flat
    V = [x > band for x in a]
    i0, j0 = _margin_pairs(data, a, band)
    return V, i0, j0


def _round_pairs(data, i0, j0, extra):
    """A round's margin set: the first one and the pairs moved to it since
    (``extra``, or None), each pair once."""
    if extra is None:
        return i0, j0
    i, j = np.concatenate([i0, extra[0]]), np.concatenate([j0, extra[1]])
    key = np.unique(i * data.n_samples + j)
    return key // data.n_samples, key % data.n_samples


def _reduced_certify(data, model):
    """The ``certify`` of :func:`~cvxmetric._exact.solve_certified` for one
    reduced model: its point, certified on the whole Eq. 4."""
    def certify(name, version, opts, times):
        Z = model.Z()
        if Z is None:  # no usable point: a certificate that cannot pass
            return Certificate.no_point(name, version, opts, times)
        cert, parts = data.certificate(
            data.M_of_Z(Z), Z=Z, solver=name, solver_version=version,
            tolerances=opts, times=times, return_parts=True)
        if parts.get("z_rel_gap", np.inf) <= cert.tol_gap:
            data.check_representable(parts)
        return cert

    return certify


def _repair_partition(data, Z, V, i, j):
    """Move the terms inconsistent at the reduced minimiser ``Z`` to ``W``.

    ``V`` terms gone inactive and left-out terms gone active are removed
    from ``V`` (in place) and returned as pairs to add to the margin set.

    Parameters
    ----------
    data : SLRData
    Z : ndarray
        The reduced model's minimiser.
    V : list of ndarray of bool
        The active partition per row block (updated in place).
    i, j : ndarray of int
        The round's margin set.

    Returns
    -------
    tuple of ndarray or None
        The moved unordered pairs ``(i, j)``, ``i <= j``; None when the
        partition is consistent.
    """
    a_new = _hinge_blocks(data, Z)
    tiny = 1e-9 * (data.delta1 - data.delta2)
    bad_i, bad_j = [], []
    for k, ((rows, _), an) in enumerate(zip(data._blocks(), a_new)):
        inW = np.zeros_like(V[k])
        inW_i = (i >= rows.start) & (i < rows.stop)
        inW[i[inW_i] - rows.start, j[inW_i]] = True
        inW_j = (j >= rows.start) & (j < rows.stop)
        inW[j[inW_j] - rows.start, i[inW_j]] = True
        bad = (V[k] & (an < -tiny)) | (~V[k] & ~inW & (an > tiny))
        if bad.any():
            V[k] = V[k] & ~bad
            bi, bj = np.nonzero(bad)
            bi = bi + rows.start
            bad_i.append(np.minimum(bi, bj))
            bad_j.append(np.maximum(bi, bj))
    if not bad_i:
        return None
    return np.concatenate(bad_i), np.concatenate(bad_j)


def solve_exact(data, *, form="symmetric", solvers=SOLVERS, tol=1e-9, verbose=False,
                reduce="auto", max_rounds=6, warm_start=None):
    """Certified exact solution of Eq. 4.

    Parameters
    ----------
    data : SLRData
    form : {"symmetric", "range", "declared"}
        The CVXPY form (see the module docstring); all three have the same
        optimal value and every answer is certified on Eq. 4.
    solvers : sequence of str
        Clarabel first, SCS as fallback.
    tol : float
        Solver tolerance.
    reduce : {"auto", True, False}
        ``"symmetric"`` form only: solve the margin-set reduction
        (:func:`_reduced_solve`) first; ``"auto"`` when the symmetric form
        has more than :data:`REDUCE_ABOVE` coefficients.  The whole form is
        solved when the reduction does not certify, or has no
        ``warm_start`` to start from.
    max_rounds : int
        Rounds of the reduction.
    warm_start : callable, optional
        ``warm_start(data) -> SolverResult``: the point the reduction's
        partition is taken at, computed when the reduction runs.
        :meth:`cvxmetric.formulations.Formulation.solve_exact` (the
        estimators' way in) gives :func:`cvxmetric.slr.fast.warm_start`.
        Without it the reduction is skipped and the whole form solved
        (refused, as below, above :data:`EXACT_MAX_COEFFICIENTS`).

    Returns
    -------
    SolverResult
        ``method="exact"``; ``info["reduced"]`` and ``info["round_sizes"]``
        when the reduction answered.

    Raises
    ------
    ValueError
        When the form to solve is larger than :data:`EXACT_MAX_COEFFICIENTS`
        (it would not fit in 4 GiB); the semismooth Newton solver is
        certified on the same objective at any size.
    CertificateError, SolverError
        When no solver returns a certified point.
    """
    check_instance(data, SLRData, "data")
    check_option(form, "form", FORMS)
    if reduce not in ("auto", True, False):
        raise ValueError(f"reduce: expected 'auto', True or False, got {reduce!r}.")
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, (int, np.integer)) \
            or max_rounds < 1:
        raise ValueError(f"max_rounds: expected an integer >= 1, got {max_rounds!r}.")
    n = data.n_samples
    if form == "symmetric" and reduce is not False and warm_start is not None and (
            reduce is True or n * (n + 1) // 2 * data.rank > REDUCE_ABOVE):
        t0 = time.perf_counter()
        res = _reduced_solve(data, warm_start(data), solvers, tol, verbose,
                             int(max_rounds))
        if res is not None:
            res.time = time.perf_counter() - t0
            return res
    return SLRModel(data, form).solve(solvers=solvers, tol=tol, verbose=verbose)


def solve_eq1(X, Y, *, solver="CLARABEL", tol=1e-9):
    """Eq. 1, ``min_M ||X M X^T - Y||_F^2``, solved by CVXPY as stated.

    For checking the closed form Eq. 3 on small data (``d^2`` variables,
    ``n^2`` residuals); the minimiser is unique only when ``rank(X) = d``,
    the fitted ``X M X^T`` always.

    Parameters
    ----------
    X : array_like of shape (n, d)
    Y : array_like of shape (n, n)
    solver : str
    tol : float

    Returns
    -------
    M : ndarray of shape (d, d)
    value : float
        ``||X M X^T - Y||_F^2`` recomputed at ``M``.
    """
    X = check_samples(X, "X")
    n, d = X.shape
    Y = np.asarray(Y, dtype=float)
    if Y.shape != (n, n) or not np.all(np.isfinite(Y)):
        raise ValueError(f"Y: expected a finite ({n}, {n}) array, got {Y.shape}.")
    check_option(solver, "solver", SOLVERS)
    M = cp.Variable((d, d), name="M")
    problem = cp.Problem(cp.Minimize(cp.sum_squares(X @ M @ X.T - Y)))
    problem.solve(solver=solver, **solver_options(solver, tol))
    if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or M.value is None:
        raise SolverError(f"{solver}: Eq. 1 returned status {problem.status}.")
    R = X @ M.value @ X.T - Y
    return np.asarray(M.value), float(np.sum(R * R))

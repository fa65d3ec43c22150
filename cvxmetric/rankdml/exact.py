"""RankDML, exact: Eq. 7, 9 and 11 of Lee, Jin and Jain (2008) in CVXPY.

The formulation (the specification every RankDML solver answers to), for
triplets ``t = (q, r, i)`` (query, relevant, irrelevant)::

    minimise_{A, eps}   sum_t eps_t + (lam / 2) Reg(A)
    subject to          d(q, i; A) - d(q, r; A) >= 1 - eps_t,   eps_t >= 0
                        A PSD                      (a >= 0 when diagonal)
                        tr(A) = tau                ("burg", "logdet",
                                                    "laplacian" with form="trace_fixed")

=====================  ======================================================
``regularizer``        ``(lam / 2) Reg(A)`` as declared (``B = W1 A W1``)
=====================  ======================================================
``"frobenius"``        ``lam/2 ||A||_F^2`` (Eq. 7); diagonal: ``lam/2 ||a||^2``
``"burg"`` (printed)   ``lam/(2 tau^2) ||A P1||_F^2 - lam logdet(B) + lam/2 (2 d log tau - d)``
``"burg"`` (spectral)  ``lam/(2 tau^2) ||B||_F^2 - lam logdet(B) + lam/2 (2 d log tau - d)``
``"logdet"``           ``lam/(2 tau) tr(B) - lam/2 logdet(B) + lam/2 (d log tau - d)``
``"laplacian"``        ``lam/2 ||a - mean(a)||^2`` (Eq. 11; ``sum(a) = tau`` only
                       with ``form="trace_fixed"``)
=====================  ======================================================

``W1 = (A0 / tr(A0))^{-1/2}`` (symmetric) whitens with the unit-trace prior,
so that ``W = A0hat^{-1/2} = W1 / sqrt(tau)``, and ``P1 = W1^2 =
(A0 / tr(A0))^{-1}``, so that ``P = A0hat^{-1} = P1 / tau``.  The Burg rows
are Eq. 8 expanded so that ``tau`` can be a parameter: as printed,
``||A A0hat^{-1}||_F^2 - 2 logdet(A A0hat^{-1}) - d`` with
``||A P||^2 = ||A P1||^2 / tau^2`` (``sum_squares`` of an affine
expression: convex); in the spectral form ``tr((A A0hat^{-1})^2) =
||W A W||^2 = ||B||^2 / tau^2``; in both ``logdet(W A W) = logdet(B) -
d log tau``.  ``log_det`` always receives the symmetric ``W1 A W1``, never
``A A0^{-1}``.

Changes from the paper, all stated in docs/rankdml/decisions.md:

* Eq. 9 fixes the trace, ``tr(A) = tau`` (the paper's
  ``A0hat = A0 tr(A) / tr(A0)`` makes it scale-invariant and non-convex);
  Eq. 11 is solved as printed (no trace constraint) unless
  ``form="trace_fixed"``;
* the Frobenius term ``tr(A A^T)`` is ``||A||_F^2`` (A symmetric);
* ``lam`` and ``tau`` are ``cp.Parameter`` (with parameters derived from
  them, kept in sync by :meth:`RankDMLModel.set_params`), so a sweep
  re-solves without recompiling; the model is DPP (asserted);
* ``A`` is a symmetric variable with an explicit ``A >> 0``.

The solver's internal model (:func:`solve_exact`) is the same problem in the
variable ``B = D A D``, ``D`` per-feature powers of two (the
"Feature scaling" notes of :class:`RankDMLModel`); the declared problem
(:func:`declared_problem`) is always the one above, in the user's units.
"""

import dataclasses
import time

import cvxpy as cp
import numpy as np

from .._docs import fill_doc
from .._exact import SOLVERS, solve_certified
from .._linalg import pow2_rms_exponents
from .._validation import check_instance
from ..model import _ModelDeclared
from ..result import SolverError, SolverResult
from ._problem import RankData

__all__ = ["RankDMLModel", "solve_exact", "declared_problem", "PAPER"]

PAPER = ("Lee, Jin, Jain: Rank-based distance metric learning: an application "
         "to image retrieval (2008)")


class RankDMLModel:
    """Eq. 7 / 9 / 11 declared as a CVXPY problem.

    Parameters
    ----------
    data : RankData
    margin, active : ndarray of bool, shape (N,), optional
        The margin-set reduction (:func:`_solve_exact`): only the ``margin``
        triplets keep a slack and a row; the ``active`` ones enter as one
        linear term.  Default: the declared model, every triplet.
    scale : ndarray of shape (d,), optional
        Per-feature powers of two ``D``: the solver's internal model in the
        variable ``B = D A D`` (below).  Default: ``A`` itself, exactly as
        declared (:func:`declared_problem` never scales).

    Attributes
    ----------
    problem : cvxpy.Problem
    A : cvxpy.Variable
        (d, d) symmetric, or (d,) for diagonal problems: ``A`` itself, or
        ``B = D A D`` (``b = D^2 a``) in a scaled model.  :meth:`value`
        always returns the metric in the data's units.
    eps : cvxpy.Variable of shape (N,)
        The slacks of Eq. 7.
    params : dict of cvxpy.Parameter
        ``lam`` and, for trace-fixed problems, ``tau``.
    constraints : dict of cvxpy.Constraint
        ``triplets``, ``psd`` (or ``nonneg``) and ``trace``.

    Notes
    -----
    **Feature scaling.**  The conic solvers see the hinge rows
    ``<A, phi phi^T>`` with one coefficient ``phi_i phi_j`` per entry; with
    columns of ``X`` in different units (raw wine: feature scales 0.12 to
    314) these span eight orders of magnitude, and Clarabel and SCS stall
    (wine, 2 000 triplets: Clarabel 400 iterations to ``AlmostSolved``, the
    certificate's gap 0.11 to 1.9; the reduction rounds never certified).
    :func:`_solve_exact` therefore solves the same problem in the variable
    ``B = D A D`` (``D = diag`` of per-feature powers of two,
    :func:`_feature_scale`), i.e. ``A = W B W`` with ``W = D^{-1}``: the
    scaled rows ``W phi`` have every feature of unit size (a Jacobi scaling
    of the data).  Each term is the declared one rewritten exactly (see
    :meth:`_scaled_terms`): the Frobenius term keeps ``||A||_F^2`` as
    ``||(w w^T) * B||_F^2``; LogDet / Burg's ``logdet(W1 A W1)`` is
    ``logdet(B)`` plus the constant ``2 logdet(W1) + 2 sum log w``, carried
    in the objective's constant so that the optimal value is the declared
    one; their trace-weighted terms and the trace constraint become
    weighted sums of ``B``'s entries; ``A PSD`` iff ``B PSD`` by
    congruence.  The solver's ``B`` is repaired in its own coordinates
    (negative eigenvalues clipped, the trace restored by a positive factor)
    and mapped back, so that ``A`` is PSD by congruence; the certificate is
    then computed for ``A`` on the declared problem in the data's units, as
    for the unscaled model.  Measured (default ``RankDML``, 2 000 triplets
    on raw wine): certified in 2.0 s, relative gap 5.8e-10 (objective
    58.435), where every Clarabel and SCS solve of the unscaled model failed
    the certificate (gaps 0.11 to 1.9) and the fit ran past 200 s.
    """

    def __init__(self, data, *, margin=None, active=None, scale=None):
        self.data = data
        d = data.n_features
        N = data.n_constraints
        idx = np.arange(N) if margin is None else np.flatnonzero(margin)
        self.margin_index = idx
        self.active = (np.zeros(N, dtype=bool) if active is None
                       else np.asarray(active, dtype=bool))
        self.reduced = margin is not None or active is not None
        # scale given: the solver's internal model, the same problem in the
        # variable B = D A D (see "Feature scaling" and _scaled_terms); the
        # declared model is built by the same lines with w = None
        self.scale = None if scale is None else _check_feature_scale(scale, d)
        w = self.w = None if scale is None else 1.0 / self.scale
        self._logdet_shift = 0.0
        # [declare:rankdml-triplets]
        lam = cp.Parameter(nonneg=True, value=data.lam, name="lam")
        self.params = {"lam": lam}
        self._derived = {}
        self.eps = cp.Variable(len(idx), nonneg=True, name="eps") if len(idx) else None
        cons = {}
        if data.diagonal:
            A = cp.Variable(d, name="a" if w is None else "b")
            cons["nonneg"] = A >= 0
        else:
            A = cp.Variable((d, d), symmetric=True, name="A" if w is None else "B")
            cons["psd"] = A >> 0
        if len(idx):
            if data.diagonal:
                # (N, d) @ (d,): k_t . a = d(q, i) - d(q, r)
                lhs = (data.K[idx] if w is None else data.K[idx] * (w * w)) @ A
            else:
                # one row per pair of the kept triplets (never a matrix per triplet)
                near, far = data.near[idx], data.far[idx]
                pairs, inv = np.unique(np.concatenate([near, far]), return_inverse=True)
                Phi = data.op.X[data.op.i[pairs]] - data.op.X[data.op.j[pairs]]
                if w is not None:
                    Phi = Phi * w  # the scaled rows W phi
                dist = cp.sum(cp.multiply(Phi @ A, Phi), axis=1)
                lhs = dist[inv[len(idx):]] - dist[inv[:len(idx)]]
            cons["triplets"] = lhs >= 1 - self.eps
        # [/declare]
        self.A = A
        # [declare:rankdml-objective]
        if w is None:
            reg = self._regularizer_term(data, A, lam)
            if data.trace_fixed:
                tau = self.params["tau"]
                cons["trace"] = (cp.sum(A) if data.diagonal else cp.trace(A)) == tau
        else:  # the same terms in the scaled variable B = D A D
            reg = self._scaled_terms(data, A, lam, cons)
        self.constraints = cons
        objective = reg
        if self.eps is not None:
            objective = objective + cp.sum(self.eps)
        # [/declare]
        if np.any(self.active):
            # the active hinges are linear: sum_V (1 - <A, K_t>) in one term
            S_V = data.S_of(self.active.astype(float))
            if w is not None:  # <S_V, A> = <W S_V W, B>
                S_V = S_V * (w * w) if data.diagonal else (w[:, None] * S_V) * w[None, :]
            objective = objective + float(self.active.sum()) - cp.sum(cp.multiply(S_V, A))
        self.problem = cp.Problem(cp.Minimize(objective), list(cons.values()))
        assert self.problem.is_dpp(), "RankDML model must be DPP"

    def _scaled_terms(self, data, B, lam, cons):
        """The regulariser and trace constraint of the scaled model, in the
        variable ``B = D A D`` (``b = D^2 a``).

        See "Feature scaling" in the class docstring.  Every term is the
        declared one rewritten exactly (``D`` holds powers of two, so the
        scaled rows ``Phi D^{-1}`` and weights ``w_i w_j`` are exact):

        * hinge rows (built with the declared ones):
          ``<A, phi phi^T> = <B, (W phi)(W phi)^T>``, ``W = D^{-1}``
          (diagonal: ``k_t . a = (k_t w^2) . b``);
        * ``A PSD`` iff ``B PSD`` (congruence by the positive diagonal
          ``W``; ``a >= 0`` iff ``b >= 0``);
        * ``tr(A) = sum_i w_i^2 B_ii`` (``sum(a) = w^2 . b``);
        * Frobenius: ``||A||_F^2 = ||(w w^T) * B||_F^2``, elementwise
          weights ``w_i w_j``: the same strongly convex function of ``A``;
        * Laplacian: ``a = w^2 * b`` inside the printed ``||a - mean(a)||^2``;
        * Burg / LogDet: see :meth:`_scaled_prior_term`;
        * the reduction's linear term: ``<S_V, A> = <W S_V W, B>``.

        Returns the regulariser; ``cons`` receives the trace constraint.
        """
        w = self.w
        w2 = w * w
        if data.regularizer in ("burg", "logdet"):
            term = self._scaled_prior_term(data, B, lam)
        else:
            # Eq. 7 / 11: the declared terms of A = W B W (weights w_i w_j)
            A_expr = cp.multiply(w2 if data.diagonal else np.outer(w, w), B)
            term = self._regularizer_term(data, A_expr, lam)
        if data.trace_fixed:
            tr = (cp.sum(cp.multiply(w2, B)) if data.diagonal
                  else cp.sum(cp.multiply(w2, cp.diag(B))))
            cons["trace"] = tr == self.params["tau"]
        return term

    def _scaled_prior_term(self, data, B, lam):
        """Burg / LogDet in the scaled variable: ``W1 A W1 = G B G^T`` with
        ``G = W1 W``, so ``logdet(W1 A W1) = logdet(B) + 2 logdet(W1) +
        2 sum_i log w_i`` -- a constant shift, carried in the ``const``
        parameter so that the model's optimal value is the declared one;
        Burg's printed ``||A P1||_F^2 = ||W B W P1||_F^2``, its spectral
        ``||W1 A W1||_F^2 = ||G B G^T||_F^2``; LogDet's
        ``tr(W1 A W1) = <W W1^2 W, B>``."""
        w = self.w
        ev, W1, const, coef = self._prior_parameters(data)
        G = W1 * w  # W1 W
        # logdet(W1 A W1) = logdet(B) + shift
        self._logdet_shift = float(-np.sum(np.log(ev)) + 2.0 * np.sum(np.log(w)))
        if data.regularizer == "burg":
            if data.form == "printed":
                P1 = W1 @ W1
                P1 = 0.5 * (P1 + P1.T)
                # A P1 = W B (W P1)
                first = cp.sum_squares(cp.multiply(w[:, None], B) @ (w[:, None] * P1))
            else:
                first = cp.sum_squares(G @ B @ G.T)
            term = coef * first - lam * cp.log_det(B) + const
        else:
            N1 = G.T @ G  # W W1^2 W
            N1 = 0.5 * (N1 + N1.T)
            term = coef * cp.sum(cp.multiply(N1, B)) - 0.5 * lam * cp.log_det(B) + const
        self._sync()
        return term

    def _prior_parameters(self, data):
        """``(ev, W1, const, coef)`` of Burg / LogDet: the eigenvalues of
        the unit-trace prior ``A0 / tr(A0)``, its symmetric inverse square
        root ``W1``, and the parameters ``const`` and ``lam / (2 tau^2)``
        (Burg) or ``lam / (2 tau)`` (LogDet) that :meth:`_sync` keeps in
        step with ``lam`` and the new parameter ``tau``."""
        self.params["tau"] = cp.Parameter(pos=True, value=data.tau, name="tau")
        # unit-trace prior: W1 = (A0 / tr A0)^{-1/2}, symmetric
        ev, U = np.linalg.eigh(data.A0 / np.trace(data.A0))
        W1 = (U / np.sqrt(ev)) @ U.T
        W1 = 0.5 * (W1 + W1.T)
        const = cp.Parameter(name="const")
        self._derived["const"] = const
        if data.regularizer == "burg":
            coef = self._derived["quad"] = cp.Parameter(nonneg=True, name="lam_over_2tau2")
        else:
            coef = self._derived["lin"] = cp.Parameter(nonneg=True, name="lam_over_2tau")
        return ev, W1, const, coef

    def _regularizer_term(self, data, A, lam):
        d = data.n_features
        reg = data.regularizer
        # [declare:rankdml-eq7-eq11]
        if reg == "frobenius":
            return 0.5 * lam * cp.sum_squares(A)
        if reg == "laplacian":
            if data.trace_fixed:
                self.params["tau"] = cp.Parameter(pos=True, value=data.tau, name="tau")
            return 0.5 * lam * cp.sum_squares(A - cp.sum(A) / d)
        # [/declare]
        # [declare:rankdml-eq9]
        # W1 = (A0 / tr A0)^{-1/2}; the parameters tau, const and coef, the
        # weight lam / (2 tau^2) (Burg) or lam / (2 tau) (LogDet)
        _, W1, const, coef = self._prior_parameters(data)
        B = W1 @ A @ W1  # symmetric (d, d)
        if reg == "burg":
            if data.form == "printed":
                # ||A P||_F^2 = ||A P1||_F^2 / tau^2, P1 = (A0 / tr A0)^{-1}
                P1 = W1 @ W1
                first = cp.sum_squares(A @ (0.5 * (P1 + P1.T)))
            else:
                first = cp.sum_squares(B)
            term = coef * first - lam * cp.log_det(B) + const
        else:
            N1 = W1 @ W1  # tr(B) = <W1^2, A>
            term = coef * cp.sum(cp.multiply(N1, A)) - 0.5 * lam * cp.log_det(B) + const
        # [/declare]
        self._sync()
        return term

    def _sync(self):
        """Derived parameters from ``lam`` and ``tau``."""
        if not self._derived:
            return
        lam = float(self.params["lam"].value)
        tau = float(self.params["tau"].value)
        d = self.data.n_features
        # _logdet_shift: logdet(W1 A W1) - logdet(B) of a scaled model (0 else)
        shift = self._logdet_shift
        if self.data.regularizer == "burg":
            self._derived["quad"].value = lam / (2.0 * tau * tau)
            self._derived["const"].value = 0.5 * lam * (2.0 * d * np.log(tau) - d) - lam * shift
        else:
            self._derived["lin"].value = lam / (2.0 * tau)
            self._derived["const"].value = 0.5 * lam * (d * np.log(tau) - d - shift)

    def set_params(self, **values):
        """Update ``lam`` (and ``tau``) in place; re-solving does not recompile.

        The canonical data is rebuilt too (validated first, so a rejected
        value leaves the model unchanged), so certificates stay in the
        paper's units.
        """
        for key in values:
            if key not in self.params:
                raise ValueError(
                    f"{key}: not a parameter of this model; have {sorted(self.params)}."
                )
        d = self.data
        from ..constraints import Triplets

        new = RankData.from_triplets(
            Triplets(d.X, d.triplets), regularizer=d.regularizer,
            lam=values.get("lam", d.lam),
            tau=values.get("tau", d.tau) if d.trace_fixed else None,
            A0=d.A0, diagonal=d.diagonal, form=d.form,
        )
        for key, val in values.items():
            self.params[key].value = float(val)
        self._sync()
        self.data = new

    def alpha(self):
        """Hinge multipliers, shape (N,): the duals of the triplet
        constraints kept, 1 on the active set, 0 elsewhere."""
        alpha = self.active.astype(float)
        if "triplets" in self.constraints:
            alpha[self.margin_index] = np.ravel(self.constraints["triplets"].dual_value)
        return alpha

    def value(self):
        """The solver's ``A`` in the data's units (symmetrised matrix or a).

        A scaled model's ``B`` is first repaired in its own coordinates --
        negative eigenvalues (entries) clipped to 0, so that ``A = W B W``
        is PSD by congruence, the trace then restored by a positive factor
        -- and mapped back: repairing ``A`` instead would move its small
        entries by the round-off of its large ones.
        """
        val = self.A.value
        if self.scale is None:
            return val if self.data.diagonal else 0.5 * (val + val.T)
        w = self.w
        if self.data.diagonal:
            a = w * w * np.maximum(val, 0.0)
            tr = float(np.sum(a))
        else:
            ev, U = np.linalg.eigh(0.5 * (val + val.T))
            Bp = (U * np.maximum(ev, 0.0)) @ U.T
            a = (w[:, None] * Bp) * w[None, :]
            a = 0.5 * (a + a.T)
            tr = float(np.trace(a))
        if self.data.trace_fixed and tr > 0:
            a = a * (self.data.tau / tr)
        return a

    def solve(self, *, solvers=SOLVERS, tol=1e-9, verbose=False):
        """Solve; return a :class:`SolverResult` certified on the full problem.

        Raises
        ------
        CertificateError, SolverError
            When no solver produces a certified point.  Never
            ``InfeasibleError`` / ``UnboundedError``: every model of this
            class is feasible and bounded below (see :func:`_refute`).
        """
        t0 = time.perf_counter()

        def certify(name, version, opts, times):
            return self.data.certificate(
                self.value(), self.alpha(), solver=name, solver_version=version,
                tolerances=opts, times=times,
            )

        cert, info = solve_certified(self.problem, certify, solvers=solvers, tol=tol,
                                     verbose=verbose, confirm=_refute)
        return SolverResult(
            M=self.data.to_matrix(self.value()),
            status=info["status"],
            objective=cert.objective,
            n_iter=info["n_iter"],
            certificate=cert,
            method="exact",
            info={"model": self, "alpha": self.alpha(), "attempts": info["attempts"],
                  "reduced": self.reduced},
            time=time.perf_counter() - t0,
        )


class _RankDeclared(_ModelDeclared):
    """Eq. 7 / 9 / 11 as declared by :class:`RankDMLModel` on the user's data."""

    def __init__(self, model):
        self.model = model
        data = model.data
        key = "a" if data.diagonal else "A"
        variables = {key: model.A}
        if model.eps is not None:
            variables["eps"] = model.eps
        equation = {"frobenius": "Eq. 7", "burg": "Eq. 9", "logdet": "Eq. 9",
                    "laplacian": "Eq. 11"}[data.regularizer]
        super().__init__(
            family="rankdml", paper=PAPER, equation=equation, problem=model.problem,
            variables=variables, parameters=model.params,
            constraints=model.constraints, metric_key=key, data=data)

    def _family_certificate(self, M):
        alpha = self._dual("triplets")
        if alpha is None:
            self._warn_no_multipliers()
        else:
            alpha = np.ravel(alpha)
        return self.data.certificate(M, alpha, **self._certificate_args())


@fill_doc
def declared_problem(data):
    """Eq. 7 / 9 / 11 exactly as printed, in the user's units, unsolved.

    :class:`RankDMLModel` on ``data`` (no rescaling, no margin-set
    reduction): variables ``A`` (``a`` for a diagonal metric) and the slacks
    ``eps``; parameters ``lam`` and, for the trace-fixed forms, ``tau``;
    constraints ``triplets``, ``psd`` (``nonneg``) and ``trace`` where the
    form fixes it.  The certificate's dual bound uses the multipliers of the
    ``triplets`` constraint from the last solve.

    Parameters
    ----------
    data : RankData

    {declared_returns_model}
    """
    check_instance(data, RankData, "data")
    return _RankDeclared(RankDMLModel(data))


def _check_feature_scale(scale, d):
    D = np.asarray(scale, dtype=float)
    if D.shape != (d,) or not np.all(np.isfinite(D)) or not np.all(D > 0):
        raise ValueError(f"scale: expected {d} positive finite per-feature factors.")
    if not np.array_equal(np.ldexp(1.0, np.frexp(D)[1] - 1), D):
        raise ValueError("scale: the per-feature factors must be powers of two "
                         "(the scaled model must be the same problem exactly).")
    return D


def _feature_scale(data):
    """Per-feature powers of two ``D`` for the solver's variable ``B = D A D``.

    ``D_j`` is the power of two nearest the root mean square of feature
    ``j``'s differences over the triplets' pairs: the scaled rows
    ``Phi D^{-1}`` have every feature of unit size, whatever the units of
    the columns of ``X``; a feature constant over the pairs keeps
    ``D_j = 1``.  ``None`` when every ``D_j`` is 1 (nothing to gain).
    """
    op = data.op
    if op.n_pairs == 0:
        return None
    e, live = pow2_rms_exponents(op.X[op.i] - op.X[op.j])
    if not np.any(live):
        return None
    # |e| <= 200 covers every admissible difference length (MAX_DIFF_LENGTH
    # = 1e60 < 2^200) and keeps the weights w_i w_j >= 2^-400 normal
    e = np.clip(e, -200, 200)
    if not np.any(e):
        return None
    return np.ldexp(1.0, e)


def _refute(kind):
    """A conic solver's infeasibility or unboundedness claim is false here.

    Feasible: every slack can be as large as needed, and ``F`` has a point
    (``A = 0``, ``a = 0``; ``A = A0hat`` with ``tr = tau`` for Burg /
    LogDet; ``a = tau / d`` for the trace-fixed Laplacian).  Bounded below:
    the hinges and every regulariser are >= 0 on ``F``; in a reduced model
    the linear term ``-<S_V, A>`` is dominated by the strongly convex
    Frobenius term, and ``F`` is compact for the trace-fixed regularisers
    (``A PSD`` with a fixed trace), on which Burg / LogDet are bounded
    below.  So a claim is a numerical artefact: refuted, and the next
    solver is tried.  (One exception: a *reduced* model of Eq. 11 as
    printed, whose regulariser is flat along ``a = c 1``, is unbounded
    when the guessed active set has ``1^T S_V > 0`` and the margin rows do
    not stop the ray; then every solver fails, the round counts as failed,
    and :func:`_solve_exact` falls back to the declared model, which is
    bounded.)
    """
    return False


def _initial_partition(data, init):
    """Active / margin sets guessed from the result ``init``.

    Active (``V``): hinge argument above a band (multiplier 1, the hinge is
    linear there); margin (``W``): within the band or with a fractional
    multiplier; the rest is inactive (multiplier 0, dropped).
    """
    A = data.as_variable(init.M)
    arg = data.margins(A)
    band = 1e-3
    W = np.abs(arg) <= band
    alpha = init.info.get("alpha")
    if alpha is not None:
        alpha = np.asarray(alpha, float)
        W |= (alpha > 1e-6) & (alpha < 1 - 1e-6)
    V = (arg > band) & ~W
    return W, V


def _unit_scale(data):
    """The same problem in better-conditioned units (a power of two).

    ``X = 2^k X_u``: for Eq. 7 (full) the root mean square pair length of
    ``X_u`` is in ``[1/2, 1)``; for the trace-fixed regularisers ``k``
    brings ``tau_u`` to within a factor 2 of ``tr(A0)`` (``d`` for the
    Laplacian); the diagonal Eq. 7 is not rescaled.  By the scaling laws (docs/rankdml/decisions.md, "Scaling behaviour")
    ``f(A; X, lam, tau) = f(4^k A; X_u, lam_u, tau_u)`` with
    ``lam_u = lam / 16^k`` for ``"frobenius"`` and ``"laplacian"``
    (``lam`` otherwise) and ``tau_u = 4^k tau`` for the trace-fixed
    regularisers.  Every map is a power of two: exact.  Returns
    ``(data_u, k)``, or ``(data, 0)`` when ``k = 0`` or a rescaled value
    would leave the floating-point range.
    """
    from ..constraints import Triplets

    if data.trace_fixed:
        # the trace at its reference (tr(A0), d for the Laplacian): A of
        # order one for the conic solvers, whatever tau the user chose
        ref = float(np.trace(data.A0)) if data.A0 is not None else float(data.n_features)
        k = int(np.round(0.5 * np.log2(ref / data.tau)))
    elif data.diagonal:
        # measured: the diagonal Eq. 7 is solved more accurately in the
        # user's units (gap 2e-11 against 8e-7 at unit scale, X * 1e3)
        return data, 0
    else:
        # Eq. 7: unit data scale (A of order one over the triplets)
        op = data.op
        if op.n_pairs == 0:
            return data, 0
        Phi = op.X[op.i] - op.X[op.j]
        top = float(np.max(np.abs(Phi)))
        if not top > 0:
            return data, 0
        rms = top * float(np.sqrt(np.mean(np.sum((Phi / top) ** 2, axis=1))))
        k = int(np.frexp(rms)[1])
    if k == 0:
        return data, 0
    with np.errstate(over="ignore", under="ignore"):
        # out-of-range results are caught by the check below
        Xu = np.ldexp(data.X, -k)
        lam_u = np.ldexp(data.lam, -4 * k) \
            if data.regularizer in ("frobenius", "laplacian") else data.lam
        tau_u = np.ldexp(data.tau, 2 * k) if data.trace_fixed else None
    if not (np.array_equal(np.ldexp(Xu, k), data.X) and 1e-250 < lam_u < 1e250):
        return data, 0  # X would lose bits (subnormal) or lam leave the range
    try:
        inner = RankData.from_triplets(
            Triplets(Xu, data.triplets), regularizer=data.regularizer, lam=lam_u,
            tau=tau_u, A0=data.A0, diagonal=data.diagonal, form=data.form)
    except ValueError:
        return data, 0
    return inner, k


def solve_exact(data, *, reduce=True, init=None, warm_start=None, solvers=SOLVERS,
                tol=1e-9, max_rounds=6, verbose=False, rescale=True):
    """Certified exact solution of Eq. 7 / 9 / 11.

    The conic solvers work on the same problem at unit data scale
    (:func:`_unit_scale`, powers of two) and in per-feature units
    (:func:`_feature_scale`, the variable ``B = D A D``), both with
    ``rescale=True``; the answer is mapped back exactly and certified on
    ``data`` itself.  Parameters, return value and exceptions as
    :func:`_solve_exact`.
    """
    t0 = time.perf_counter()
    if data.lam == 0 and not data.diagonal:
        # no smooth dual: no fast solution to guess the margin set from
        reduce = False
    inner, k = _unit_scale(data) if rescale and data.lam > 0 else (data, 0)
    scaled = rescale  # per-feature scaling of the conic model (_feature_scale)
    if k == 0:
        return _solve_exact(data, reduce=reduce, init=init, warm_start=warm_start,
                            solvers=solvers, tol=tol, max_rounds=max_rounds,
                            verbose=verbose, scaled=scaled)
    if init is not None:
        info = dict(init.info)
        init = SolverResult(M=np.ldexp(np.asarray(init.M, float), 2 * k),
                            status=init.raw_status or init.status,
                            objective=init.objective, n_iter=init.n_iter,
                            certificate=init.certificate, method=init.method, info=info,
                            raw_status=init.raw_status)
    res = _solve_exact(inner, reduce=reduce, init=init, warm_start=warm_start,
                       solvers=solvers, tol=tol, max_rounds=max_rounds, verbose=verbose,
                       scaled=scaled)
    M = np.ldexp(res.M, -2 * k)
    if not data.diagonal:
        # a cone violation within tolerance in the solver's units grows by
        # 4^-k in the user's: project (and restore the trace)
        w, U = np.linalg.eigh(0.5 * (M + M.T))
        if w[0] < 0:
            w = np.maximum(w, 0.0)
            if data.trace_fixed:
                w = w * (data.tau / w.sum())
            M = (U * w) @ U.T
    c = res.certificate
    alpha = res.info.get("alpha")
    cert = data.certificate(data.as_variable(M), alpha, solver=c.solver,
                            solver_version=c.solver_version, tolerances=c.tolerances,
                            times=c.times)
    if not cert.passed:
        # not certified in the user's units: solve there instead
        return _solve_exact(data, reduce=reduce, init=None, warm_start=warm_start,
                            solvers=solvers, tol=tol, max_rounds=max_rounds,
                            verbose=verbose, scaled=scaled)
    info = {**res.info, "scaling": float(np.ldexp(1.0, k))}
    return SolverResult(M=M, status=res.raw_status or res.status, objective=cert.objective,
                        n_iter=res.n_iter, certificate=cert, method=res.method, info=info,
                        time=time.perf_counter() - t0, raw_status=res.raw_status)


def _solve_exact(data, *, reduce=True, init=None, warm_start=None, solvers=SOLVERS,
                 tol=1e-9, max_rounds=6, verbose=False, scaled=True):
    """Certified exact solution of Eq. 7 / 9 / 11 (in the units of ``data``).

    Parameters
    ----------
    data : RankData
    reduce : bool
        Solve the margin-set reduction instead of the declared model (see
        below); both return the full problem's optimum, certified on the
        full problem.
    init : SolverResult, optional
        A previous solution that guesses the partition (in the units of
        ``data``); it wins over ``warm_start``.
    warm_start : callable, optional
        ``warm_start(data) -> SolverResult``, called when the reduction
        needs a guess and ``init`` is None, on the problem it solves
        (:func:`solve_exact` calls it on the unit-scale twin of its data
        when it rescales).  :meth:`cvxmetric.formulations.Formulation.solve_exact`
        (the estimators' way in) gives :func:`cvxmetric.rankdml.fast.warm_start`.
        With neither ``init`` nor ``warm_start`` there is no guess and the
        declared model is solved, as with ``reduce=False``.
    solvers : sequence of str
        Clarabel first, SCS as fallback.
    tol : float
        Solver tolerance.
    max_rounds : int
        Reduction rounds before the declared model is solved instead.
    verbose : bool
    scaled : bool
        Solve every conic model of a full-matrix problem in the per-feature
        units of :func:`_feature_scale` (``B = D A D``); the answer is
        certified in the units of ``data`` either way.

    Returns
    -------
    SolverResult
        ``method="exact"``; ``M`` is (d, d) (``diag(a)`` for diagonal
        problems); ``info["model"]`` is the :class:`RankDMLModel` solved
        (``info["reduced"]`` says whether it is the reduction),
        ``info["alpha"]`` the hinge multipliers of all triplets.

    Raises
    ------
    CertificateError, SolverError
        When no solver produces a certified point.

    Notes
    -----
    **Reduction.**  At an optimum every hinge is inactive (argument < 0,
    multiplier 0), active (> 0, multiplier 1: linear there) or on its
    margin.  Given a guess of that partition (from ``init`` or
    ``warm_start``: the caller's fast solve), inactive
    triplets are dropped, active ones summed into the one linear term
    ``|V| - <S_V, A>`` and only the margin set keeps its slacks and rows.
    The reduced optimum is the full optimum exactly when the partition is
    consistent, which the certificate on the *full* problem checks (its
    dual bound is evaluated at the reduced model's multipliers extended by
    1 on ``V`` and 0 elsewhere); inconsistent triplets join the margin set
    and the model is solved again.  A wrong guess costs time, never
    accuracy.  On digits (PCA to 30 dimensions, 14 370 critical triplets)
    the declared model took 443 s and 1.4 GB; the reduction keeps only the
    margin set.
    """
    # full matrices only: a diagonal model's variables are per feature
    # already, and Clarabel's own column equilibration serves it better
    # (measured, X * 1e3: gap 1e-11 unscaled against 3e-8 scaled)
    scale = _feature_scale(data) if scaled and not data.diagonal else None
    t0 = time.perf_counter()
    if reduce and init is None and warm_start is not None:
        init = warm_start(data)
    if not reduce or init is None:
        # no reduction asked for, or no guess to start it from
        return RankDMLModel(data, scale=scale).solve(solvers=solvers, tol=tol,
                                                     verbose=verbose)
    # data whose hinges float64 cannot resolve: refused before any conic solve
    data.check_resolution(init)
    sizes = []
    result = _reduction_rounds(data, init, scale, sizes, max_rounds=max_rounds,
                               solvers=solvers, tol=tol, verbose=verbose)
    if result is None:
        result = _declared_or_fast(data, init, scale, solvers=solvers, tol=tol,
                                   verbose=verbose)
    result.info["margin_set_sizes"] = sizes
    result.time = time.perf_counter() - t0
    return result


def _reduction_rounds(data, init, scale, sizes, *, max_rounds, solvers, tol, verbose):
    """The margin-set reduction's rounds (see :func:`_solve_exact`).

    Starts from the partition guessed from ``init``; after each round the
    triplets whose hinges contradict the guess join the margin set.
    Appends each round's margin-set size to ``sizes``.  Returns the first
    certified result, or ``None`` when ``max_rounds`` pass, or a round
    fails with no inconsistent hinge to add.
    """
    W, V = _initial_partition(data, init)
    for _ in range(max_rounds):
        sizes.append(int(W.sum()))
        model = RankDMLModel(data, margin=W, active=V, scale=scale)
        result, bad = _reduced_round(data, model, W, V, solvers=solvers, tol=tol,
                                     verbose=verbose)
        if result is not None:
            return result
        if bad is None or not np.any(bad):
            return None
        W = W | bad
        V = V & ~bad
    return None


def _reduced_round(data, model, W, V, *, solvers, tol, verbose):
    """``(result, bad)``: one reduced model solved, certified on the full
    problem (``result``), or ``None`` and the triplets whose hinges at the
    solver's point contradict the partition (``None`` without a point)."""
    # the first solver alone: when its point shows hinges inconsistent
    # with the guessed partition, the guess is at fault, not the solver,
    # and a fallback solve of the same reduced model is wasted (measured:
    # SCS ran 93 s to its iteration cap on such a round, breast_cancer)
    bad = None
    for group in (solvers[:1], solvers[1:]):
        if not group:
            continue
        try:
            return model.solve(solvers=group, tol=tol, verbose=verbose), None
        except SolverError:
            pass
        if model.A.value is None:
            continue
        # inconsistent hinges join the margin set
        arg = data.margins(model.value())
        bad = (V & (arg < -1e-9)) | (~W & ~V & (arg > 1e-9))
        if np.any(bad):
            break
    return None, bad


def _declared_or_fast(data, init, scale, *, solvers, tol, verbose):
    """The declared (unreduced) model solved, or, when both conic solvers
    fail on it, the fast solver's point ``init`` if its certificate passed."""
    try:
        return RankDMLModel(data, scale=scale).solve(solvers=solvers, tol=tol,
                                                     verbose=verbose)
    except SolverError:
        if not init.certificate.passed:
            raise
        # both conic solvers failed on a problem the fast solver certified
        # (the certificate is the family's, on the declared problem, whoever
        # produced the point): return that point, saying where it came from
        return dataclasses.replace(init, info={**init.info, "reduced": False,
                                               "certified_by": init.method})

"""Newton polish of an interior-point answer to Eq. 2, on the optimum's face.

Clarabel stops "optimal_inaccurate" on LDML problems whose pairs are
nearly separated (terms ``log(1 + e^u)`` at ``u`` of -10 to -20 sit deep
in the exponential cone, where its steps lose precision): its point is
then about ``1e-8`` above the optimum, but the dual point read from its
slopes is first-order away from dual optimality and the certificate
falls short (relative gaps of ``1e-6`` to ``1e-4``, whatever the
tolerances and the scaling).  The remedy used for SDPs (e.g. the
"polishing" of conic solvers) is to take the face the interior-point
method has found and finish there with Newton's method:

* the point is projected onto the data's span (distances do not see the
  rest; it only adds to the regulariser) and its ``k`` leading
  eigenvectors ``U`` taken as the optimum's face, ``M = U Z U^T``;
* the rank-``k`` PSD matrices near it are charted by ``(Z, E)``, ``M = V
  Z V^T`` with ``V = U + U_perp E`` (the face may turn: the solver's
  eigenvectors carry its error), and Eq. 2 is smooth in ``(Z, E, b)``:
  Newton's method with exact second derivatives and a backtracking line
  search keeping ``Z`` positive definite converges quadratically from the
  solver's point to the rank-``k`` minimiser;
* several ``k`` are tried (:data:`FACE_LADDER`: the spectrum's largest
  relative gap, then fixed relative thresholds) and ranked by the KKT residual of the whole
  problem: ``G = S(alpha) + lam I`` (trace; ``S + lam M`` Frobenius)
  must be PSD with ``G M = 0``.

Nothing here is trusted: the caller certifies the polished point with the
same dual bound as any other (:meth:`LDMLData.dual_bound`), and keeps the
solver's point when no polished one passes.
"""

from types import SimpleNamespace

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve, eigh
from scipy.special import expit

from .._face import polish_on_faces
from .._linesearch import backtracking
from .._settings import POLISH_RANK
from ._budget import expired

__all__ = ["polish", "POLISH_RANK"]

#: The face polish's ladder (:func:`polish`): the ranks ``k`` tried, read
#: off the spectrum of the solver's ``M`` -- at its largest relative gap,
#: then the eigenvalues above ``1e-12`` of the largest (every positive
#: one), then above each fixed fraction of it.
FACE_LADDER = ("largest-gap", 1e-12, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9)

#: The fit's budget (:mod:`._budget`), as the face polish checks it.
_BUDGET = SimpleNamespace(expired=expired)


def _svec(Psi):
    """Rows ``a_p`` with ``a_p . z = psi_p^T Z psi_p`` for ``z`` the upper
    triangle of ``Z`` (off-diagonal entries counted twice).

    Psi : (P, k) -> (P, k (k + 1) / 2), plus the index arrays."""
    k = Psi.shape[1]
    iu, ju = np.triu_indices(k)
    A = Psi[:, iu] * Psi[:, ju]
    A[:, iu != ju] *= 2.0
    return A, iu, ju


def _sym(z, iu, ju, k):
    Z = np.zeros((k, k))
    Z[iu, ju] = z
    return Z + np.triu(Z, 1).T


class _Chart:
    """Eq. 2 near the rank-``k`` point ``M = U Z U^T`` (span coordinates),
    in the chart ``(z, E, b)``: ``M(z, E) = V Z V^T`` with ``V = U + U_perp
    E``, ``Z`` from its upper triangle ``z``, ``E`` (r - k, k).

    The chart covers every rank-``k`` PSD matrix near ``M`` once, so
    Newton's method in it converges quadratically to a minimiser of rank
    ``k``; :meth:`derivatives` are taken at ``E = 0`` (the chart is
    re-centred after each step)."""

    def __init__(self, data, Psi, U, Z):
        r, k = U.shape
        self.data, self.Psi, self.U, self.Z, self.k = data, Psi, U, Z, k
        self.Uperp = np.linalg.svd(np.eye(r) - U @ U.T)[0][:, :r - k]  # (r, r - k)
        self.a = Psi @ U  # (P, k)
        self.c = Psi @ self.Uperp  # (P, r - k)
        self.A, self.iu, self.ju = _svec(self.a)
        self.nz, self.ne = len(self.iu), (r - k) * k

    def split(self, x):
        nz, ne, k = self.nz, self.ne, self.k
        return (_sym(x[:nz], self.iu, self.ju, k), x[nz:nz + ne].reshape(-1, k),
                float(x[-1]))

    def point(self, x, b0):
        """``(U', Z', b)``: the point ``x`` re-centred (``V = U' R``)."""
        dZ, E, db = self.split(x)
        U, R = np.linalg.qr(self.U + self.Uperp @ E)
        Z = R @ (self.Z + dZ) @ R.T
        return U, 0.5 * (Z + Z.T), b0 + db

    def value(self, x, b0):
        """Eq. 2 at the chart's point ``x`` (``inf`` outside ``Z > 0``)."""
        data = self.data
        dZ, E, db = self.split(x)
        Z = self.Z + dZ
        try:
            cho_factor(Z)
        except LinAlgError:
            return np.inf
        W = self.a + self.c @ E  # (P, k): V^T psi_p
        d = np.einsum("pi,ij,pj->p", W, Z, W)
        u = data.s * (d - (b0 + db))
        VtV = np.eye(self.k) + E.T @ E
        if data.regularizer == "trace":
            reg = float(np.sum(Z * VtV))
        else:
            ZV = Z @ VtV
            reg = 0.5 * float(np.sum(ZV * ZV.T))
        return float(np.sum(np.logaddexp(0.0, u))) + data.lam * reg

    def derivatives(self, b):
        """Gradient and Hessian of :meth:`value` at ``x = 0``."""
        data, Z, k = self.data, self.Z, self.k
        s, lam, trace = data.s, data.lam, data.regularizer == "trace"
        a, c, A = self.a, self.c, self.A
        iu, ju = self.iu, self.ju
        off = iu != ju
        u = s * (np.einsum("pi,ij,pj->p", a, Z, a) - b)
        sig = expit(u)
        kap = sig * (1.0 - sig)
        ss = s * sig
        # first derivatives of d_p: a_p (z), 2 c_p (Z a_p)^T (E), and -1 (b)
        Fe = 2.0 * (c[:, :, None] * (a @ Z)[:, None, :]).reshape(len(s), -1)
        J = np.hstack([A, Fe, -np.ones((len(s), 1))])  # (P, n)
        g = J.T @ ss
        H = (J * kap[:, None]).T @ J  # the Gauss-Newton part
        nz, ne = self.nz, self.ne
        zi = np.arange(nz)
        if trace:
            g[:nz][~off] += lam
        else:
            w = np.where(off, 2.0, 1.0)
            g[:nz] += lam * w * Z[iu, ju]
            H[zi, zi] += lam * w
        if ne:
            # second derivatives of d_p, weighted by s_p sigma_p: E E gives
            # 2 kron(S_perp, Z), z E gives 2 tr(E dZ S_{U,perp}); and of the
            # regulariser, E E: 2 lam kron(I, Z) (trace), 2 lam kron(I, Z^2)
            # (Frobenius)
            S_pp = (c * ss[:, None]).T @ c
            S_up = (a * ss[:, None]).T @ c  # (k, r - k)
            reg_e = Z if trace else Z @ Z
            Hee = 2.0 * np.kron(S_pp, Z) + 2.0 * lam * np.kron(np.eye(len(S_pp)), reg_e)
            H[nz:nz + ne, nz:nz + ne] += Hee
            # d/dE_ij d/dz_lm of 2 sum E_ij dZ_jl S_up[l, i]
            Hez = np.zeros((ne, nz))
            rows = np.arange(ne).reshape(-1, k)  # rows[i, j]: index of E_ij
            for col, (l, m) in enumerate(zip(iu, ju)):
                Hez[rows[:, l], col] += 2.0 * S_up[m]
                if l != m:
                    Hez[rows[:, m], col] += 2.0 * S_up[l]
            H[nz:nz + ne, :nz] += Hez
            H[:nz, nz:nz + ne] += Hez.T
        return g, 0.5 * (H + H.T)


def _newton(data, Psi, U, Z, b, maxiter=60):
    """Newton's method on Eq. 2 over the rank-``k`` matrices near ``U Z
    U^T`` (:class:`_Chart`): ``(Mr, b)`` or ``None`` when it fails (the
    Hessian is not positive: not a rank-``k`` minimiser)."""
    f, quiet = None, 0
    for _ in range(maxiter):
        if expired():
            break  # the fit's budget: the point so far (judged by its certificate)
        chart = _Chart(data, Psi, U, Z)
        if f is None:
            f = chart.value(np.zeros(chart.nz + chart.ne + 1), b)
        g, H = chart.derivatives(b)
        # a relative floor on the diagonal: directions the pairs do not see
        # (more unknowns than pairs) get a bounded step, not a singular solve
        H[np.diag_indices_from(H)] += 1e-12 * max(1.0, float(np.trace(H)) / len(g))
        try:
            step = -cho_solve(cho_factor(H), g)
        except (LinAlgError, ValueError):
            # indefinite where G is negative off the face (the face must
            # turn or grow): the Hessian shifted to positive definite, a
            # descent direction in every coordinate (Levenberg-Marquardt)
            low = float(np.linalg.eigvalsh(H)[0])
            shift = 1.1 * max(-low, 0.0) + 1e-12 * max(1.0, float(np.trace(H)) / len(g))
            try:
                step = -cho_solve(cho_factor(H + shift * np.eye(len(g))), g)
            except (LinAlgError, ValueError):
                return None
        dec = -float(g @ step)
        if not np.isfinite(dec) or dec < 0:
            return None
        scale = max(1.0, abs(f))
        if dec <= 1e-30 * scale:
            break
        if dec <= 1e-13 * scale:
            # the step's gain is below the objective's round-off: the line
            # search cannot judge it, but the step still shrinks the
            # gradient (the dual certificate's error) quadratically; taken
            # whole, twice at most
            f_new = chart.value(step, b)
            if not f_new <= f + 1e-14 * scale:
                break
            U, Z, b = chart.point(step, b)
            f = f_new
            quiet += 1
            if quiet >= 2:
                break
            continue
        search, blocked = _search(chart, step, b, f, dec)
        t, f_new = search.step, search.value
        if not search.accepted or (blocked and t < 1e-3):
            # steps cut short by Z > 0: the minimiser lies on a smaller
            # face; drop Z's weakest direction (a face too large)
            if not blocked or U.shape[1] <= 1:
                break
            wz, Vz = eigh(Z)
            U, Z = U @ Vz[:, 1:], np.diag(wz[1:])
            f = None
            continue
        U, Z, b = chart.point(t * step, b)
        f = f_new
    return U @ Z @ U.T, float(b)


def _search(chart, step, b, f, dec):
    """Armijo's backtracking along the Newton ``step`` of value ``f`` and
    decrease ``dec``: ``(LineSearch, blocked)``, ``blocked`` whether a trial
    left ``Z > 0`` (``F = inf`` there)."""
    blocked = []

    def trial(t):
        f_new = chart.value(t * step, b)
        if f_new == np.inf:
            blocked.append(t)
        return f_new

    search = backtracking(trial, lambda t, f_new: f_new <= f - 0.25 * t * dec,
                          min_step=1e-12)
    return search, bool(blocked)


def _gradient(data, Psi, Mr, b):
    """``G = S(alpha) + lam I`` (trace; ``+ lam M`` Frobenius) in span
    coordinates (``Psi = Phi Q``, ``Mr = Q^T M Q``), the gradient of Eq. 2
    in ``M``, the residual of the equation in ``b``, and the slopes
    ``alpha``."""
    a = expit(data.s * (np.einsum("pi,ij,pj->p", Psi, Mr, Psi) - b))
    G = (Psi * (a * data.s)[:, None]).T @ Psi
    G = G + (data.lam * np.eye(len(G)) if data.regularizer == "trace" else data.lam * Mr)
    return 0.5 * (G + G.T), abs(float(np.sum(data.s * a))), a


def _kkt(G, Mr, rb):
    """The KKT residual of Eq. 2: ``G`` must be PSD with ``G M = 0``, the
    slopes balanced (``rb = |sum_p alpha_p s_p|``)."""
    low = float(np.linalg.eigvalsh(G)[0])
    comp = float(np.abs(G @ Mr).max()) / max(1.0, float(np.abs(Mr).max()))
    return max(0.0, -low) + comp + rb


def _grow(data, Psi, Mr, b, k):
    """Rank-``k`` minimiser ``(Mr, b)`` -> ``(kkt, Mr, b)``, the face grown
    while ``G`` has a negative eigenvalue.

    A face too small (the solver's point, or a start from a nearby problem,
    short of a direction the optimum uses) leaves ``G`` negative along some
    ``v``: ``M + eps v v^T`` lowers Eq. 2 (its slope is ``v^T G v < 0``),
    with ``eps`` from one Newton step along it, and Newton's method
    restarts on the face of rank ``k + 1``, up to the span's dimension
    (or ``POLISH_RANK``)."""
    G, rb, sig = _gradient(data, Psi, Mr, b)
    best = (_kkt(G, Mr, rb), Mr, b)
    while k < min(Psi.shape[1], POLISH_RANK):
        lo, vecs = np.linalg.eigh(G)
        scale = max(1.0, float(np.abs(G).max()))
        if lo[0] >= -1e-10 * scale:
            break
        v = vecs[:, 0]
        # curvature of the loss along v v^T: d_p moves by eps (psi_p . v)^2
        q = (Psi @ v) ** 2
        curv = float(np.sum(sig * (1.0 - sig) * q * q))
        if data.regularizer == "frobenius":
            curv += data.lam
        if curv <= 0:
            break
        wz, Vz = eigh(Mr + (-lo[0] / curv) * np.outer(v, v))
        k += 1
        out = _newton(data, Psi, Vz[:, ::-1][:, :k], np.diag(wz[::-1][:k]), b)
        if out is None:
            break
        Mr, b = out
        G, rb, sig = _gradient(data, Psi, Mr, b)
        res = _kkt(G, Mr, rb)
        if res >= best[0]:
            break
        best = (res, Mr, b)
    return best


def polish(data, M, b, max_candidates=2):
    """Polished points ``(M, b)`` from the solver's ``(M, b)``, the most
    promising first (module docstring); possibly none.

    The faces are the ranks ``k`` read off the spectrum at each rung of
    :data:`FACE_LADDER`; each is solved by Newton's method (:func:`_newton`),
    grown while it is too small (:func:`_grow`) and ranked by its KKT
    residual, the search stopping at a KKT point to round-off (the loop is
    :func:`~cvxmetric._face.polish_on_faces`)."""
    if expired():
        return []
    Q = data.span()  # (D, r) orthonormal
    if Q.shape[1] == 0:
        return []
    Psi = data.Phi @ Q  # (P, r)
    w, V = eigh(Q.T @ (0.5 * (M + M.T)) @ Q)
    w, V = w[::-1], V[:, ::-1]  # descending
    if w[0] <= 0:
        return []
    pos = w[w > 1e-12 * w[0]]

    def read(rung):
        if rung == "largest-gap":
            if len(pos) <= 1:
                return None
            k = int(np.argmax(pos[:-1] / pos[1:])) + 1
        else:
            k = int(np.sum(w > rung * w[0]))
        return None if k < 1 or k > POLISH_RANK else (k, k)

    def solve(k):
        out = _newton(data, Psi, V[:, :k], np.diag(w[:k]), float(b))
        return None if out is None else _grow(data, Psi, *out, k)

    # a KKT point to round-off: the other faces cannot do better
    found = polish_on_faces(FACE_LADDER, read, solve, lambda item: item[0], target=1e-10,
                            keep=max_candidates, deadline=_BUDGET).best
    polished = []
    for _, (_, Mr, bp) in (found[0] if found else []):
        Mp = Q @ Mr @ Q.T
        polished.append((0.5 * (Mp + Mp.T), bp))
    return polished

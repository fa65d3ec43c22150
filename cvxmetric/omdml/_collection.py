"""The OMDML family of the problem collection (registered on import).

An instance is the views concatenated side by side (``X``, with the views'
dimensions in ``dims``), triplets ``(p, p+, p-)`` and a fixed combination
``theta``: Eq. 3 at that ``theta``, the convex problem the exact path
certifies.  Its solution is stored as the block-diagonal matrix of the
``M_i``.  No fast method is verified against it: the online algorithms do
not claim this optimum, and their own claims (the PA step, the projection,
the mistake bound, Hedge) are tested in ``tests/omdml``.
"""

import numpy as np

from ..collection import ArraySpec, FamilySpec, register_family

__all__ = []  # registers the family on import; nothing public

_ARRAYS = (
    ArraySpec("X", "float", ("n", "D"), doc="the views side by side, view i "
              "in columns sum(dims[:i]) .. sum(dims[:i+1])"),
    ArraySpec("dims", "int", ("m",), doc="the views' dimensions, summing to D"),
    ArraySpec("triplets", "int", ("T", 3), doc="(p, p+, p-): p closer to p+"),
    ArraySpec("theta", "float", ("m",), doc="the fixed combination (simplex)"),
)

_HP = {"C": 1.0}


class _Instance:
    """Eq. 3 data with its fixed ``theta``."""

    def __init__(self, data, theta):
        self.data, self.theta = data, theta

    def blocks(self, M):
        offs = np.cumsum((0,) + self.data.dims)
        return [M[a:b, a:b] for a, b in zip(offs[:-1], offs[1:])]


def _to_data(arrays, hp):
    from ._problem import OMDMLData, check_theta

    X, dims = arrays["X"], np.asarray(arrays["dims"])
    if np.any(dims < 1) or int(dims.sum()) != X.shape[1]:
        raise ValueError(f"dims: must be positive and sum to the {X.shape[1]} "
                         f"columns of X.")
    offs = np.cumsum(np.concatenate([[0], dims]))
    views = [X[:, a:b] for a, b in zip(offs[:-1], offs[1:])]
    data = OMDMLData.from_views(views, arrays["triplets"], C=hp["C"])
    return _Instance(data, check_theta(arrays["theta"], len(dims)))


def _objective(inst, M):
    return inst.data.objective(inst.blocks(M), inst.theta)


def _exact(inst):
    from .exact import solve_exact

    return solve_exact(inst.data, inst.theta)


def _reference_solve(inst, solver, tol):
    from .exact import solve_exact

    return solve_exact(inst.data, inst.theta, solvers=(solver,), tol=tol)


def _sizes(arrays):
    n, D = arrays["X"].shape
    return {"n": int(n), "D": int(D), "views": int(len(arrays["dims"])),
            "n_triplets": int(len(arrays["triplets"]))}


def _bundled():
    """The bundled instances (a few hundred triplets, small views)."""
    from ..constraints import triplets_from_labels
    from ..experiments.omdml.views import digits_views, synthetic_views

    out = []

    def add(name, source, seed, description, views, t, theta, C=1.0):
        out.append(dict(
            name=name, source=source, random_state=seed, description=description,
            arrays={"X": np.hstack(views), "dims": np.array([v.shape[1] for v in views]),
                    "triplets": t, "theta": np.asarray(theta, dtype=float)},
            hyperparameters={"C": C}))

    views, y = synthetic_views(60, dims=(4, 4, 4), informative=0, separation=1.0,
                               random_state=30)[:2]
    t = triplets_from_labels(y, 150, random_state=30)
    add("synthetic_uniform", "synthetic", 30,
        "Eq. 3 at uniform theta: 3 views of 4 features (one informative, two "
        "noise), 60 items, 150 triplets, C=1.", views, t, [1 / 3] * 3)
    add("synthetic_skewed_theta", "synthetic", 30,
        "Eq. 3 at theta=(0.7, 0.2, 0.1): the data of synthetic_uniform, C=0.5.",
        views, t, [0.7, 0.2, 0.1], C=0.5)
    views, y, _ = digits_views(120, random_state=31)
    keep = [1, 3, 4]  # intensity histogram, row/column profiles, moments
    views = [views[k] for k in keep]
    t = triplets_from_labels(y, 200, random_state=31)
    add("digits_three_views", "digits", 31,
        "Eq. 3 at uniform theta: 120 digits seen through their intensity "
        "histogram (16), row/column profiles (16) and moments (14), scaled to "
        "[0, 1]; 200 class triplets, C=1.", views, t, [1 / 3] * 3)
    return out


register_family(
    FamilySpec(name="omdml", arrays=_ARRAYS, hyperparameters=_HP, to_data=_to_data,
               objective=_objective, exact=_exact, reference_solve=_reference_solve,
               sizes=_sizes, generate=_bundled,
               matrix_dim=lambda arrays: arrays["X"].shape[1]),
)

"""The RCA family of the problem collection (registered on import).

An instance is a sample matrix ``X`` and its chunklet labels ``chunks``
(``-1``: a sample in no chunklet); RCA has no hyperparameter.  The
verified objective is Sec. 4.2's ``(1/p) sum_j sum_i ||x_ji - m_j||_M^2``
at an ``M`` with ``|M| = 1`` (:meth:`~cvxmetric.rca.RCAData.objective`);
the family's fast method is the closed form.
"""

import numpy as np

from ..collection import ArraySpec, FamilySpec, exact_solves, register_family

__all__ = ["RCA_ARRAYS", "bundled_instances"]

RCA_ARRAYS = (
    ArraySpec("X", "float", ("n", "d"), doc="samples, one per row"),
    ArraySpec("chunks", "int", ("n",),
              doc="chunklet of each sample (-1: none); chunklets of 2 or more"),
)


def _to_data(arrays, hp):
    from ._problem import RCAData

    return RCAData(arrays["X"], arrays["chunks"])


def _objective(data, M):
    return data.objective(M)


_exact, _reference_solve = exact_solves("rca")


def _sizes(arrays):
    n, d = arrays["X"].shape
    chunks = arrays["chunks"]
    return {"n": int(n), "d": int(d),
            "n_chunks": int(np.unique(chunks[chunks >= 0]).size)}


def bundled_instances():
    """The bundled RCA instances: metric-learn's chunklet draws on iris and
    wine, and a synthetic instance with unchunked samples and chunklets of
    several sizes."""
    from sklearn.datasets import load_iris, load_wine

    from ._problem import chunks_from_labels

    def instance(name, X, chunks, source, seed, text):
        return dict(name=name, source=source, random_state=seed,
                    description=f"RCA: {text}.",
                    arrays={"X": X, "chunks": chunks.astype(np.int64)},
                    hyperparameters={})

    X, y = load_iris(return_X_y=True)
    chunks, _ = chunks_from_labels(y, 30, 2, random_state=0)
    out = [instance("iris30x2", X, chunks, "iris", 0,
                    "30 chunklets of 2 iris samples (metric-learn's draw), raw "
                    "features")]
    X, y = load_wine(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    chunks, _ = chunks_from_labels(y, 20, 3, random_state=1)
    out.append(instance("wine20x3", X, chunks, "wine", 1,
                        "20 chunklets of 3 wine samples, standardised"))
    rng = np.random.RandomState(2)
    X = rng.normal(size=(60, 6)) * np.linspace(0.5, 3.0, 6)
    chunks = np.repeat(np.arange(12), [2, 2, 3, 3, 4, 4, 5, 5, 3, 3, 2, 2])
    chunks = np.concatenate([chunks, -np.ones(60 - chunks.size, dtype=int)])
    out.append(instance("synthetic", X, rng.permutation(chunks), "synthetic", 2,
                        "60 Gaussian samples in 6 dims of spreads 0.5 to 3, 38 of "
                        "them in 12 chunklets of 2 to 5, the rest in none"))
    return out


register_family(
    FamilySpec(
        name="rca",
        arrays=RCA_ARRAYS,
        hyperparameters={},
        to_data=_to_data,
        objective=_objective,
        exact=_exact,
        reference_solve=_reference_solve,
        sizes=_sizes,
        generate=bundled_instances,
    ),
)

"""The GMML family of the problem collection (registered on import).

An instance is a sample matrix ``X``, labelled pairs of its rows and the
hyperparameters ``lam`` and ``t`` (``t = 1/2``: Eq. 13; the prior is the
identity).  The verified objective is Eq. 13's
(:meth:`~cvxmetric.gmml.GMMLData.objective`); the methods are the exact
path and the closed form, certified.
"""

import numpy as np

from .._extend import pairs_family
from ..collection import register_family

__all__ = ["GMML_HYPERPARAMETERS", "bundled_instances"]

GMML_HYPERPARAMETERS = {"lam": 0.1, "t": 0.5}


def bundled_instances():
    """The bundled GMML instances."""
    from sklearn.datasets import load_iris, load_wine

    from ..constraints import pairs_from_labels

    def instance(name, X, y, n_pairs, seed, text, lam):
        pairs, labels = pairs_from_labels(y, n_pairs, random_state=seed)
        return dict(name=name, source=text.split()[0], random_state=seed,
                    description=f"GMML Eq. 13 (lam = {lam:g}): {text}.",
                    arrays={"X": X, "pairs": pairs.astype(np.int64),
                            "pair_labels": labels.astype(np.int64)},
                    hyperparameters={"lam": lam, "t": 0.5})

    X, y = load_iris(return_X_y=True)
    out = [instance("iris180", X, y, 180, 0, "iris raw, metric-learn's 180 pairs", 0.1)]
    X, y = load_wine(return_X_y=True)
    Xs = (X - X.mean(axis=0)) / X.std(axis=0)
    out.append(instance("wine180", Xs, y, 180, 1,
                        "wine standardised, metric-learn's 180 pairs", 1.0))
    rng = np.random.RandomState(2)
    y = rng.randint(0, 4, 120)
    X = rng.normal(size=(4, 12))[y] + rng.normal(size=(120, 12))
    out.append(instance("synthetic12", X, y, 40, 2,
                        "synthetic 4 Gaussian classes in 12 dims, 40 pairs (fewer "
                        "similar pairs than features: lam makes A definite)", 0.5))
    return out


register_family(pairs_family("gmml", GMML_HYPERPARAMETERS, generate=bundled_instances))

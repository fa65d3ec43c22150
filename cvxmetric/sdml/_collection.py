"""The SDML family of the problem collection (registered on import).

An instance is a sample matrix ``X``, labelled pairs of its rows and the
hyperparameters ``balance_param`` and ``sparsity_param`` (the prior is the
identity).  The verified objective is ``tr(M P) - log det M + lam
||M||_{1,off}`` (:meth:`~cvxmetric.sdml.SDMLData.objective`); the methods
are the exact path and scikit-learn's graphical lasso, certified.
"""

import numpy as np

from .._extend import pairs_family
from ..collection import register_family

__all__ = ["SDML_HYPERPARAMETERS", "bundled_instances"]

#: metric-learn's defaults.
SDML_HYPERPARAMETERS = {"balance_param": 0.5, "sparsity_param": 0.01}


def _standardised(X):
    return (X - X.mean(axis=0)) / X.std(axis=0)


def bundled_instances():
    """The bundled SDML instances: positive definite ``P`` at a small
    ``balance_param`` (metric-learn's 0.5 makes these unbounded)."""
    from sklearn.datasets import load_iris, load_wine

    from ..constraints import pairs_from_labels

    def instance(name, X, y, n_pairs, seed, text, balance, sparsity):
        pairs, labels = pairs_from_labels(y, n_pairs, random_state=seed)
        return dict(name=name, source=text.split()[0], random_state=seed,
                    description=f"SDML (balance_param = {balance:g}, sparsity_param "
                                f"= {sparsity:g}): {text}.",
                    arrays={"X": X, "pairs": pairs.astype(np.int64),
                            "pair_labels": labels.astype(np.int64)},
                    hyperparameters={"balance_param": balance,
                                     "sparsity_param": sparsity})

    X, y = load_iris(return_X_y=True)
    out = [instance("iris180", _standardised(X), y, 180, 0,
                    "iris standardised, metric-learn's 180 pairs", 1e-3, 0.01)]
    X, y = load_wine(return_X_y=True)
    out.append(instance("wine180", _standardised(X), y, 180, 1,
                        "wine standardised, metric-learn's 180 pairs", 1e-4, 0.05))
    rng = np.random.RandomState(2)
    y = rng.randint(0, 4, 120)
    X = rng.normal(size=(4, 12))[y] + rng.normal(size=(120, 12))
    out.append(instance("synthetic12", X, y, 320, 2,
                        "synthetic 4 Gaussian classes in 12 dims, 320 pairs",
                        2e-4, 0.02))
    return out


register_family(pairs_family("sdml", SDML_HYPERPARAMETERS, generate=bundled_instances))

"""The ITML family of the problem collection (registered on import).

An instance is a sample matrix ``X``, labelled pairs (indices into ``X``,
labels +1 / -1) and ``gamma``; the bounds are metric-learn's defaults of
the instance's pairs (:func:`~cvxmetric.itml.default_bounds`) and the
prior is the identity.  The verified objective is ITML's with its best
slacks (:meth:`~cvxmetric.itml.ITMLData.objective`).  The methods are the
registry's: the certified dual Newton method (``fast``), judged against
the references, and Algorithm 1 at metric-learn's defaults (``bregman``),
whose gap is reported.
"""

import numpy as np

from .._extend import pairs_family
from ..collection import register_family

__all__ = ["ITML_HYPERPARAMETERS", "bundled_instances"]

ITML_HYPERPARAMETERS = {"gamma": 1.0}


def _standardised(X):
    s = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(s > 0, s, 1.0)


def bundled_instances():
    """The bundled ITML instances (metric-learn's pair draws, small)."""
    from sklearn.datasets import load_iris, load_wine

    from .estimator import metric_learn_pairs

    def instance(name, X, y, n, seed, source, text, gamma=1.0):
        codes = np.unique(y, return_inverse=True)[1]
        a, b, c, d = metric_learn_pairs(codes, n, seed)
        pairs = np.vstack([np.column_stack([a, b]), np.column_stack([c, d])])
        labels = np.concatenate([np.ones(len(a)), -np.ones(len(c))]).astype(np.int64)
        return dict(name=name, source=source, random_state=seed,
                    description=f"ITML (gamma = {gamma}): {text}.",
                    arrays={"X": X, "pairs": pairs.astype(np.int64),
                            "pair_labels": labels},
                    hyperparameters={"gamma": gamma})

    X, y = load_iris(return_X_y=True)
    out = [instance("iris180", _standardised(X), y, 180, 0, "iris",
                    "standardised iris, metric-learn's 180 + 180 pairs")]
    X, y = load_wine(return_X_y=True)
    out.append(instance("wine100", _standardised(X), y, 100, 1, "wine",
                        "standardised wine, 100 + 100 pairs", gamma=0.5))
    rng = np.random.RandomState(2)
    y = np.repeat(np.arange(3), 20)
    X = 2.0 * rng.normal(size=(3, 6))[y] + rng.normal(size=(60, 6)) \
        * np.linspace(0.3, 3.0, 6)
    out.append(instance("synthetic", X, y, 80, 2, "synthetic",
                        "3 Gaussian classes in 6 dims, raw (feature spreads 0.3 "
                        "to 3), 80 + 80 pairs", gamma=4.0))
    return out


register_family(pairs_family("itml", ITML_HYPERPARAMETERS, generate=bundled_instances))

"""A metric-learn script, run on cvxmetric by changing its import only.

Written as a metric-learn user writes it: a supervised learner inside a
scikit-learn pipeline, a pairs learner given indices into a preprocessor,
its threshold calibrated and used to classify pairs, the learned metric
used by k-NN.  With metric-learn, the import line reads::

    from metric_learn import MMC, MMC_Supervised

Run: ``python examples/metric_learn_migration.py`` (a few seconds).  The
figure (shown by default; ``--figures DIR`` writes DIR/mmc_pairs.png,
``--no-figures`` prints only, without matplotlib) draws the held-out pairs'
learned distances, same-class against different-class, with the
calibrated threshold.
"""

import argparse

import numpy as np
from sklearn.datasets import load_wine
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from cvxmetric import MMC, MMCSupervised as MMC_Supervised  # the one changed line
from cvxmetric.experiments._figures import add_figure_options, finish, parse_example_args, pyplot


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_figure_options(parser)
    args = parse_example_args(parser, argv, "metric_learn_migration.py")
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    cv = StratifiedKFold(5, shuffle=True, random_state=0)

    # a supervised learner as a pipeline step before k-NN
    pipe = make_pipeline(MMC_Supervised(diagonal=True, random_state=0),
                         KNeighborsClassifier(n_neighbors=5))
    knn_mmc = cross_val_score(pipe, X, y, cv=cv).mean()
    knn_euclid = cross_val_score(KNeighborsClassifier(n_neighbors=5), X, y, cv=cv).mean()
    print(f"5-NN accuracy, Euclidean: {knn_euclid:.3f}")
    print(f"5-NN accuracy, MMC_Supervised(diagonal=True): {knn_mmc:.3f}")

    # the learner on its own: fit_transform, the metric and its matrix
    mmc = MMC_Supervised(n_constraints=200, random_state=0)
    X_mmc = mmc.fit_transform(X, y)
    M = mmc.get_mahalanobis_matrix()
    metric = mmc.get_metric()
    print(f"transformed shape: {X_mmc.shape}, M symmetric: {np.allclose(M, M.T)}")
    print(f"d(x0, x1) = {metric(X[0], X[1]):.4f} = "
          f"{np.linalg.norm(X_mmc[0] - X_mmc[1]):.4f}")

    # a pairs learner: indices into the preprocessor, +1 / -1 labels
    rng = np.random.RandomState(0)
    a, b = rng.randint(len(y), size=(2, 400))
    keep = a != b
    pairs = np.stack([a[keep], b[keep]], axis=1)
    y_pairs = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1)
    train, test = slice(0, 300), slice(300, None)
    mmc = MMC(preprocessor=X)
    mmc.fit(pairs[train], y_pairs[train])
    print(f"pairs ROC-AUC on held-out pairs: {mmc.score(pairs[test], y_pairs[test]):.3f}")
    mmc.calibrate_threshold(pairs[train], y_pairs[train], strategy="max_tpr",
                            min_rate=0.9)
    pred = mmc.predict(pairs[test])
    print(f"threshold {mmc.threshold_:.4f}: accuracy on held-out pairs "
          f"{np.mean(pred == y_pairs[test]):.3f}")
    print(f"pair distances: {np.round(mmc.pair_distance(pairs[test][:3]), 4)}")
    if not args.no_figures:
        finish({"mmc_pairs": pair_figure(mmc, pairs[test], y_pairs[test])}, args)

    # model selection without a scoring argument (ROC-AUC of the pairs)
    grid = GridSearchCV(MMC(preprocessor=X), {"diagonal": [False, True]}, cv=3)
    grid.fit(pairs[train], y_pairs[train])
    print(f"best: {grid.best_params_}, ROC-AUC {grid.best_score_:.3f}")
    return {"knn_mmc": knn_mmc, "knn_euclid": knn_euclid,
            "auc": mmc.score(pairs[test], y_pairs[test]),
            "best": grid.best_params_}


def pair_figure(mmc, pairs, y_pairs):
    """Histograms of the held-out pairs' learned distances, by label, and
    the calibrated threshold (distances start at 0)."""
    plt = pyplot()
    d = mmc.pair_distance(pairs)
    fig, ax = plt.subplots(figsize=(7, 4))
    bins = np.linspace(0, d.max() * 1.02, 30)
    for label, name, color, hatch, ls in ((1, "same class (+1)", "tab:blue", "//", "-"),
                                          (-1, "different class (-1)", "tab:orange",
                                           "..", "--")):
        ax.hist(d[y_pairs == label], bins=bins, histtype="step", color=color,
                hatch=hatch, linestyle=ls, linewidth=1.5, label=name)
    ax.axvline(mmc.threshold_, color="black", linestyle=":",
               label="calibrated threshold (predict: +1 at or below)")
    ax.set_xlim(0, bins[-1])
    ax.set_xlabel("learned distance of the pair (pair_distance)")
    ax.set_ylabel("held-out pairs")
    ax.set_title("MMC on wine: held-out pair distances by label")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


if __name__ == "__main__":
    main()

"""What each learned metric does to k-NN accuracy, next to Euclidean.

On scikit-learn's bundled iris, wine, breast_cancer and digits (reduced to
30 PCA dimensions), a stratified cross-validation (3 folds by default,
5 folds repeated over 5 shuffles with ``--full``): in every fold the
features are standardised on the training part (digits: standardised,
PCA to 30 dimensions, standardised again, all fitted on the training part),
each family's supervised estimator is fitted on the training part with its
default settings, and the test part is classified by its 5 nearest
training neighbours

* under the learned squared Mahalanobis distance (Qwise, MMC, RankDML and
  its constraint-based baseline ConstraintDML), or
* by the largest learned similarity ``x^T M y`` (SLR, whose metric is
  bilinear, not a distance),

next to the same 5-NN under the Euclidean distance. Each cell is the
accuracy over all test folds; ``rank`` is the mean rank of the learned
matrix (eigenvalues above 1e-6 of the largest; SLR: singular values).

The estimators run their fast solvers (``--solver exact`` for the CVXPY
path); both answer with a certificate of the same optimum, so the
accuracies agree up to ties between neighbours.

    python examples/knn_accuracy.py              # 3 folds, 1 shuffle (< 1 min)
    python examples/knn_accuracy.py --full       # 5 folds x 5 shuffles, mean +- std
    python examples/knn_accuracy.py --datasets iris,wine --folds 5 --seeds 3
    python examples/knn_accuracy.py --quick      # iris, wine, breast_cancer, 3 folds (seconds)
    python examples/knn_accuracy.py --figures DIR  # the figure as DIR/knn_accuracy.png

The figure (shown by default; ``--no-figures``: the table only, without
matplotlib) draws the accuracies as bars, one colour and hatch per metric.
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.decomposition import PCA
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from cvxmetric import (
    SLR,
    ConstraintDMLSupervised,
    MMCSupervised,
    QwiseSupervised,
    RankDMLSupervised,
)
from cvxmetric.experiments._figures import (
    add_figure_options,
    bar_style,
    finish,
    parse_example_args,
    pyplot,
)

K = 5

DATASETS = {
    "iris": load_iris,
    "wine": load_wine,
    "breast_cancer": load_breast_cancer,
    "digits_pca30": load_digits,
}

#: The data sets of ``--quick``.
QUICK_DATA = ("iris", "wine", "breast_cancer")

METHODS = ("euclidean", "qwise", "mmc", "rankdml", "constraintdml", "slr")


def preprocessing(name):
    """The fold's preprocessing, fitted on its training part."""
    if name == "digits_pca30":
        return make_pipeline(StandardScaler(), PCA(30, random_state=0), StandardScaler())
    return StandardScaler()


def make_estimator(method, solver, seed):
    if method == "qwise":
        return QwiseSupervised(solver=solver, random_state=seed)
    if method == "mmc":
        return MMCSupervised(solver=solver, random_state=seed)
    if method == "rankdml":
        return RankDMLSupervised(solver=solver, random_state=seed)
    if method == "constraintdml":
        return ConstraintDMLSupervised(solver=solver, random_state=seed)
    if method == "slr":
        return SLR(solver="newton" if solver == "fast" else "exact")
    raise ValueError(method)


def knn_predict(scores, y_train, k=K):
    """Majority vote of the ``k`` largest ``scores`` per row (ties: nearest
    first, then the smaller label)."""
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    votes = y_train[order]
    labels = np.unique(y_train)
    counts = (votes[:, :, None] == labels[None, None, :]).sum(axis=1)
    best = counts.max(axis=1, keepdims=True)
    out = np.empty(len(scores), dtype=y_train.dtype)
    for r in range(len(scores)):
        tied = set(labels[counts[r] == best[r]])
        out[r] = next(v for v in votes[r] if v in tied)
    return out


def sqdist(A, B):
    return ((A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T)


def fit_and_score(method, Xtr, ytr, Xte, solver, seed):
    """Predicted test labels and the rank of the learned matrix."""
    if method == "euclidean":
        return knn_predict(-sqdist(Xte, Xtr), ytr), Xtr.shape[1]
    est = make_estimator(method, solver, seed).fit(Xtr, ytr)
    if method == "slr":
        M = est.get_bilinear_matrix()
        s = np.linalg.svd(M, compute_uv=False)
        return knn_predict(Xte @ M @ Xtr.T, ytr), int(np.sum(s > 1e-6 * s[0]))
    M = est.get_mahalanobis_matrix()
    w = np.linalg.eigvalsh(M)
    L = est.transform  # x -> L x with M = L^T L
    Ztr, Zte = L(Xtr), L(Xte)
    return knn_predict(-sqdist(Zte, Ztr), ytr), int(np.sum(w > 1e-6 * w[-1]))


def run(datasets, methods, seeds, solver, n_folds=3, log=print):
    """``{(dataset, method): (accuracies per seed, mean rank, seconds)}``."""
    table = {}
    for name in datasets:
        X, y = DATASETS[name](return_X_y=True)
        for method in methods:
            accs, ranks, secs = [], [], 0.0
            for seed in seeds:
                pred = np.empty_like(y)
                folds = StratifiedKFold(n_folds, shuffle=True, random_state=seed)
                for train, test in folds.split(X, y):
                    prep = preprocessing(name).fit(X[train])
                    Xtr, Xte = prep.transform(X[train]), prep.transform(X[test])
                    t0 = time.perf_counter()
                    pred[test], rank = fit_and_score(method, Xtr, y[train], Xte,
                                                     solver, seed)
                    secs += time.perf_counter() - t0
                    ranks.append(rank)
                accs.append(float(np.mean(pred == y)))
            table[name, method] = (accs, float(np.mean(ranks)), secs)
        if log:
            log(f"  {name}: done")
    return table


def format_table(table, datasets, methods, with_std=False):
    width = 20 if with_std else 15
    lines = [f"{'5-NN accuracy':<16s}" + "".join(f"{m:>{width}s}" for m in methods)]
    for name in datasets:
        cells = []
        for method in methods:
            accs, rank, _ = table[name, method]
            cell = f"{np.mean(accs):.3f}"
            if with_std:
                cell += f" +-{np.std(accs):.3f}"
            cells.append(f"{cell} (r{rank:.0f})" if method != "euclidean" else cell)
        lines.append(f"{name:<16s}" + "".join(f"{c:>{width}s}" for c in cells))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true",
                        help="5 folds and 5 shuffles of them (seeds 0-4) instead "
                             "of 3 folds and 1 shuffle (about 10 minutes)")
    parser.add_argument("--quick", action="store_true",
                        help="iris, wine and breast_cancer (the gallery; seconds)")
    parser.add_argument("--folds", type=int, default=None)
    parser.add_argument("--seeds", type=int, default=None,
                        help="number of shuffles of the folds (seeds 0..n-1)")
    parser.add_argument("--datasets", default=None,
                        help="comma-separated (default: all; --quick: "
                             + ",".join(QUICK_DATA) + ")")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--solver", choices=("fast", "exact"), default="fast")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads (0: the library default)")
    add_figure_options(parser)
    args = parse_example_args(parser, argv, "knn_accuracy.py")
    if args.datasets is None:
        args.datasets = ",".join(QUICK_DATA if args.quick else DATASETS)
    n_seeds = args.seeds or (5 if args.full else 1)
    n_folds = args.folds or (5 if args.full else 3)
    datasets = [d.strip() for d in args.datasets.split(",")]
    methods = [m.strip() for m in args.methods.split(",")]
    for d in datasets:
        if d not in DATASETS:
            raise SystemExit(f"--datasets: unknown {d!r}; known: {list(DATASETS)}")
    for m in methods:
        if m not in METHODS:
            raise SystemExit(f"--methods: unknown {m!r}; known: {list(METHODS)}")
    t0 = time.perf_counter()
    print(f"5-NN, stratified {n_folds}-fold CV, {n_seeds} shuffle(s), "
          f"solver={args.solver}; (rN): mean rank of the learned matrix")
    with threadpool_limits(limits=args.threads or None, user_api="blas"), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sampled-pair notices of the estimators
        table = run(datasets, methods, range(n_seeds), args.solver,
                    n_folds=n_folds, log=None)
    print(format_table(table, datasets, methods, with_std=n_seeds > 1))
    print("fit seconds (all folds and shuffles): " + ", ".join(
        f"{m} {sum(table[d, m][2] for d in datasets):.1f}" for m in methods
        if m != "euclidean"))
    print(f"total {time.perf_counter() - t0:.1f} s")
    if not args.no_figures:
        finish({"knn_accuracy": figure(table, datasets, methods, n_folds, n_seeds)},
               args)
    return table


def figure(table, datasets, methods, n_folds, n_seeds):
    """5-NN accuracy per data set and metric, bars from 0 (error bars: the
    spread over the shuffles)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(6.0, 1.8 * len(datasets) + 3), 4.4))
    x = np.arange(len(datasets))
    width = 0.8 / len(methods)
    for i, m in enumerate(methods):
        accs = [table[d, m][0] for d in datasets]
        ax.bar(x + (i - (len(methods) - 1) / 2) * width,
               [100 * np.mean(a) for a in accs], width,
               yerr=[100 * np.std(a) for a in accs] if n_seeds > 1 else None,
               capsize=2, label=m, **bar_style(i))
    ax.set_xticks(x)
    ax.set_xticklabels(datasets)
    ax.set_ylim(0, 100)
    ax.set_ylabel("5-NN accuracy over the test folds (%)")
    ax.set_title(f"5-NN under each learned metric, {n_folds}-fold CV, "
                 f"{n_seeds} shuffle(s)")
    ax.legend(fontsize=8, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.1))
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


if __name__ == "__main__":
    main()

"""Hierarchical metric learning on digits: the paper's Sec. 6.3, Tables 5 and 6.

Law, Thome, Cord, "Learning a distance metric from relative comparisons
between quadruplets of images" (IJCV 2016), Sec. 6, on scikit-learn's
bundled digits instead of the ImageNet subtrees.  A two-level taxonomy
groups the ten digits into three super-classes:

* ``--tree shape`` (default), by the shape of the glyph, fixed before any
  experiment: closed loops {0, 6, 8, 9}, straight strokes {1, 4, 7}, open
  curves {2, 3, 5};
* ``--tree means``, by the data: the balanced 4-3-3 partition of the digits
  with the smallest mean within-group Euclidean distance between class
  means (64 pixels, all 1 797 digits), found once by enumerating every such
  partition: {1, 2, 7, 8}, {0, 4, 6}, {3, 5, 9}.

Protocol (per seed): a stratified half/half train/test split; Gaussian
pixel noise of standard deviation ``--noise`` (pixels range over 0-16; the
default 8 leaves 10-NN at about 65 % so that there are errors for Eq. 24
to grade -- on the clean digits 10-NN errs on 2-3 % of the test set,
``--noise 0``); PCA to ``--dims`` dimensions fit on the training half,
then one scale so that the training points have unit mean squared norm (a
unit margin means the same on every split).  Metrics, all from the
training half:

* Euclidean (``M = I``);
* LMNN, full matrix: :class:`cvxmetric.LMNN` (Weinberger and Saul's
  Eq. 13-14, ``k = 3`` target neighbours, ``mu = 0.5``, certified over
  every impostor triplet), the baseline of Tables 5 and 6.  No diagonal
  LMNN: with ``M = Diag(w)`` LMNN is a linear program in ``w >= 0`` with
  a linear pull term, which no certified solver of the package takes at
  this size (the vector model's regulariser is quadratic; LMNN's CVXPY
  declaration, to which ``M`` diagonal can be added, stops at 100 000
  impostor triplets, and these data have about 2.2 million);
* triplets (labels): ``(i, j, k)`` from
  :func:`cvxmetric.constraints.triplets_from_labels` (``y_i = y_j != y_k``),
  as quadruplets ``(i, j, i, k)`` -- class membership only, random triplets;
* triplets (neighbours): ``j`` among the 5 nearest neighbours of ``i`` in
  its class, ``k`` in any other class
  (:func:`~cvxmetric.experiments.qwise.taxonomy.taxonomy_quadruplets` on a flat tree
  with ``same_anchor=True``): the same sampling as Qwise without the
  taxonomy, ``n-quads`` of LMNN's triplets learned with Qwise's objective;
* Qwise: the Sec. 6.1 quadruplets, half type (1) and half type (2), ``k = 5``
  (:func:`~cvxmetric.experiments.qwise.taxonomy.taxonomy_quadruplets`).

Each constraint set is learned with a full matrix (:class:`cvxmetric.Qwise`,
Eq. 8, the certified fast solver) and a diagonal one
(:class:`cvxmetric.QwiseVector` with ``psi="squared"``, Eq. 12-14, exact),
with ``--n-quads`` constraints, margin 1 and the same ``C_q`` and
regulariser for all (``--C``, ``--regularizer``; the defaults, Frobenius
and ``C_q = 0.01``, were chosen once on seeds 0-2, for every method
alike).  The test half is classified by ``k``-NN on the training half
(``k = 10`` as the paper, and ``k = 1``) under each metric, scored by the
standard accuracy (Table 5) and the hierarchy accuracy of Eq. 24 (Table 6:
a sibling error costs half an error), mean +- std over ``--seeds`` seeds.
The paper learns its full-matrix Qwise with LMNN's regulariser (a pull
term) "for a fair comparison"; here every Qwise fit keeps the one setting
chosen for all methods (``Qwise(regularizer="similar")`` is that reading,
untuned here).

    python examples/qwise_taxonomy.py            # 3 seeds, 6 000 constraints
    python examples/qwise_taxonomy.py --full     # 20 seeds, 20 000 constraints
    python examples/qwise_taxonomy.py --quick    # 600 images, 1 seed, 1 500 constraints (seconds)
    python examples/qwise_taxonomy.py --noise 0  # the clean digits
    python examples/qwise_taxonomy.py --json out.json

The figure (bars of both accuracies at 10-NN) is shown by default
(``--no-figures``: the tables only, without matplotlib); ``--figures DIR``
writes it to DIR/qwise_taxonomy.png (the documentation's copy:
``--full --figures docs/img``).  BLAS runs single-threaded
(``--threads``).  Durations measured on the 2-core development machine next
to other jobs: the default run 42 s of CPU (256 s of wall time under a load
of 12-15), ``--full`` 2 612 s under a load of 10-19, LMNN's 20 fits 95 s
each of it (one takes 15-19 s at a load of 2; the other rows together took
118 s before LMNN was added).
"""

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import pairwise_distances
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

from cvxmetric import LMNN, Qwise, QwiseVector
from cvxmetric.constraints import triplets_from_labels
from cvxmetric.experiments._figures import (
    add_figure_options,
    bar_style,
    finish,
    parse_example_args,
    pyplot,
)
from cvxmetric.experiments.qwise.taxonomy import taxonomy_quadruplets
from cvxmetric.metrics import hierarchy_accuracy, knn_predict

TREES = {
    "shape": {0: "loop", 6: "loop", 8: "loop", 9: "loop",
              1: "stroke", 4: "stroke", 7: "stroke",
              2: "curve", 3: "curve", 5: "curve"},
    "means": {1: "g1", 2: "g1", 7: "g1", 8: "g1",
              0: "g2", 4: "g2", 6: "g2",
              3: "g3", 5: "g3", 9: "g3"},
}
CONSTRAINTS = ("triplets (labels)", "triplets (neighbours)", "qwise")
METHODS = ("euclidean", "lmnn full") + tuple(f"{c} {m}" for c in CONSTRAINTS
                                              for m in ("diag", "full"))
K_VALUES = (10, 1)
N_NEIGHBOURS = 5  # the k of Sec. 6.1's neighbour sampling
LMNN_K = 3  # LMNN's target neighbours: its default, and the package's
#: ``--quick``: images kept (stratified), seeds, constraints per method.
QUICK = {"images": 600, "seeds": 1, "n_quads": 1500}


def _features(X, y, seed, args):
    """Noisy pixels, split, PCA fit on the training half, unit scale."""
    rng = np.random.RandomState(seed)
    Xn = X + args.noise * rng.randn(*X.shape)
    Xtr, Xte, ytr, yte = train_test_split(Xn, y, test_size=0.5, stratify=y,
                                          random_state=seed)
    pca = PCA(args.dims, random_state=seed).fit(Xtr)
    Ztr, Zte = pca.transform(Xtr), pca.transform(Xte)
    scale = np.sqrt(np.mean(np.sum(Ztr ** 2, axis=1)))
    return Ztr / scale, Zte / scale, ytr, yte


def _constraints(Z, y, tree, n, seed):
    """The three constraint sets, as index quadruplets into Z."""
    t = triplets_from_labels(y, n, random_state=seed)
    flat = {c: 0 for c in np.unique(y).tolist()}
    return {
        "triplets (labels)": t[:, [0, 1, 0, 2]],
        "triplets (neighbours)": taxonomy_quadruplets(
            Z, y, flat, n_type1=n, n_type2=0, k=N_NEIGHBOURS, same_anchor=True,
            random_state=seed).quadruplets,
        "qwise": taxonomy_quadruplets(
            Z, y, tree, n_type1=n // 2, n_type2=n - n // 2, k=N_NEIGHBOURS,
            random_state=seed).quadruplets,
    }


def run_seed(X, y, seed, args):
    """Accuracies of every method at every k, and the fit times."""
    tree = TREES[args.tree]
    Ztr, Zte, ytr, yte = _features(X, y, seed, args)
    maps = {"euclidean": (Ztr, Zte)}
    fit_time = {}
    t0 = time.perf_counter()
    lmnn = LMNN(k=LMNN_K, mu=0.5).fit(Ztr, ytr)  # certified over every triplet
    fit_time["lmnn full"] = time.perf_counter() - t0
    maps["lmnn full"] = (lmnn.transform(Ztr), lmnn.transform(Zte))
    for name, quads in _constraints(Ztr, ytr, tree, args.n_quads, seed).items():
        for model in ("diag", "full"):
            if model == "full":
                est = Qwise(regularizer=args.regularizer, C_q=args.C,
                            solver="fast", preprocessor=Ztr)
            else:
                est = QwiseVector(psi="squared", C_q=args.C, preprocessor=Ztr)
            t0 = time.perf_counter()
            est.fit(quads)  # margin 1 (Eq. 8's default) for every constraint
            fit_time[f"{name} {model}"] = time.perf_counter() - t0
            maps[f"{name} {model}"] = (est.transform(Ztr), est.transform(Zte))
    out = {}
    for method, (Ltr, Lte) in maps.items():
        D = pairwise_distances(Lte, Ltr)  # (n_test, n_train)
        for k in K_VALUES:
            pred = knn_predict(D, ytr, k)
            out[(method, k)] = (float(np.mean(pred == yte)),
                                hierarchy_accuracy(yte, pred, tree))
    return out, fit_time


def _table(results, k, which, title):
    lines = [f"{title}, {k}-NN (%, mean +- std over {len(results)} seeds)"]
    for method in METHODS:
        v = 100 * np.array([r[(method, k)][which] for r in results])
        lines.append(f"  {method:28s} {v.mean():6.2f} +- {v.std():4.2f}")
    return "\n".join(lines)


#: (title, [(label, method, minus this method)]) of the paired differences
PAIRS = (
    ("qwise minus triplets (neighbours)",
     [(m, f"qwise {m}", f"triplets (neighbours) {m}") for m in ("diag", "full")]),
    ("qwise minus LMNN (full)",
     [(m, f"qwise {m}", "lmnn full") for m in ("diag", "full")]),
)


def _paired(results):
    """Qwise minus its taxonomy-free twin (same sampling, same model) and
    minus LMNN, per seed: the splits move every method together, the
    difference less."""
    lines = []
    for title, rows in PAIRS:
        lines.append(f"paired: {title}, 10-NN (points, mean +- std over "
                     f"{len(results)} seeds, seeds won)")
        for label, method, other in rows:
            for which, score in ((0, "standard"), (1, "Eq. 24")):
                d = 100 * np.array([r[(method, 10)][which] - r[(other, 10)][which]
                                    for r in results])
                lines.append(f"  {label} {score:9s} {d.mean():+6.2f} +- {d.std():4.2f}"
                             f"  ({int(np.sum(d > 0))}/{len(d)})")
    return "\n".join(lines)


def _figure(summary, tree, n_seeds):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(10, 4))
    x = np.arange(len(METHODS))
    for i, (off, (which, label)) in enumerate(zip(
            (-0.2, 0.2), ((0, "standard accuracy (Table 5)"),
                          (1, "Eq. 24 hierarchy accuracy (Table 6)")))):
        mean = [summary[m]["10"][which][0] for m in METHODS]
        std = [summary[m]["10"][which][1] for m in METHODS]
        ax.bar(x + off, mean, 0.4, yerr=std if n_seeds > 1 else None, capsize=3,
               label=label, **bar_style(i))
    ax.set_ylim(0, 100)  # accuracies: bars start at 0 so heights compare
    ax.set_xticks(x)
    ax.set_xticklabels([m.replace(" ", "\n", 1) if m != "euclidean" else m
                        for m in METHODS], fontsize=8)
    ax.set_ylabel("10-NN accuracy on the test half (%)")
    ax.set_title(f"Digits, {tree} taxonomy: metrics from class labels vs "
                 f"taxonomy quadruplets ({n_seeds} seed(s))")
    ax.legend(fontsize=8, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.22))
    fig.tight_layout()
    return fig


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--full", action="store_true", help="20 seeds and 20 000 constraints")
    p.add_argument("--quick", action="store_true",
                   help="600 images, 1 seed, 1 500 constraints (the gallery)")
    p.add_argument("--seeds", type=int, default=None)
    p.add_argument("--n-quads", type=int, default=None,
                   help="constraints per method (Qwise: half of each type)")
    p.add_argument("--tree", choices=sorted(TREES), default="shape")
    p.add_argument("--noise", type=float, default=8.0,
                   help="std of the Gaussian pixel noise (pixels are 0-16)")
    p.add_argument("--dims", type=int, default=20, help="PCA dimensions")
    p.add_argument("--C", type=float, default=0.01, help="C_q of every fit")
    p.add_argument("--regularizer", default="frobenius",
                   choices=("trace", "frobenius"),
                   help="Omega(M) of the full-matrix fits")
    add_figure_options(p)
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--threads", type=int, default=1)
    args = parse_example_args(p, argv, "qwise_taxonomy.py")
    if args.seeds is None:
        args.seeds = 20 if args.full else QUICK["seeds"] if args.quick else 3
    if args.n_quads is None:
        args.n_quads = 20000 if args.full else QUICK["n_quads"] if args.quick else 6000

    X, y = load_digits(return_X_y=True)
    if args.quick:
        X, _, y, _ = train_test_split(X, y, train_size=QUICK["images"], stratify=y,
                                      random_state=0)
    t0 = time.perf_counter()
    results, times = [], []
    with threadpool_limits(args.threads), warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # never report a stalled fit
        for seed in range(args.seeds):
            r, ft = run_seed(X, y, seed, args)
            results.append(r)
            times.append(ft)
    wall = time.perf_counter() - t0

    print(f"digits ({len(y)} images), tree {args.tree} {TREES[args.tree]}, noise {args.noise}, "
          f"PCA {args.dims}, {args.n_quads} constraints, C_q {args.C}, "
          f"{args.regularizer}")
    for k in K_VALUES:
        print(_table(results, k, 0, "Table 5-like: standard k-NN accuracy"))
        print(_table(results, k, 1, "Table 6-like: Eq. 24 hierarchy accuracy"))
    print(_paired(results))
    mean_fit = {m: float(np.mean([t[m] for t in times])) for m in times[0]}
    print("mean fit time (s): " + ", ".join(f"{m} {v:.2f}" for m, v in mean_fit.items()))
    print(f"total {wall:.1f} s")

    summary = {m: {str(k): [[100 * float(np.mean([r[(m, k)][w] for r in results])),
                             100 * float(np.std([r[(m, k)][w] for r in results]))]
                            for w in (0, 1)] for k in K_VALUES} for m in METHODS}
    if args.json is not None:
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()},
                                         "summary": summary, "fit_time": mean_fit,
                                         "wall": wall}, indent=1))
    if not args.no_figures:
        finish({"qwise_taxonomy": _figure(summary, args.tree, args.seeds)}, args)


if __name__ == "__main__":
    main()

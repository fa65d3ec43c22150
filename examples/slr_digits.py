"""SLR on scikit-learn's digits: the paper's Table 1, Fig. 2 and Fig. 3 as text.

Qian, Baytas, Jin, Jain, Zhu (2015).  Each test image queries the training
images; the images of its class are relevant; the score is the mean average
precision (mAP, %) over the queries, mean +- std over random 70 / 30 splits
(the paper's protocol).  Rows are scaled to unit norm, so that the
thresholds delta1 = 1, delta2 = 0 are on the scale of x_i^T x_j at
Algorithm 1's start M_0 = I.

    python examples/slr_digits.py            # 5 splits, every table (1 min; 45 s of it the five certified LMNN fits)
    python examples/slr_digits.py --quick    # 900 images, 1 split, short sweeps, LMNN 5 s
    python examples/slr_digits.py --figures DIR   # the figure as DIR/slr_digits.png

The figure (shown by default; ``--no-figures``: the tables only, without
matplotlib) draws Table 1 as bars and the Fig. 2 and Fig. 3 sweeps.

BLAS runs single-threaded (``--threads``): every product here is small
(d = 64) and threading only adds overhead (measured 5-40x on 2 busy cores).

Methods: Euclid (distance ranking), LMNN (cvxmetric's certified LMNN,
k = 3, regularization 0.5, the full metric: d = 64 is below the paper's
rank 100; ranking by the learned distance; each fit stops after
``--lmnn-time`` seconds, 60 by default, and the line under Table 1 says
how many fits were certified and the largest certified gap), OASIS (N
triplets), SLR-Whole (Eq. 3),
SLR-Fixed (Algorithm 3, fixed Eq. 2 target), SLR (Algorithm 3, adaptive
targets, rank r), Algorithm 1 (full rank, = Algorithm 2 with a permutation
sketch), Algorithm 2 with column sampling / Gaussian projections (m).
"""

import argparse
import time

import numpy as np
from sklearn.datasets import load_digits
from threadpoolctl import threadpool_limits

from cvxmetric.bench.slr import retrieval_map, text_table, train_test_split_indices
from cvxmetric.experiments._figures import (
    add_figure_options,
    bar_style,
    finish,
    parse_example_args,
    pyplot,
    style,
)
from cvxmetric.experiments._lmnn import summary as lmnn_summary
from cvxmetric.experiments.slr.baselines import lmnn_baseline, slr_fixed, slr_whole
from cvxmetric.slr.lowrank import lowrank_slr
from cvxmetric.slr.oasis import oasis
from cvxmetric.slr.randomized import randomized_slr


def _methods(rank, m, oasis_steps, lmnn_fits, lmnn_time=None):
    """name -> fit(X, y, seed) returning (M or None, factors or None); the
    LMNN fits are appended to ``lmnn_fits``, its factors are ``(L, L)``
    marking a distance ranking (:func:`_score`)."""
    def lr(res):
        return None, (res.info["L"], res.info["R"])

    def lmnn(X, y):
        fit = lmnn_baseline(X, y, max_time=lmnn_time)
        lmnn_fits.append(fit)
        return None, (fit.L, fit.L)

    return {
        "Euclid": lambda X, y, s: (None, None),
        "LMNN (k=3)": lambda X, y, s: lmnn(X, y),
        f"OASIS (N={oasis_steps})": lambda X, y, s: (
            oasis(X, y, oasis_steps, random_state=s), None),
        "SLR-Whole": lambda X, y, s: (slr_whole(X, y, evaluate=False).M, None),
        f"SLR-Fixed (r={rank})": lambda X, y, s: lr(
            slr_fixed(X, y, rank, random_state=s, evaluate=False)),
        f"SLR (Alg. 3, r={rank})": lambda X, y, s: lr(
            lowrank_slr(X, y, rank, random_state=s, evaluate=False)),
        "Alg. 1 (full rank)": lambda X, y, s: lr(randomized_slr(
            X, y, len(y), "columns", replace=False, random_state=s,
            evaluate=False)),
        f"Alg. 2 columns (m={m})": lambda X, y, s: lr(randomized_slr(
            X, y, m, "columns", random_state=s, evaluate=False)),
        f"Alg. 2 Gaussian (m={m})": lambda X, y, s: lr(randomized_slr(
            X, y, m, "gaussian", random_state=s, evaluate=False)),
    }


def _score(split, M, factors, name):
    Xtr, ytr, Xte, yte = split
    if name == "Euclid":
        return retrieval_map(Xtr, ytr, Xte, yte, kind="euclidean")
    if name.startswith("LMNN"):
        # the learned squared distance |L q - L x|^2, smaller first
        L = factors[0]
        return retrieval_map(Xtr @ L.T, ytr, Xte @ L.T, yte, kind="euclidean")
    return retrieval_map(Xtr, ytr, Xte, yte, M, factors=factors)


#: Seconds each LMNN fit may take (its certified solver stops there, with
#: the status and certified gap it reached, printed under Table 1).
LMNN_TIME = 60.0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="900 images, one split, short sweeps, LMNN fits of "
                             "5 s at most (the gallery)")
    parser.add_argument("--splits", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lmnn-time", type=float, default=None,
                        help="wall-clock budget of each LMNN fit, seconds (0: none; "
                             f"default {LMNN_TIME:g}, --quick 5)")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads (0: the library default)")
    add_figure_options(parser)
    args = parse_example_args(parser, argv, "slr_digits.py")
    if args.lmnn_time is None:
        args.lmnn_time = 5.0 if args.quick else LMNN_TIME
    with threadpool_limits(limits=args.threads or None, user_api="blas"):
        return _run(args)


def _run(args):
    n_splits = args.splits or (1 if args.quick else 5)
    X, y = load_digits(return_X_y=True)
    if args.quick:
        X, y = X[:900], y[:900]
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    n, d = X.shape
    splits = []
    for k in range(n_splits):
        tr, te = train_test_split_indices(n, 0.3, random_state=args.seed + k)
        splits.append((X[tr], y[tr], X[te], y[te]))
    n_train = len(splits[0][1])
    print(f"digits: n = {n} ({n_train} train / {n - n_train} test), d = {d}, "
          f"10 classes, {n_splits} split(s)"
          + (f", LMNN fits stopped after {args.lmnn_time:g} s" if args.lmnn_time else "")
          + "\n")
    rank, m = 16, 300
    table1 = _table1(args, splits, rank, m)
    fig2 = _fig2(args, splits[0], rank)
    fig3 = _fig3(args, splits[0], rank, n_train)
    _ranks(args, splits[0])
    if not args.no_figures:
        finish({"slr_digits": _figure(table1, fig2, fig3, n_splits, rank)}, args)
    return 0


def _table1(args, splits, rank, m):
    """Table 1: mAP per method; name -> the mAP (%) of each split."""
    lmnn_fits = []
    methods = _methods(rank, m, 2000 if args.quick else 20000, lmnn_fits,
                       args.lmnn_time or None)
    rows, out = [], {}
    for name, fit in methods.items():
        maps, secs = [], []
        for k, split in enumerate(splits):
            t0 = time.perf_counter()
            M, factors = fit(split[0], split[1], args.seed + k)
            secs.append(time.perf_counter() - t0)
            maps.append(100 * _score(split, M, factors, name))
        out[name] = np.array(maps)
        rows.append([name, f"{np.mean(maps):.1f} +- {np.std(maps):.1f}",
                     f"{np.mean(secs):.2f}"])
    print("Table 1 (digits): mAP (%) of ranking the training set")
    print(text_table(["method", "mAP (%)", "seconds"], rows))
    print(lmnn_summary(lmnn_fits))
    return out


def _lr_map(split, res):
    return 100 * _score(split, None, (res.info["L"], res.info["R"]), "")


def _fig2(args, split, rank):
    """Fig. 2: mAP versus iterations T, adaptive vs fixed target."""
    Ts = (1, 2, 3, 5) if args.quick else (1, 2, 3, 5, 10)
    rows, out = [], {"T": Ts, "SLR": [], "SLR-Fixed": []}
    for T in Ts:
        a = lowrank_slr(split[0], split[1], rank, n_iter=T, random_state=args.seed)
        f = slr_fixed(split[0], split[1], rank, n_iter=T, random_state=args.seed,
                      evaluate=False)
        out["SLR"].append(_lr_map(split, a))
        out["SLR-Fixed"].append(_lr_map(split, f))
        rows.append([str(T), f"{out['SLR'][-1]:.1f}", f"{a.objective:.4g}",
                     f"{out['SLR-Fixed'][-1]:.1f}"])
    out["whole"] = 100 * _score(split, slr_whole(split[0], split[1], evaluate=False).M,
                                None, "")
    print(f"\nFig. 2 (digits, split 0, r = {rank}): mAP (%) versus iterations T "
          f"(SLR-Whole: {out['whole']:.1f})")
    print(text_table(["T", "SLR mAP", "SLR Eq. 4", "SLR-Fixed mAP"], rows))
    return out


def _fig3(args, split, rank, n_train):
    """Fig. 3: mAP and seconds versus the compressed size m."""
    ms = (50, 100, 200, 300, 600) if args.quick else (100, 200, 300, 600, n_train)
    rows, out = [], {"m": ms, "Alg. 2 columns": [], "Alg. 2 Gaussian": [],
                     f"SLR-C (r={rank})": []}
    for mm in ms:
        row = [str(mm)]
        fits = [(kind, lambda k=kind, m=mm: randomized_slr(
            split[0], split[1], m, k, random_state=args.seed, evaluate=False))
            for kind in ("columns", "gaussian")]
        fits.append(("slr", lambda m=mm: lowrank_slr(
            split[0], split[1], rank, n_sketch=m, random_state=args.seed,
            evaluate=False)))
        for key, (_, fit) in zip(list(out)[1:], fits):
            t0 = time.perf_counter()
            res = fit()
            dt = time.perf_counter() - t0
            out[key].append(_lr_map(split, res))
            row += [f"{out[key][-1]:.1f}", f"{dt:.2f}"]
        rows.append(row)
    print("\nFig. 3 (digits, split 0): mAP (%) and seconds versus the compressed "
          f"size m (Alg. 2: T = 10, full rank; SLR-C: Alg. 3, r = {rank})")
    print(text_table(["m", "Alg.2-C mAP", "s", "Alg.2-G mAP", "s", "SLR-C mAP", "s"],
                     rows))
    return out


def _ranks(args, split):
    ranks = (4, 16) if args.quick else (2, 4, 8, 16, 32, 64)
    rows = []
    for r in ranks:
        t0 = time.perf_counter()
        res = lowrank_slr(split[0], split[1], r, random_state=args.seed)
        dt = time.perf_counter() - t0
        rows.append([str(r), f"{_lr_map(split, res):.1f}", f"{res.objective:.4g}",
                     f"{dt:.2f}"])
    print("\nAlgorithm 3 (digits, split 0, T = 10): mAP (%), Eq. 4 and seconds "
          "versus the rank r")
    print(text_table(["rank", "mAP", "Eq. 4", "seconds"], rows))


def _figure(table1, fig2, fig3, n_splits, rank):
    """Table 1 as bars, Fig. 2 and Fig. 3 as curves (mAP from 0: the
    methods' differences are read against the whole scale)."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.4),
                             gridspec_kw={"width_ratios": [1.6, 1, 1]})
    ax = axes[0]
    names = list(table1)
    for i, name in enumerate(names):
        v = table1[name]
        ax.barh(i, v.mean(), xerr=v.std() if n_splits > 1 else None, capsize=3,
                **bar_style(i))
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("mAP (%)")
    ax.set_title(f"Table 1: mAP, {n_splits} split(s)")
    ax = axes[1]
    for i, key in enumerate(("SLR", "SLR-Fixed")):
        ax.plot(fig2["T"], fig2[key], label=f"{key} (r={rank})", **style(i))
    ax.axhline(fig2["whole"], color="0.3", linestyle=":", label="SLR-Whole")
    ax.set_ylim(0, 100)
    ax.set_xlabel("iterations T")
    ax.set_ylabel("mAP (%)")
    ax.set_title("Fig. 2: adaptive vs fixed target")
    ax.legend(fontsize=8, loc="lower right")
    ax = axes[2]
    for i, key in enumerate(list(fig3)[1:]):
        ax.plot(fig3["m"], fig3[key], label=key, **style(i + 2))
    ax.set_ylim(0, 100)
    ax.set_xlim(0, None)
    ax.set_xlabel("compressed size m")
    ax.set_ylabel("mAP (%)")
    ax.set_title("Fig. 3: compression")
    ax.legend(fontsize=8, loc="lower right")
    for a in axes:
        a.grid(alpha=0.3)
    fig.suptitle("SLR on the digits (split 0 for the curves)")
    fig.tight_layout()
    return fig


if __name__ == "__main__":
    raise SystemExit(main())

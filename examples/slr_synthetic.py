"""SLR on Caltech-like synthetic data: Table 1, Fig. 2, Fig. 3 as text tables.

Qian, Baytas, Jin, Jain, Zhu (2015).  The data come from
:func:`cvxmetric.bench.slr.make_synthetic_classes`: ``n = 8677`` samples in
``d = 1000`` dimensions and 100 classes (Caltech101's sizes after the
paper's PCA), class information in 30 latent directions, 60 larger
class-independent "nuisance" directions, isotropic noise, unit-norm rows.
70 % of the samples are the training set, each test sample queries it;
the score is the mean average precision (mAP, %).

    python examples/slr_synthetic.py             # n = 1500, d = 200, 20 classes (65 s, 60 of them LMNN's budget)
    python examples/slr_synthetic.py --full      # full size, 1 split (about 7 minutes)
    python examples/slr_synthetic.py --quick     # n = 600, d = 100, 10 classes, LMNN 5 s
    python examples/slr_synthetic.py --figures DIR  # the figure as DIR/slr_synthetic.png

The figure (shown by default; ``--no-figures``: the tables only, without
matplotlib) draws Table 1 as bars and the sweeps over T, m and the rank.

The paper's rank 100 and T = 10 are used at full size (rank 20 and T = 5
by default).  LMNN (cvxmetric's certified LMNN, k = 3, regularization
0.5) keeps the paper's rank 100 of its metric (the top eigen-directions of
the certified metric, d > 100) and ranks by the learned distance; each fit
stops after ``--lmnn-time`` seconds (60 by default) with the status and
certified gap it reached, printed under Table 1.
Times are wall-clock seconds of the fit only.
"""

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from cvxmetric.bench.slr import (
    make_synthetic_classes,
    retrieval_map,
    text_table,
    train_test_split_indices,
)
from cvxmetric.experiments._figures import (
    add_figure_options,
    bar_style,
    finish,
    parse_example_args,
    pyplot,
    style,
)
from cvxmetric.experiments._lmnn import LMNNFit
from cvxmetric.experiments._lmnn import summary as lmnn_summary
from cvxmetric.experiments.slr.baselines import lmnn_baseline, slr_fixed, slr_whole
from cvxmetric.slr.lowrank import lowrank_slr
from cvxmetric.slr.oasis import oasis
from cvxmetric.slr.randomized import randomized_slr


def _map(split, fitted):
    Xtr, ytr, Xte, yte = split
    if fitted is None:
        return 100 * retrieval_map(Xtr, ytr, Xte, yte, kind="euclidean")
    if isinstance(fitted, LMNNFit):
        # the learned squared distance |L q - L x|^2, smaller first
        L = fitted.L
        return 100 * retrieval_map(Xtr @ L.T, ytr, Xte @ L.T, yte, kind="euclidean")
    if isinstance(fitted, np.ndarray):
        return 100 * retrieval_map(Xtr, ytr, Xte, yte, fitted)
    return 100 * retrieval_map(Xtr, ytr, Xte, yte,
                               factors=(fitted.info["L"], fitted.info["R"]))


def _timed(fit):
    t0 = time.perf_counter()
    out = fit()
    return out, time.perf_counter() - t0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true",
                        help="Caltech101's sizes and the paper's sweeps (minutes)")
    parser.add_argument("--quick", action="store_true",
                        help="n = 600, d = 100, 10 classes, LMNN fits of 5 s at most "
                             "(the gallery)")
    parser.add_argument("--splits", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lmnn-time", type=float, default=None,
                        help="wall-clock budget of each LMNN fit, seconds (0: none; "
                             "default 60, --quick 5)")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads (0: the library default; 1 was "
                             "faster on the 2 shared cores this was measured on)")
    add_figure_options(parser)
    args = parse_example_args(parser, argv, "slr_synthetic.py")
    if args.lmnn_time is None:
        args.lmnn_time = 5.0 if args.quick else 60.0
    with threadpool_limits(limits=args.threads or None, user_api="blas"):
        return _run(args)


#: n, d, classes, rank, T, OASIS steps; the sweeps over m, rank and T.
SIZES = {
    "quick": ((600, 100, 10, 10, 5, 2000), ((100, 200, 300), (2, 5, 10, 20), (1, 2, 3))),
    "default": ((1500, 200, 20, 20, 5, 3000), ((200, 500), (5, 20), (1, 2))),
    "full": ((8677, 1000, 100, 100, 10, 20000),
             ((1000, 2000, 4000, 6074), (10, 25, 50, 100, 200), (1, 2, 3, 5, 10))),
}


def _run(args):
    size = "full" if args.full else "quick" if args.quick else "default"
    (n, d, c, rank, T, steps), (ms, ranks, Ts) = SIZES[size]
    X, y = make_synthetic_classes(n, d, c, random_state=args.seed)
    splits = []
    for k in range(args.splits):
        tr, te = train_test_split_indices(n, 0.3, random_state=args.seed + k)
        splits.append((X[tr], y[tr], X[te], y[te]))
    n_train = len(splits[0][1])
    print(f"synthetic (Caltech-like): n = {n} ({n_train} train), d = {d}, "
          f"{c} classes, {args.splits} split(s), rank {rank}, T = {T}"
          + (f"; LMNN fits stopped after {args.lmnn_time:g} s" if args.lmnn_time
             else "") + "\n")
    table1 = _table1(args, splits, d, rank, T, steps, ms[-2])
    split = splits[0]
    fig2 = _fig2(args, split, rank, Ts)
    fig3 = _fig3(args, split, rank, T, ms)
    by_rank = _ranks(args, split, T, ranks)
    if not args.no_figures:
        finish({"slr_synthetic": _figure(table1, fig2, fig3, by_rank, rank, d)}, args)
    return 0


def _table1(args, splits, d, rank, T, steps, m_tab):
    """Table 1; name -> the mAP (%) of each split."""
    rank_lmnn = 100  # the paper's rank of LMNN's metric
    methods = {
        "Euclid": lambda Xt, yt, s: None,
        f"LMNN (k=3, rank {min(rank_lmnn, d)})": lambda Xt, yt, s: lmnn_baseline(
            Xt, yt, rank_lmnn, max_time=args.lmnn_time or None),
        f"OASIS (N={steps})": lambda Xt, yt, s: oasis(Xt, yt, steps, random_state=s,
                                                       dtype=np.float32),
        "SLR-Whole": lambda Xt, yt, s: slr_whole(Xt, yt, evaluate=False).M,
        f"SLR-Fixed (r={rank})": lambda Xt, yt, s: slr_fixed(
            Xt, yt, rank, n_iter=T, random_state=s, evaluate=False),
        f"SLR (Alg. 3, r={rank})": lambda Xt, yt, s: lowrank_slr(
            Xt, yt, rank, n_iter=T, random_state=s, evaluate=False,
            dtype=np.float32),
        f"SLR-C-{m_tab} (Alg. 3)": lambda Xt, yt, s: lowrank_slr(
            Xt, yt, rank, n_iter=T, n_sketch=m_tab, random_state=s,
            evaluate=False, dtype=np.float32),
        f"Alg. 2 columns (m={m_tab})": lambda Xt, yt, s: randomized_slr(
            Xt, yt, m_tab, "columns", n_iter=T, random_state=s, evaluate=False,
            dtype=np.float32),
    }
    rows, lmnn_fits, out = [], [], {}
    for name, fit in methods.items():
        maps, secs = [], []
        for k, split in enumerate(splits):
            res, dt = _timed(lambda: fit(split[0], split[1], args.seed + k))
            if isinstance(res, LMNNFit):
                lmnn_fits.append(res)
            maps.append(_map(split, res))
            secs.append(dt)
        out[name] = np.array(maps)
        rows.append([name, f"{np.mean(maps):.1f} +- {np.std(maps):.1f}",
                     f"{np.mean(secs):.2f}"])
    print("Table 1 (synthetic): mAP (%) of ranking the training set")
    print(text_table(["method", "mAP (%)", "seconds"], rows))
    print(lmnn_summary(lmnn_fits))
    return out


def _fig2(args, split, rank, Ts):
    Xt, yt = split[0], split[1]
    rows, out = [], {"T": Ts, "SLR": [], "SLR-Fixed": []}
    for t in Ts:
        a = lowrank_slr(Xt, yt, rank, n_iter=t, random_state=args.seed,
                        dtype=np.float32)
        f = slr_fixed(Xt, yt, rank, n_iter=t, random_state=args.seed,
                      evaluate=False)
        out["SLR"].append(_map(split, a))
        out["SLR-Fixed"].append(_map(split, f))
        rows.append([str(t), f"{out['SLR'][-1]:.1f}", f"{a.objective:.4g}",
                     f"{out['SLR-Fixed'][-1]:.1f}"])
    print(f"\nFig. 2 (synthetic, r = {rank}): mAP (%) versus iterations T")
    print(text_table(["T", "SLR mAP", "SLR Eq. 4", "SLR-Fixed mAP"], rows))
    return out


def _fig3(args, split, rank, T, ms):
    Xt, yt = split[0], split[1]
    rows, out = [], {"m": ms, f"SLR-C (Alg. 3, r={rank})": [],
                     "Alg. 2 columns (full rank)": []}
    for m in ms:
        res_c, t_c = _timed(lambda: lowrank_slr(
            Xt, yt, rank, n_iter=T, n_sketch=m, random_state=args.seed,
            evaluate=False, dtype=np.float32))
        res_a, t_a = _timed(lambda: randomized_slr(
            Xt, yt, m, "columns", n_iter=T, random_state=args.seed,
            evaluate=False, dtype=np.float32))
        for key, res in zip(list(out)[1:], (res_c, res_a)):
            out[key].append(_map(split, res))
        rows.append([str(m), f"{_map(split, res_c):.1f}", f"{t_c:.2f}",
                     f"{_map(split, res_a):.1f}", f"{t_a:.2f}"])
    print(f"\nFig. 3 (synthetic): mAP (%) and seconds versus m, column sampling "
          f"(SLR-C: Alg. 3, r = {rank}; Alg. 2: full rank), T = {T}")
    print(text_table(["m", "SLR-C mAP", "s", "Alg.2-C mAP", "s"], rows))
    return out


def _ranks(args, split, T, ranks):
    Xt, yt = split[0], split[1]
    rows, maps = [], []
    for r in ranks:
        res, dt = _timed(lambda: lowrank_slr(Xt, yt, r, n_iter=T,
                                             random_state=args.seed,
                                             evaluate=False, dtype=np.float32))
        maps.append(_map(split, res))
        rows.append([str(r), f"{maps[-1]:.1f}", f"{dt:.2f}"])
    print(f"\nAlgorithm 3 (synthetic, T = {T}): mAP (%) and seconds versus rank")
    print(text_table(["rank", "mAP", "seconds"], rows))
    return {"rank": ranks, "SLR (Alg. 3)": maps}


def _figure(table1, fig2, fig3, by_rank, rank, d):
    """Table 1 as bars; Fig. 2, Fig. 3 and the rank sweep as curves (mAP
    from 0: the methods' differences are read against the whole scale)."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 4, figsize=(15, 4.2),
                             gridspec_kw={"width_ratios": [1.5, 1, 1, 1]})
    names = list(table1)
    for i, name in enumerate(names):
        v = table1[name]
        axes[0].barh(i, v.mean(), xerr=v.std() if len(v) > 1 else None, capsize=3,
                     **bar_style(i))
    axes[0].set_yticks(range(len(names)))
    axes[0].set_yticklabels(names, fontsize=8)
    axes[0].invert_yaxis()
    axes[0].set_xlim(0, 100)
    axes[0].set_xlabel("mAP (%)")
    axes[0].set_title("Table 1: mAP")
    panels = ((axes[1], fig2, "T", "iterations T", f"Fig. 2 (r = {rank})"),
              (axes[2], fig3, "m", "sampled columns m", "Fig. 3: compression"),
              (axes[3], by_rank, "rank", "rank r", "Alg. 3: rank"))
    i = 0
    for ax, data, key, xlabel, title in panels:
        for name in list(data)[1:]:
            ax.plot(data[key], data[name], label=name, **style(i))
            i += 1
        ax.set_ylim(0, 100)
        ax.set_xlim(0, None)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("mAP (%)")
        ax.set_title(title)
        ax.legend(fontsize=7, loc="best")
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.suptitle(f"SLR on synthetic classes (d = {d}; split 0 for the curves)")
    fig.tight_layout()
    return fig


if __name__ == "__main__":
    raise SystemExit(main())

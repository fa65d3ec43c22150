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
                        help="the default small data and short sweeps (kept for "
                             "older command lines)")
    parser.add_argument("--splits", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lmnn-time", type=float, default=60.0,
                        help="wall-clock budget of each LMNN fit, seconds (0: none)")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads (0: the library default; 1 was "
                             "faster on the 2 shared cores this was measured on)")
    args = parser.parse_args(argv)
    with threadpool_limits(limits=args.threads or None, user_api="blas"):
        return _run(args)


def _run(args):
    if not args.full:
        n, d, c, rank, T, steps = 1500, 200, 20, 20, 5, 3000
        ms, ranks, Ts = (200, 500), (5, 20), (1, 2)
    else:
        n, d, c, rank, T, steps = 8677, 1000, 100, 100, 10, 20000
        ms, ranks, Ts = (1000, 2000, 4000, 6074), (10, 25, 50, 100, 200), (1, 2, 3, 5, 10)
    X, y = make_synthetic_classes(n, d, c, random_state=args.seed)
    splits = []
    for k in range(args.splits):
        tr, te = train_test_split_indices(n, 0.3, random_state=args.seed + k)
        splits.append((X[tr], y[tr], X[te], y[te]))
    n_train = len(splits[0][1])
    print(f"synthetic (Caltech-like): n = {n} ({n_train} train), d = {d}, "
          f"{c} classes, {args.splits} split(s), rank {rank}, T = {T}\n")

    m_tab = ms[-2]
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
    rows, lmnn_fits = [], []
    for name, fit in methods.items():
        maps, secs = [], []
        for k, split in enumerate(splits):
            out, dt = _timed(lambda: fit(split[0], split[1], args.seed + k))
            if isinstance(out, LMNNFit):
                lmnn_fits.append(out)
            maps.append(_map(split, out))
            secs.append(dt)
        rows.append([name, f"{np.mean(maps):.1f} +- {np.std(maps):.1f}",
                     f"{np.mean(secs):.2f}"])
    print("Table 1 (synthetic): mAP (%) of ranking the training set")
    print(text_table(["method", "mAP (%)", "seconds"], rows))
    print(lmnn_summary(lmnn_fits))

    split = splits[0]
    Xt, yt = split[0], split[1]
    rows = []
    for t in Ts:
        a = lowrank_slr(Xt, yt, rank, n_iter=t, random_state=args.seed,
                        dtype=np.float32)
        f = slr_fixed(Xt, yt, rank, n_iter=t, random_state=args.seed,
                      evaluate=False)
        rows.append([str(t), f"{_map(split, a):.1f}", f"{a.objective:.4g}",
                     f"{_map(split, f):.1f}"])
    print(f"\nFig. 2 (synthetic, r = {rank}): mAP (%) versus iterations T")
    print(text_table(["T", "SLR mAP", "SLR Eq. 4", "SLR-Fixed mAP"], rows))

    rows = []
    for m in ms:
        res_c, t_c = _timed(lambda: lowrank_slr(
            Xt, yt, rank, n_iter=T, n_sketch=m, random_state=args.seed,
            evaluate=False, dtype=np.float32))
        res_a, t_a = _timed(lambda: randomized_slr(
            Xt, yt, m, "columns", n_iter=T, random_state=args.seed,
            evaluate=False, dtype=np.float32))
        rows.append([str(m), f"{_map(split, res_c):.1f}", f"{t_c:.2f}",
                     f"{_map(split, res_a):.1f}", f"{t_a:.2f}"])
    print(f"\nFig. 3 (synthetic): mAP (%) and seconds versus m, column sampling "
          f"(SLR-C: Alg. 3, r = {rank}; Alg. 2: full rank), T = {T}")
    print(text_table(["m", "SLR-C mAP", "s", "Alg.2-C mAP", "s"], rows))

    rows = []
    for r in ranks:
        res, dt = _timed(lambda: lowrank_slr(Xt, yt, r, n_iter=T,
                                             random_state=args.seed,
                                             evaluate=False, dtype=np.float32))
        rows.append([str(r), f"{_map(split, res):.1f}", f"{dt:.2f}"])
    print(f"\nAlgorithm 3 (synthetic, T = {T}): mAP (%) and seconds versus rank")
    print(text_table(["rank", "mAP", "seconds"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

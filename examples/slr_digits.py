"""SLR on scikit-learn's digits: the paper's Table 1, Fig. 2 and Fig. 3 as text.

Qian, Baytas, Jin, Jain, Zhu (2015).  Each test image queries the training
images; the images of its class are relevant; the score is the mean average
precision (mAP, %) over the queries, mean +- std over random 70 / 30 splits
(the paper's protocol).  Rows are scaled to unit norm, so that the
thresholds delta1 = 1, delta2 = 0 are on the scale of x_i^T x_j at
Algorithm 1's start M_0 = I.

    python examples/slr_digits.py            # 5 splits, every table (1 min; 45 s of it the five certified LMNN fits)
    python examples/slr_digits.py --quick    # 900 images, 1 split, short sweeps

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
                        help="one split and short sweeps (for the tests)")
    parser.add_argument("--splits", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lmnn-time", type=float, default=LMNN_TIME,
                        help="wall-clock budget of each LMNN fit, seconds (0: none)")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads (0: the library default)")
    args = parser.parse_args(argv)
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
          f"10 classes, {n_splits} split(s)\n")

    # --- Table 1: mAP per method ------------------------------------------
    rank, m = 16, 300
    lmnn_fits = []
    methods = _methods(rank, m, 2000 if args.quick else 20000, lmnn_fits,
                       args.lmnn_time or None)
    rows = []
    for name, fit in methods.items():
        maps, secs = [], []
        for k, split in enumerate(splits):
            t0 = time.perf_counter()
            M, factors = fit(split[0], split[1], args.seed + k)
            secs.append(time.perf_counter() - t0)
            maps.append(100 * _score(split, M, factors, name))
        rows.append([name, f"{np.mean(maps):.1f} +- {np.std(maps):.1f}",
                     f"{np.mean(secs):.2f}"])
    print("Table 1 (digits): mAP (%) of ranking the training set")
    print(text_table(["method", "mAP (%)", "seconds"], rows))
    print(lmnn_summary(lmnn_fits))

    # --- Fig. 2: mAP versus iterations, adaptive vs fixed target -----------
    split = splits[0]
    Ts = (1, 2) if args.quick else (1, 2, 3, 5, 10)
    rows = []
    for T in Ts:
        a = lowrank_slr(split[0], split[1], rank, n_iter=T, random_state=args.seed)
        f = slr_fixed(split[0], split[1], rank, n_iter=T, random_state=args.seed,
                      evaluate=False)
        rows.append([str(T),
                     f"{100 * _score(split, None, (a.info['L'], a.info['R']), ''):.1f}",
                     f"{a.objective:.4g}",
                     f"{100 * _score(split, None, (f.info['L'], f.info['R']), ''):.1f}"])
    whole = 100 * _score(split, slr_whole(split[0], split[1], evaluate=False).M,
                         None, "")
    print(f"\nFig. 2 (digits, split 0, r = {rank}): mAP (%) versus iterations T "
          f"(SLR-Whole: {whole:.1f})")
    print(text_table(["T", "SLR mAP", "SLR Eq. 4", "SLR-Fixed mAP"], rows))

    # --- Fig. 3: compression (m) and rank -----------------------------------
    ms = (100, 300) if args.quick else (100, 200, 300, 600, n_train)
    rows = []
    for mm in ms:
        row = [str(mm)]
        for kind in ("columns", "gaussian"):
            t0 = time.perf_counter()
            res = randomized_slr(split[0], split[1], mm, kind, random_state=args.seed,
                                 evaluate=False)
            dt = time.perf_counter() - t0
            row += [f"{100 * _score(split, None, (res.info['L'], res.info['R']), ''):.1f}",
                    f"{dt:.2f}"]
        t0 = time.perf_counter()
        res = lowrank_slr(split[0], split[1], rank, n_sketch=mm, random_state=args.seed,
                          evaluate=False)
        dt = time.perf_counter() - t0
        row += [f"{100 * _score(split, None, (res.info['L'], res.info['R']), ''):.1f}",
                f"{dt:.2f}"]
        rows.append(row)
    print("\nFig. 3 (digits, split 0): mAP (%) and seconds versus the compressed "
          f"size m (Alg. 2: T = 10, full rank; SLR-C: Alg. 3, r = {rank})")
    print(text_table(["m", "Alg.2-C mAP", "s", "Alg.2-G mAP", "s", "SLR-C mAP", "s"],
                     rows))

    ranks = (4, 16) if args.quick else (2, 4, 8, 16, 32, 64)
    rows = []
    for r in ranks:
        t0 = time.perf_counter()
        res = lowrank_slr(split[0], split[1], r, random_state=args.seed)
        dt = time.perf_counter() - t0
        rows.append([str(r),
                     f"{100 * _score(split, None, (res.info['L'], res.info['R']), ''):.1f}",
                     f"{res.objective:.4g}", f"{dt:.2f}"])
    print("\nAlgorithm 3 (digits, split 0, T = 10): mAP (%), Eq. 4 and seconds "
          "versus the rank r")
    print(text_table(["rank", "mAP", "Eq. 4", "seconds"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

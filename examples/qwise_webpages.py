"""Qwise on webpage versions: important-change maps and change detection (Sec. 5).

Law, Thome, Cord, "Learning a distance metric from relative comparisons
between quadruplets of images" (IJCV 2016), Sec. 5, on synthetic hourly
versions of a news page (:func:`cvxmetric.qwise.make_page_versions`:
static menus, a news block of three strips of which a random subset is
redrawn on average every 4 versions, a live ticker band redrawn at every
version just below the news, an advertisement column rotating among three
ads, pixel noise, 5 % exact copies).  Ground truth (Sec. 5.3): a pair of
versions is *dissimilar* iff its news differs.

Protocol (Sec. 5.3-5.5).  One page of ``--days`` x 24 versions per seed;
each of ``--splits`` splits trains on 5 successive days (120 versions,
split ``k`` on days ``5k .. 5k + 4``) and tests on the successive pairs
``(v_t, v_{t+1})`` of the other days, identical versions excluded.  Per
region distances: the squared distance of GIST-like cell histograms of
gradient orientations on an ``m x m`` grid (``d_regions``, Sec. 5.2).

* Euclidean: ``sum_k d_regions_k`` (the squared Euclidean distance of the
  whole descriptors);
* Triplet-based: ``QwiseVector(psi="squared")`` on the quadruplets of ``A``
  that are triplets, i.e. share a version: ``r = t``
  (``D(v_t, v_{t+1}) + 1 <= D(v_t, v_s)``) or ``s = t + 1``
  (``D(v_t, v_{t+1}) + 1 <= D(v_r, v_{t+1})``);
* Qwise ``D_w``: the same model on ``N = A u B`` (Eq. 18-19, ``gamma = 4``,
  ``r >= t - 6``, ``s <= t + 7``, Sec. 5.4), Eq. 22;
* Qwise ``D_M``: the full-matrix model of Eq. 23 on the same quadruplets
  (``Qwise(regularizer="frobenius", solver="fast")`` on
  ``c = d_regions^{o 1/2}``);
* Qwise ``D_w`` + labels: ``A u B`` and ``--labelled`` human-labelled
  training pairs per class (Eq. 20-21), so that the threshold ``b`` is
  learned.

All learned metrics use the smoothed losses and the projected Newton method
(``loss="huber", solver="newton"``; the exact hinge solve gives the same
maps, 40-80 times slower).  Table 1: ``AP_S``, ``AP_D``, ``MAP`` of the test
pairs, and the mean class accuracy of the unsupervised detector of Sec. 5.5
(the ``k = 25`` training pairs with the largest distance as ``D``, the 25
non-identical ones with the smallest as ``S``, a linear SVM on the
distance) -- for the labelled row, of its learned ``b``.  Table 2: that
detector on ``D_w`` alone and in late fusion with the Jaccard distance of
the hyperlink sets (non-negative SVM weights).  Fig. 8: its accuracy
against the grid resolution ``m``.

    python examples/qwise_webpages.py               # 3 seeds x 2 splits, 20 days (~10 s)
    python examples/qwise_webpages.py --full        # 5 seeds x 10 splits, 50 days
    python examples/qwise_webpages.py --quick       # 2 seeds x 2 splits, 20 days (seconds)
    python examples/qwise_webpages.py --json r.json # also the numbers as JSON

The two figures, Fig. 5 (page and learned weights) and Fig. 8, are shown
by default (``--no-figures``: the tables only, without matplotlib);
``--figures DIR`` writes them to DIR/qwise_importance.png and
DIR/qwise_grid.png (the documentation's copies:
``--full --figures docs/img``).  BLAS runs single-threaded (``--threads``).  Durations on the
2-core development machine next to other jobs: the default run 10-23 s,
``--full`` 2.5-4 minutes (220 s next to another job).
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from cvxmetric.experiments._figures import (
    add_figure_options,
    finish,
    parse_example_args,
    pyplot,
    style,
)
from cvxmetric.experiments.qwise.temporal import (
    jaccard_distances,
    region_distances,
    successive_pairs,
    temporal_problem,
    temporal_quadruplets,
    unsupervised_change_detector,
)
from cvxmetric.metrics import ap_dissimilar, ap_similar, mean_class_accuracy
from cvxmetric.qwise import make_page_versions
from cvxmetric.qwise.estimator import Qwise
from cvxmetric.qwise_vector.estimator import QwiseVector

TRAIN = 120  # 5 days of hourly versions
METHODS = ("Euclidean", "Triplet-based", "Qwise D_w", "Qwise D_M", "Qwise D_w + labels")
FUSION = ("visual (D_w)", "visual + structural (D_w, D_H)")


def fit_metric(versions, quads, delta, grid, pairs=None, pair_labels=None):
    prob = temporal_problem(versions, quads, delta, grid=grid,
                            pairs=pairs, pair_labels=pair_labels)
    est = QwiseVector(psi="squared", loss="huber", solver="newton",
                      preprocessor=prob.X)
    est.fit(prob.quadruplets, delta=prob.delta, pairs=prob.pairs,
            pair_labels=prob.pair_labels)
    return est


def fit_full_matrix(versions, quads, delta, grid):
    """Eq. 23: ``D_M^2 = c^T M c`` on the same samples ``c = d_regions^{o 1/2}``."""
    prob = temporal_problem(versions, quads, delta, grid=grid)
    est = Qwise(regularizer="frobenius", solver="fast", preprocessor=prob.X)
    return est.fit(prob.quadruplets, delta=prob.delta).mahalanobis_matrix_


def full_distance(d_regions, M):
    c = np.sqrt(d_regions)
    return np.einsum("pi,ij,pj->p", c, M, c)


def triplet_subset(quads, delta):
    """The quadruplets of A that are triplets (share a version)."""
    t, t1, r, s = quads.T
    keep = (delta == 1.0) & ((r == t) | (s == t1))
    return quads[keep], delta[keep]


def run_split(args, pages, start, seed):
    """Every table cell of one train window ``[start, start + 120)``."""
    T = len(pages)
    train = np.arange(start, start + TRAIN)
    versions = pages.images[train]
    quads, delta = temporal_quadruplets(TRAIN, args.gamma)
    all_pairs = successive_pairs(T)
    in_train = (all_pairs[:, 0] >= start) & (all_pairs[:, 1] < start + TRAIN)
    identical = pages.identical_pairs(all_pairs)
    test = all_pairs[~in_train & ~identical]
    # the training window's own successive pairs are the detector's candidates
    cand = all_pairs[in_train]
    cand_local = cand - start
    cand_identical = identical[in_train]
    similar = pages.similar(test)
    res, grids = {}, {}

    def detector_accuracy(d_train, d_test):
        det = unsupervised_change_detector(d_train, k=args.k, exclude=cand_identical)
        pred_similar = det.predict(d_test) == 1
        return 0.5 * (np.mean(pred_similar[similar]) + np.mean(~pred_similar[~similar]))

    for grid in args.grids:
        d_test = region_distances(pages.images, test, grid=grid)
        d_cand = region_distances(versions, cand_local, grid=grid)
        eucl = d_test.sum(axis=1)
        w = fit_metric(versions, quads, delta, grid).coef_
        grids[grid] = {"Euclidean": detector_accuracy(d_cand.sum(axis=1), eucl),
                       "Qwise D_w": detector_accuracy(d_cand @ w, d_test @ w)}
        if grid != args.grid:
            continue
        rng = np.random.RandomState(seed * 1000 + start)
        truth = pages.similar(cand)
        pools = [np.flatnonzero(truth & ~cand_identical), np.flatnonzero(~truth)]
        labelled = np.concatenate([rng.choice(p, min(args.labelled, p.size), False)
                                   for p in pools])
        sup = fit_metric(versions, quads, delta, grid, pairs=cand_local[labelled],
                         pair_labels=np.where(truth[labelled], 1, -1))
        tq, td = triplet_subset(quads, delta)
        w_trip = fit_metric(versions, tq, td, grid).coef_
        M = fit_full_matrix(versions, quads, delta, grid)
        for name, dc, dt, b in (
                ("Euclidean", d_cand.sum(axis=1), eucl, None),
                ("Triplet-based", d_cand @ w_trip, d_test @ w_trip, None),
                ("Qwise D_w", d_cand @ w, d_test @ w, None),
                ("Qwise D_M", full_distance(d_cand, M), full_distance(d_test, M), None),
                ("Qwise D_w + labels", None, d_test @ sup.coef_, sup.intercept_)):
            acc = (detector_accuracy(dc, dt) if b is None
                   else mean_class_accuracy(dt, similar, float(b)))
            res[name] = [ap_similar(dt, similar), ap_dissimilar(dt, similar), acc]
        # Table 2: the same detector, D_w alone or fused with D_H (hyperlinks)
        h_cand = jaccard_distances(pages.links[train], cand_local)
        h_test = jaccard_distances(pages.links, test)
        fused = unsupervised_change_detector(np.stack([d_cand @ w, h_cand], 1), k=args.k,
                                             exclude=cand_identical)
        pred = fused.predict(np.stack([d_test @ w, h_test], 1)) == 1
        res["fusion"] = [grids[grid]["Qwise D_w"],
                         0.5 * (np.mean(pred[similar]) + np.mean(~pred[~similar]))]
        res["alpha"] = fused.coef_.tolist()
        res["w"] = w.tolist()
        res["n_quads"] = [len(quads), int(delta.sum()), len(tq)]
        res["n_test"] = [int(similar.sum()), int((~similar).sum())]
    return res, grids


def run(args):
    t0 = time.perf_counter()
    per, per_grid, alphas, first = [], [], [], None
    for seed in args.seed_list:
        pages = make_page_versions(24 * args.days, random_state=seed)
        for split in range(args.splits):
            res, grids = run_split(args, pages, split * TRAIN, seed)
            per.append(res)
            per_grid.append(grids)
            alphas.append(res["alpha"])
            if first is None:
                first = (pages, res["w"])
    n_runs = len(per)
    tab = np.array([[r[m] for m in METHODS] for r in per])        # (runs, methods, 3)
    fus = np.array([r["fusion"] for r in per])                     # (runs, 2)
    gr = np.array([[[pg[g]["Euclidean"], pg[g]["Qwise D_w"]] for g in args.grids]
                   for pg in per_grid])                             # (runs, grids, 2)
    n_q = per[0]["n_quads"]
    n_t = np.array([r["n_test"] for r in per]).mean(axis=0)
    print(f"synthetic news page, {args.days} days x 24 versions; {len(args.seed_list)} "
          f"seed(s) x {args.splits} split(s) = {n_runs} runs; train 5 days (120 versions, "
          f"{n_q[0]} quadruplets: {n_q[1]} in A, {n_q[0] - n_q[1]} in B; triplet-based "
          f"{n_q[2]}); test ~{n_t[0]:.0f} similar / {n_t[1]:.0f} dissimilar successive "
          f"pairs per run; gamma = {args.gamma}, k = {args.k}")

    def cell(x):
        return f"{100 * x.mean():.1f} ± {100 * x.std():.1f}"

    print(f"\n### Table 1 (synthetic page): test AP and accuracy (%), {args.grid}x"
          f"{args.grid} grid, mean ± std over {n_runs} runs\n")
    print("| method | AP_S | AP_D | MAP | accuracy |")
    print("|---|---|---|---|---|")
    for i, m in enumerate(METHODS):
        v = tab[:, i]
        print(f"| {m} | {cell(v[:, 0])} | {cell(v[:, 1])} | "
              f"{cell(v[:, :2].mean(axis=1))} | {cell(v[:, 2])} |")
    print(f"\naccuracy: the unsupervised detector of Sec. 5.5 (k = {args.k}); "
          f"'+ labels': the learned b of Eq. 20-21 ({args.labelled} labelled pairs "
          f"per class)")
    print(f"\n### Table 2 (synthetic page): unsupervised detector accuracy (%), "
          f"{args.grid}x{args.grid} grid\n")
    print("| features | accuracy |")
    print("|---|---|")
    for i, m in enumerate(FUSION):
        print(f"| {m} | {cell(fus[:, i])} |")
    a = np.array(alphas)
    print(f"\nfusion weights alpha (D_w, D_H), all >= 0: min {a.min():.3g}; "
          f"mean {np.round(a.mean(axis=0), 3).tolist()}")
    print("\n### Fig. 8 (synthetic page): unsupervised detector accuracy (%) "
          "against the grid resolution\n")
    print("| grid | Euclidean | Qwise D_w |")
    print("|---|---|---|")
    for j, g in enumerate(args.grids):
        print(f"| {g}x{g} | {cell(gr[:, j, 0])} | {cell(gr[:, j, 1])} |")
    results = {
        "table1": {m: {"mean": tab[:, i].mean(0).tolist(), "std": tab[:, i].std(0).tolist()}
                   for i, m in enumerate(METHODS)},
        "table2": {m: {"mean": float(fus[:, i].mean()), "std": float(fus[:, i].std())}
                   for i, m in enumerate(FUSION)},
        "alpha": alphas,
        "grid": {str(g): {"Euclidean": gr[:, j, 0].tolist(), "Qwise D_w": gr[:, j, 1].tolist()}
                 for j, g in enumerate(args.grids)},
    }
    pages, w = first
    news = pages.cell_fraction("news", args.grid) > 0.5
    print(f"\nimportance (Sec. 5.4), first run: news cells mean weight "
          f"{np.mean(np.asarray(w)[news]):.3g}, other cells "
          f"{np.mean(np.asarray(w)[~news]):.3g}")
    written = [] if args.no_figures else finish(figures(args, first, gr), args)
    total = time.perf_counter() - t0
    print(f"\ntotal {total:.1f} s")
    if args.json:
        out = {"settings": {k: v for k, v in vars(args).items()
                            if k not in ("json", "figures", "threads")},
               "results": results, "figures": written, "seconds": round(total, 1)}
        Path(args.json).write_text(json.dumps(out, indent=1))
        print(f"numbers: {args.json}")
    return 0


def figures(args, first, gr):
    """Fig. 5 (a version and the learned weights) and Fig. 8."""
    from matplotlib.colors import to_rgba

    plt = pyplot()
    pages, w = first
    m = args.grid
    img = pages.images[0]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(7.5, 3.6))
    ax1.imshow(img, cmap="gray", vmin=0, vmax=1, interpolation="nearest")
    colours = {"news": "tab:blue", "top_menu": "tab:green", "left_menu": "tab:green",
               "ads": "tab:purple", "ticker": "tab:orange"}
    overlay = np.zeros(img.shape + (4,))
    for name, c in colours.items():
        overlay[pages.masks[name]] = to_rgba(c, 0.35)
    ax1.imshow(overlay, interpolation="nearest")
    edges = np.round(np.linspace(0, img.shape[0], m + 1)) - 0.5
    for e in edges:
        ax1.axhline(e, color="r", lw=0.4)
        ax1.axvline(e, color="r", lw=0.4)
    ax1.set_title("version (news blue, menus green,\nads purple, ticker orange)",
                  fontsize=9)
    ax2.imshow(np.asarray(w).reshape(m, m), cmap="Greys", interpolation="nearest")
    ax2.set_title(f"learned w ({m}x{m}, darker = larger)\nno human labels", fontsize=9)
    for ax in (ax1, ax2):
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()

    fig_grid, ax = plt.subplots(figsize=(4.5, 3.2))
    for j, name in enumerate(("Euclidean", "Qwise D_w")):
        mean, std = 100 * gr[:, :, j].mean(0), 100 * gr[:, :, j].std(0)
        ax.errorbar(args.grids, mean, yerr=std, capsize=3, label=name, **style(j))
    ax.axhline(50, color="0.6", lw=0.8, ls=":", label="chance (50 %)")
    ax.set_ylim(0, 100)
    ax.set_xlabel("grid resolution m (m x m regions)")
    ax.set_ylabel("test accuracy (%)")
    ax.set_xticks(args.grids)
    ax.set_title("unsupervised change detection (k = %d)" % args.k, fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    fig_grid.tight_layout()
    return {"qwise_importance": fig, "qwise_grid": fig_grid}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true",
                        help="5 seeds x 10 splits over 50 days")
    parser.add_argument("--quick", action="store_true",
                        help="2 seeds x 2 splits over 20 days (the gallery)")
    parser.add_argument("--seeds", type=int, default=None,
                        help="pages (default 3, --full 5, --quick 2)")
    parser.add_argument("--seed", type=int, default=0, help="first seed")
    parser.add_argument("--days", type=int, default=None, help="default 20, full 50")
    parser.add_argument("--splits", type=int, default=None,
                        help="train windows of 5 days per page (default 2, full 10)")
    parser.add_argument("--grid", type=int, default=10, help="grid of Tables 1-2")
    parser.add_argument("--grids", type=lambda s: [int(v) for v in s.split(",")],
                        default=None, help="grids of Fig. 8 (default 2,4,6,8,10)")
    parser.add_argument("--gamma", type=int, default=4)
    parser.add_argument("--k", type=int, default=25, help="pseudo-labelled pairs per class")
    parser.add_argument("--labelled", type=int, default=20,
                        help="labelled training pairs per class of the '+ labels' row")
    add_figure_options(parser)
    parser.add_argument("--json", default=None, metavar="PATH")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads (0: the library default)")
    args = parse_example_args(parser, argv, "qwise_webpages.py")
    n_seeds = args.seeds or (5 if args.full else 2 if args.quick else 3)
    args.seed_list = [args.seed + i for i in range(n_seeds)]
    args.days = args.days or (50 if args.full else 20)
    args.splits = args.splits or (10 if args.full else 2)
    args.grids = args.grids or [2, 4, 6, 8, 10]
    if args.grid not in args.grids:
        args.grids = sorted(set(args.grids) | {args.grid})
    if args.splits < 1 or args.splits * 5 > args.days or args.days < 10:
        parser.error(f"--splits {args.splits} with --days {args.days}: each split trains "
                     f"on its own 5 days and tests on the others (need 1 <= 5 splits "
                     f"<= days and days >= 10)")
    with threadpool_limits(limits=args.threads or None, user_api="blas"):
        return run(args)


if __name__ == "__main__":
    raise SystemExit(main())

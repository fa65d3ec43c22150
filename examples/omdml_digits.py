"""OMDML on five views of scikit-learn's digits: the paper's Table 2 and Figs. 2-3.

Wu, Hoi, Zhao, Miao, Liu, "Online multi-modal distance metric learning"
(TKDE 2016), Sec. 5.  The 1797 digit images are described by five
modalities (pixels, intensity histogram, gradient orientations, row/column
profiles, moments; :func:`cvxmetric.experiments.omdml.views.digits_views`), every
feature scaled to [0, 1] on the training part.  Stratified split: 500 test
and 500 validation images, the rest (797) for training; test (validation)
images query the training images, those of their class are relevant.

Rows: the squared Euclidean distance (Eucl), RCA, OASIS and LMNN
(cvxmetric's certified LMNN, k = 3, regularization 0.5), each fused over
the modalities three ways (-B best modality on the validation mAP,
-C concatenated features, -U uniform sum of the per-modality distances),
then OMDML (Algorithm 1) and LOMDML (Algorithm 2) learned online from
5000 triplets sampled from the training labels.  Printed: mAP and
precision at K = 10 on the test queries, the learning time, -B's chosen
modality, how many LMNN fits were certified optimal, OMDML's and LOMDML's
modality weights theta and online mistake rates.

    python examples/omdml_digits.py                    # one split (1 min)
    python examples/omdml_digits.py --quick            # 900 images, 2000 triplets
    python examples/omdml_digits.py --full             # 5 splits, mean +- std
    python examples/omdml_digits.py --lmnn-time 0      # every LMNN fit certified
    python examples/omdml_digits.py --figures DIR      # the two figures as PNGs in DIR

Each LMNN fit stops after ``--lmnn-time`` seconds (60 by default) with the
status it reached; the line under Table 2 says how many were certified.
Run to certification (``--lmnn-time 0``), the one split takes 50 s on the
2-core machine, every fit certified, so the default budget does not bind.

The two figures, shown by default (``--no-figures``: the tables only;
they need matplotlib, ``pip install cvxmetric[plot]``): the top-K
precision curves (the paper's Fig. 2) and the online cumulative mistake
rate of OMDML and LOMDML and of LOMDML on each single modality (the
paper's Fig. 3).  ``--figures DIR`` writes them to DIR/omdml_topk.png and
DIR/omdml_mistakes.png (the documentation's copies:
``--figures docs/img``).  ``--quick`` (the gallery's run, about 10 s):
900 images, 2000 triplets, LMNN fits stopped after 2 s.  BLAS runs
single-threaded (``--threads``): every product here is small.  Durations
measured on the 2-core development machine.
"""

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

import cvxmetric
from cvxmetric.bench.slr import text_table
from cvxmetric.constraints import triplets_from_labels
from cvxmetric.experiments._figures import (
    add_figure_options,
    finish,
    parse_example_args,
    pyplot,
    style,
)
from cvxmetric.experiments.omdml.baselines import (
    evaluate,
    retrieval_scores,
    squared_distances,
)
from cvxmetric.experiments.omdml.views import digits_views, retrieval_split, scale_views

#: OMDML's and LOMDML's settings.  LOMDML's rank is the smallest view's
#: dimension (14, the moments): the paper's r = 50 is above most of the
#: views' dimensions here, and one rank serves every view.
OMDML_PARAMS = {"C": 1.0, "beta": 0.5, "gamma": 1.0}
LOMDML_PARAMS = {"eta": 0.01, "beta": 0.5, "gamma": 1.0}


def _learners(rank):
    """name -> estimator factory of the multi-modal learners, empty when
    :class:`cvxmetric.OMDML` is not available in this version."""
    OMDML = getattr(cvxmetric, "OMDML", None)
    if OMDML is None:
        return {}
    return {"OMDML": lambda seed: OMDML(**OMDML_PARAMS, random_state=seed),
            "LOMDML": lambda seed: OMDML(**LOMDML_PARAMS, rank=rank,
                                         random_state=seed)}


def _multimodal_rows(learners, views, y, split, n_triplets, ks, seed):
    """Fit OMDML / LOMDML on the training views; their scores and state."""
    train, _, test = split
    vtr = [v[train] for v in views]
    trip = triplets_from_labels(y[train], n_triplets, random_state=seed)
    out = {}
    for name, make in learners.items():
        t0 = time.perf_counter()
        est = make(seed).fit(vtr, trip)
        seconds = time.perf_counter() - t0
        # transform: Euclidean distance^2 there is the combined distance
        Z = est.transform(views)
        m, topk = retrieval_scores(squared_distances(Z[test], Z[train]), y[test],
                                   y[train], ks)
        out[name] = {"map": m, "topk": topk, "seconds": seconds,
                     "theta": np.asarray(est.theta_),
                     "history": np.asarray(est.mistake_history_)}
    return out, vtr, trip


def _single_modal_mistakes(learners, vtr, trip, seed):
    """Cumulative mistakes of LOMDML on each modality alone (Fig. 3)."""
    if "LOMDML" not in learners:
        return []
    return [np.asarray(learners["LOMDML"](seed).fit([v], trip).mistake_history_)
            for v in vtr]


def _run_split(views_raw, y, seed, args, learners, ks):
    split = retrieval_split(y, args.n_val, args.n_test, random_state=seed)
    # the [0, 1] scaling is fit on the training part only (no test leak)
    views = scale_views(views_raw, fit_on=split[0])
    t0 = time.perf_counter()
    ev = evaluate(views, y, split, n_triplets=args.triplets, ks=ks,
                  lmnn_max_time=args.lmnn_time or None, random_state=seed)
    base_seconds = time.perf_counter() - t0
    multi, vtr, trip = _multimodal_rows(learners, views, y, split, args.triplets, ks,
                                        seed)
    return split, ev, multi, base_seconds, (vtr, trip)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="900 images, 2000 triplets, LMNN fits of 2 s at most (the gallery)")
    parser.add_argument("--full", action="store_true",
                        help="5 random splits, mean +- std")
    parser.add_argument("--splits", type=int, default=None)
    parser.add_argument("--triplets", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    add_figure_options(parser)
    parser.add_argument("--lmnn-time", type=float, default=None,
                        help="wall-clock budget of each LMNN fit, seconds (0: until "
                             "certified; default 60, --quick 5)")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads (0: the library default)")
    args = parse_example_args(parser, argv, "omdml_digits.py")
    if args.lmnn_time is None:
        args.lmnn_time = 2.0 if args.quick else 60.0
    with threadpool_limits(limits=args.threads or None, user_api="blas"):
        return _run(args)


def _run(args):
    t_start = time.perf_counter()
    n_splits = args.splits or (5 if args.full else 1)
    args.triplets = args.triplets or (2000 if args.quick else 5000)
    views_raw, y, names = digits_views(n_samples=900 if args.quick else None,
                                       random_state=args.seed, scale=False)
    args.n_val, args.n_test = (200, 200) if args.quick else (500, 500)
    ks = tuple(range(1, 101))
    learners = _learners(min(v.shape[1] for v in views_raw))
    dims = ", ".join(f"{nm} {v.shape[1]}" for nm, v in zip(names, views_raw))
    n = len(y)
    print(f"digits: n = {n} ({n - args.n_val - args.n_test} train / {args.n_val} "
          f"validation / {args.n_test} test), 10 classes, {len(names)} modalities "
          f"({dims}); {args.triplets} training triplets; {n_splits} split(s)")
    if not learners:
        print("cvxmetric.OMDML is not available in this version: the OMDML and "
              "LOMDML rows are skipped.")

    runs = [_run_split(views_raw, y, args.seed + k, args, learners, ks)
            for k in range(n_splits)]

    # --- Table 2: mAP per algorithm ---------------------------------------
    names_rows = list(runs[0][1].map) + list(runs[0][2])

    def values(key, name):
        """One value per split: a baseline's from evaluate, else OMDML's."""
        return np.array([getattr(ev, key)[name] if name in ev.map else multi[name][key]
                         for _, ev, multi, _, _ in runs])

    rows = []
    for name in names_rows:
        maps = values("map", name)
        p10 = np.array([v[9] for v in values("topk", name)])
        secs = values("seconds", name)
        if name in runs[0][1].view and runs[0][1].view[name] is not None:
            chosen = ", ".join(sorted({names[r[1].view[name]] for r in runs}))
        else:
            chosen = ""
        fmt = (lambda a: f"{a.mean():.4f} +- {a.std():.4f}") if n_splits > 1 else \
            (lambda a: f"{a[0]:.4f}")
        rows.append([name, fmt(maps), fmt(p10), f"{secs.mean():.2f}", chosen])
    print("\nTable 2 (digits): mAP and precision at K = 10 of ranking the training "
          "images for each test image")
    print(text_table(["Alg.", "mAP", "P@10", "seconds", "-B modality"], rows))
    _print_statuses(runs)

    if learners:
        print("\nModality weights theta and online mistake rate (split 0):")
        trows = []
        for name, res in runs[0][2].items():
            h = res["history"]
            trows.append([name] + [f"{t:.3f}" for t in res["theta"]]
                         + [f"{h[-1] / len(h):.3f}"])
        print(text_table(["Alg."] + list(names) + ["mistake rate"], trows))

    if not args.no_figures:
        finish(_figures(runs[0], names, learners, ks, args.seed), args)
    print(f"\ntotal {time.perf_counter() - t_start:.1f} s")
    return 0


def _print_statuses(runs):
    """How the learned metrics' solves ended, per row, over every split."""
    lines = []
    for name in runs[0][1].status:
        st = [s for _, ev, _, _, _ in runs for s in ev.status[name]]
        if st:
            ok = sum(s == "optimal" for s in st)
            lines.append(f"{name} {ok}/{len(st)}")
    if lines:
        print("certified optimal fits (per row, all splits): " + ", ".join(lines))


def _figures(run, names, learners, ks, seed):
    """The top-K precision curves and the online mistake rates."""
    plt = pyplot()
    _, ev, multi, _, (vtr, trip) = run
    ks = np.asarray(ks)
    curves = list(ev.topk.items()) + [(n, multi[n]["topk"]) for n in ("OMDML", "LOMDML")
                                      if n in multi]
    fig_topk, ax = plt.subplots(figsize=(7, 4.5))
    # every series its own colour, marker and line style; markers every 10 K
    # (shifted per series) so the curves stay legible
    for i, (name, curve) in enumerate(curves):
        bold = name in multi
        ax.plot(ks, curve, lw=2.2 if bold else 1.1, ms=6 if bold else 4,
                markevery=(i % 10, 10), label=name, **style(i))
    ax.set_xlabel("K (top-K retrieved training images)")
    ax.set_ylabel("precision at K")
    ax.set_ylim(0, 1)
    ax.set_xlim(0, ks[-1])
    ax.set_title("digits, 5 modalities: top-K precision on the test queries")
    ax.grid(alpha=0.3)
    ax.legend(ncol=3, fontsize=7, loc="lower left")
    fig_topk.tight_layout()

    fig_mis, ax = plt.subplots(figsize=(7, 4.5))
    t = np.arange(1, len(trip) + 1)
    series = [(n, multi[n]["history"]) for n in ("OMDML", "LOMDML") if n in multi]
    series += [(f"LOMDML on {nm} only", h) for nm, h in
               zip(names, _single_modal_mistakes(learners, vtr, trip, seed))]
    for i, (name, h) in enumerate(series):
        ax.plot(t, h / t, lw=2.2 if i < 2 else 1.0, ms=5,
                markevery=np.unique(np.geomspace(1, len(t), 12).astype(int)) - 1,
                label=name, **style(i))
    if not multi:
        ax.text(0.5, 0.5, "cvxmetric.OMDML not available", ha="center",
                transform=ax.transAxes)
    # log t: the first hundred triplets, where the rates differ most, are
    # visible next to the plateau
    ax.set_xscale("log")
    ax.set_xlabel("t (triplets seen, log scale)")
    ax.set_ylabel("cumulative mistake rate")
    ax.set_title("digits: online cumulative mistake rate (mistakes / t)")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig_mis.tight_layout()
    return {"omdml_topk": fig_topk, "omdml_mistakes": fig_mis}


if __name__ == "__main__":
    raise SystemExit(main())

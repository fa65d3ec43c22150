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
    python examples/omdml_digits.py --figures docs/img # also the two figures

Each LMNN fit stops after ``--lmnn-time`` seconds (60 by default) with the
status it reached; the line under Table 2 says how many were certified.
Run to certification (``--lmnn-time 0``), the one split takes 50 s on the
2-core machine, every fit certified, so the default budget does not bind.

``--figures DIR`` writes DIR/omdml_topk.png (top-K precision curves, the
paper's Fig. 2) and DIR/omdml_mistakes.png (online cumulative mistake rate
of OMDML and LOMDML and of LOMDML on each single modality, the paper's
Fig. 3); it needs matplotlib (``pip install cvxmetric[plot]``).  BLAS runs
single-threaded (``--threads``): every product here is small.  Durations
measured on the 2-core development machine.
"""

import argparse
import importlib.util
import time

import numpy as np
from threadpoolctl import threadpool_limits

import cvxmetric
from cvxmetric.constraints import triplets_from_labels
from cvxmetric.experiments.omdml.baselines import (BASELINES, FUSIONS, evaluate, retrieval_scores,
                                        squared_distances)
from cvxmetric.experiments.omdml.views import digits_views, retrieval_split, scale_views
from cvxmetric.bench.slr import text_table

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
                        help="900 images, 2000 triplets (for the tests)")
    parser.add_argument("--full", action="store_true",
                        help="5 random splits, mean +- std")
    parser.add_argument("--splits", type=int, default=None)
    parser.add_argument("--triplets", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--figures", default=None, metavar="DIR",
                        help="write omdml_topk.png and omdml_mistakes.png there")
    parser.add_argument("--lmnn-time", type=float, default=60.0,
                        help="wall-clock budget of each LMNN fit, seconds (0: until "
                             "certified)")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads (0: the library default)")
    args = parser.parse_args(argv)
    if args.quick and args.full:
        parser.error("--quick and --full exclude each other")
    if args.figures is not None and importlib.util.find_spec("matplotlib") is None:
        parser.error("--figures needs matplotlib (pip install matplotlib); "
                     "nothing was run")
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

    if args.figures:
        _figures(args.figures, runs[0], names, learners, ks, args.seed)
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


def _figures(folder, run, names, learners, ks, seed):
    """The top-K precision curves and the online mistake rates, as PNGs."""
    from pathlib import Path

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    _, ev, multi, _, (vtr, trip) = run
    ks = np.asarray(ks)
    colors = dict(zip(BASELINES, ("0.55", "tab:green", "tab:orange", "tab:purple")))
    # every series its own (colour, marker, line style): colour = method,
    # marker and style = fusion; markers every 10 K so the curves stay legible
    styles = dict(zip(FUSIONS, (":", "--", "-.")))
    markers = dict(zip(FUSIONS, ("o", "s", "^")))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, curve in ev.topk.items():
        method, fusion = name.split("-")
        ax.plot(ks, curve, styles[fusion], color=colors[method], lw=1.2,
                marker=markers[fusion], markevery=(len(ks) // 20, 10), ms=4,
                label=name)
    for name, color, marker in (("OMDML", "tab:blue", "D"), ("LOMDML", "tab:red", "*")):
        if name in multi:
            ax.plot(ks, multi[name]["topk"], "-", color=color, lw=2.2,
                    marker=marker, markevery=(0, 10), ms=6, label=name)
    ax.set_xlabel("K (top-K retrieved training images)")
    ax.set_ylabel("precision at K")
    ax.set_title("digits, 5 modalities: top-K precision on the test queries")
    ax.grid(alpha=0.3)
    ax.legend(ncol=3, fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(folder / "omdml_topk.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4.5))
    t = np.arange(1, len(trip) + 1)
    for name, color in (("OMDML", "tab:blue"), ("LOMDML", "tab:red")):
        if name in multi:
            ax.plot(t, multi[name]["history"] / t, color=color, lw=2.2, label=name)
    single = _single_modal_mistakes(learners, vtr, trip, seed)
    # colours apart from OMDML's blue and LOMDML's red
    for nm, h, c in zip(names, single, ("tab:gray", "tab:orange", "tab:green",
                                        "tab:purple", "tab:brown")):
        ax.plot(t, h / t, "--", color=c, lw=1.0, label=f"LOMDML on {nm} only")
    if not multi:
        ax.text(0.5, 0.5, "cvxmetric.OMDML not available", ha="center",
                transform=ax.transAxes)
    # log t: the first hundred triplets, where the rates differ most, are
    # visible next to the plateau
    ax.set_xscale("log")
    ax.set_xlabel("t (triplets seen)")
    ax.set_ylabel("cumulative mistake rate")
    ax.set_title("digits: online cumulative mistake rate (mistakes / t)")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(folder / "omdml_mistakes.png", dpi=110)
    plt.close(fig)
    print(f"figures: {folder / 'omdml_topk.png'}, {folder / 'omdml_mistakes.png'}")


if __name__ == "__main__":
    raise SystemExit(main())

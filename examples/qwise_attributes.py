"""Relative attributes on the digits with Qwise constraints: the paper's Table 8 / Fig. 11 setting.

Law, Thome, Cord, "Learning a distance metric from relative comparisons
between quadruplets of images" (IJCV 2016), Sec. 7.2.1, on scikit-learn's
8x8 digits instead of OSR / PubFig.  Four relative attributes, each a class
ordering with ties (as Table 7), computed once from the class means of a
hand-made per-image measure over all 1 797 images (the "annotation"):

* ``width``: ink-weighted standard deviation of the column index;
* ``height``: the same over the row index;
* ``low``: ink-weighted mean row index (how low the ink sits);
* ``slant``: minus the ink-weighted correlation of row and column (/ or \\).

Classes are sorted by their mean; a class joins the current level ``~``
when its mean is within ``tau`` pooled within-class standard deviations of
the level's first (lowest) class, else it opens the next level ``<``.

Learning (Sec. 7.2.1): ``N`` training images per class (the rest is the
test set), one row ``w_m`` of ``L`` per attribute from the constraints of a
method (:mod:`cvxmetric.experiments.qwise.attributes`), ``QwiseVector(psi="linear",
loss="huber", solver="newton", C_q)``; then one Gaussian per class on
``h = L x`` of the training images and maximum likelihood
(:class:`~cvxmetric.experiments.qwise.attributes.AttributeGaussianClassifier`); the
score is the mean per-class accuracy on the test images, mean +- std over
``--seeds`` random splits.  ``B`` class pairs per attribute (all usable
ones by default; fewer when a method can use fewer), every ``N x N`` image
pair of each.

Methods: the pairwise ranking-SVM baseline of Parikh and Grauman with and
without its equivalence constraints, QWSL-p (equivalences by Eq. 26),
OQWSL-p (quadruplets only, Eq. 25-26) and OQWSL-1 + border pairs (Table 8's
PubFig "Qwise + Pairwise", Q+Pwise).

Table 8's LMNN rows (Sec. 7.2.2), with :class:`cvxmetric.LMNN` (Weinberger
and Saul's Eq. 13-14, ``k = 3`` target neighbours, ``mu = 0.5``, certified
over every impostor triplet) learned on the training images:

* ``LMNN (pixels)``: LMNN on the 64 pixels, then LMNN's classifier, the
  3-NN rule under its metric (the ``k`` of the target neighbours);
  ``LMNN-G (pixels)``: the Gaussian model on the LMNN-transformed pixels
  ``L x``.  The pixels that are constant on the training images are left
  out (``M`` is 0 there: any value is optimal) and the others are solved
  in units of their standard deviation with the target neighbours of the
  Euclidean pixel distance (``M0``): the same problem, better conditioned;
* ``X + LMNN``: LMNN learned in the attribute space ``h = L x`` of method
  ``X`` (RA: the pairwise baseline; QWSL-1; OQWSL-1; Q+Pwise), then 3-NN;
  ``X + LMNN-G``: the Gaussian model on LMNN's ``L h``.  The Gaussian model
  with full covariances is invariant under an invertible ``L`` up to its
  small ridge, so ``X + LMNN-G`` differs from ``X`` only where LMNN's ``M``
  is (near) singular.

Settings (the columns): ``clean`` (``tau = 0.25``, all class pairs),
``B=5`` (five class pairs per attribute, drawn per seed), ``noisy``
(imprecise annotation: each seed perturbs the class means by
``sigma = 0.5`` pooled standard deviations before ranking them, and
``tau = 1`` declares ties between classes that differ).

    python examples/qwise_attributes.py          # N = 20, 3 seeds
    python examples/qwise_attributes.py --full   # N = 30, 10 seeds, B sweep
    python examples/qwise_attributes.py --quick  # 1 seed, no LMNN, B = 1, 5, 20 (seconds)
    python examples/qwise_attributes.py --json out.json
    python examples/qwise_attributes.py --seeds 2 --first-seed 4 --json s4.json
    python examples/qwise_attributes.py --merge s0.json s2.json s4.json

``--first-seed`` and ``--merge`` split the seeds over processes and print
the tables of their ``--json`` files together.

``--full`` (or ``--sweep``) also sweeps ``B`` on the clean and noisy
annotations (Fig. 11).  The figures, shown by default (``--no-figures``:
the tables only, without matplotlib): the table as bars and, with the
sweep, Fig. 11; ``--figures DIR`` writes them to
DIR/qwise_attributes_table.png and DIR/qwise_attributes.png (the
documentation's Fig. 11: ``--sweep --figures docs/img``).  ``--quick``
(the gallery's run, about 15 s): one seed, no LMNN rows, the B sweep at
B = 1, 5 and 20.  BLAS runs
single-threaded (``--threads``).  Durations on the
2-core development machine next to other jobs: the default run 74 s of
CPU (365 s of wall time under a load of 12-15; without the LMNN rows,
``--no-lmnn``, 15-25 s), ``--seeds 10 --n-train 30`` (the table of
``--full``) as five processes of two seeds 1 013-1 163 s each under a load
of 10-19 (without the LMNN rows 181 s in one process), ``--sweep`` (the B
sweep at the default N = 20, 3 seeds, no LMNN) 68 s; ``--full`` runs both
at N = 30 with 10 seeds.
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits
from sklearn.metrics import balanced_accuracy_score
from sklearn.neighbors import KNeighborsClassifier
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from cvxmetric import LMNN
from cvxmetric.constraints import informative
from cvxmetric.experiments._figures import (
    add_figure_options,
    bar_style,
    finish,
    pyplot,
    require_matplotlib,
    style,
)
from cvxmetric.experiments.qwise.attributes import (
    AttributeGaussianClassifier,
    AttributeOrdering,
    oqwsl_constraints,
    pairwise_constraints,
    qwsl_constraints,
    usable_class_pairs,
)
from cvxmetric.qwise_vector.estimator import QwiseVector

SAMPLERS = {"pairwise": pairwise_constraints, "qwsl": qwsl_constraints,
            "oqwsl": oqwsl_constraints}

#: name -> (method, the sampler's keyword arguments)
METHODS = {
    "pairwise (RA baseline)": ("pairwise", {}),
    "pairwise, no ~": ("pairwise", {"equivalences": False}),
    "QWSL-1": ("qwsl", {"p": 1}),
    "QWSL-2": ("qwsl", {"p": 2}),
    "OQWSL-1": ("oqwsl", {"p": 1}),
    "OQWSL-2": ("oqwsl", {"p": 2}),
    "OQWSL-1 + border pairs": ("oqwsl", {"p": 1, "border_pairs": True}),
}

#: LMNN's target neighbours, and the k of its k-NN classifier
LMNN_K = 3

#: Table 8's name -> the method whose attribute space LMNN is learned in
LMNN_BASES = {
    "RA": "pairwise (RA baseline)",
    "QWSL-1": "QWSL-1",
    "OQWSL-1": "OQWSL-1",
    "Q+Pwise": "OQWSL-1 + border pairs",
}

#: the rows LMNN adds to the table
LMNN_ROWS = (("LMNN (pixels)", "LMNN-G (pixels)")
             + tuple(f"{b} + LMNN{g}" for b in LMNN_BASES for g in ("", "-G")))

#: ``--quick``'s B sweep
QUICK_BS = (1, 5, 20)

#: setting -> (tau, sigma, B)
SETTINGS = {
    "clean": (0.25, 0.0, None),
    "B=5": (0.25, 0.0, 5),
    "noisy": (1.0, 0.5, None),
}


def digit_measures(X):
    """The four per-image attribute measures of the module docstring."""
    img = X.reshape(-1, 8, 8)
    r = np.arange(8.0)
    ink = img.sum(axis=(1, 2))
    cols, rows = img.sum(axis=1), img.sum(axis=2)
    cm, rm = cols @ r / ink, rows @ r / ink
    width = np.sqrt(np.maximum(cols @ r**2 / ink - cm**2, 0.0))
    height = np.sqrt(np.maximum(rows @ r**2 / ink - rm**2, 0.0))
    R, C = np.meshgrid(r, r, indexing="ij")
    cov = np.einsum("nij,nij->n", img, (R[None] - rm[:, None, None])
                    * (C[None] - cm[:, None, None])) / ink
    slant = -cov / np.maximum(width * height, 1e-12)
    return {"width": width, "height": height, "low": rm, "slant": slant}


def class_ordering(values, y, tau, sigma=0.0, random_state=None):
    """Rank the classes by their mean ``values`` (perturbed by ``sigma``
    pooled within-class standard deviations); ties within ``tau`` of a
    level's first class."""
    classes = np.unique(y)
    means = np.array([values[y == c].mean() for c in classes])
    s = np.sqrt(np.mean([values[y == c].var() for c in classes]))
    if sigma:
        means = means + sigma * s * check_random_state(random_state).randn(len(means))
    order = np.argsort(means, kind="stable")
    levels, first = [[order[0]]], means[order[0]]
    for c in order[1:]:
        if means[c] - first < tau * s:
            levels[-1].append(c)
        else:
            levels.append([c])
            first = means[c]
    return AttributeOrdering([tuple(int(classes[c]) for c in g) for g in levels])


def fit_L(X, y, orderings, method, kwargs, B, C_q, rng):
    """One row of L per attribute; ``B`` capped per attribute at the class
    pairs the method can use.  None when an attribute has none."""
    quads, deltas = {}, {}
    for name, o in orderings.items():
        n_usable = len(usable_class_pairs(o, method, **kwargs))
        if n_usable == 0:
            return None
        b = None if B is None else min(B, n_usable)
        idx, delta = SAMPLERS[method](y, o, n_class_pairs=b, random_state=rng, **kwargs)
        keep = informative(X, idx)
        quads[name], deltas[name] = idx[keep], delta[keep]
    est = QwiseVector(psi="linear", C_q=C_q, C_p=0.0, loss="huber", solver="newton",
                      preprocessor=X)
    return est.fit(quads, delta=deltas)


def split(y, n_train, rng):
    tr = np.concatenate([rng.choice(np.flatnonzero(y == c), n_train, replace=False)
                         for c in np.unique(y)])
    te = np.setdiff1d(np.arange(len(y)), tr)
    return tr, te


def lmnn_scores(Htr, ytr, Hte, yte, M0=None):
    """LMNN learned on ``(Htr, ytr)``: the mean per-class accuracy of its
    3-NN rule and of the Gaussian model on ``L h`` (LMNN, LMNN-G)."""
    est = LMNN(k=LMNN_K, mu=0.5, M0=M0).fit(Htr, ytr)
    Ltr, Lte = est.transform(Htr), est.transform(Hte)
    knn = KNeighborsClassifier(LMNN_K).fit(Ltr, ytr).predict(Lte)
    gauss = AttributeGaussianClassifier().fit(Ltr, ytr).predict(Lte)
    return balanced_accuracy_score(yte, knn), balanced_accuracy_score(yte, gauss)


def lmnn_pixels(Xtr, ytr, Xte, yte):
    """LMNN on the pixels (module docstring): the constant training pixels
    left out, the others in units of their standard deviation, the target
    neighbours those of the Euclidean pixel distance."""
    keep = np.std(Xtr, axis=0) > 0
    s = np.std(Xtr[:, keep], axis=0)
    return lmnn_scores(Xtr[:, keep] / s, ytr, Xte[:, keep] / s, yte, M0=np.diag(s ** 2))


def run_setting(X, y, measures, tau, sigma, B, methods, seeds, n_train, C_q,
                lmnn=False, cache=None):
    """Accuracies (n_seeds,) per method (NaN where a method has no usable pair);
    with ``lmnn``, also the rows of :data:`LMNN_ROWS` (the pixel rows cached
    in ``cache`` by training split: they do not depend on the orderings)."""
    rows = list(methods) + (list(LMNN_ROWS) if lmnn else [])
    acc = {m: [] for m in rows}
    cache = {} if cache is None else cache
    for seed in seeds:
        rng = np.random.RandomState(seed)
        orderings = {k: class_ordering(v, y, tau, sigma, rng) for k, v in measures.items()}
        tr, te = split(y, n_train, rng)
        H = {}
        for m in methods:
            method, kwargs = METHODS[m]
            est = fit_L(X[tr], y[tr], orderings, method, kwargs, B, C_q,
                        np.random.RandomState([seed, 1]))
            if est is None:
                acc[m].append(np.nan)
                continue
            H[m] = est.transform(X[tr]), est.transform(X[te])
            g = AttributeGaussianClassifier().fit(H[m][0], y[tr])
            acc[m].append(balanced_accuracy_score(y[te], g.predict(H[m][1])))
        if not lmnn:
            continue
        key = tr.tobytes()
        if key not in cache:
            cache[key] = lmnn_pixels(X[tr], y[tr], X[te], y[te])
        for row, v in zip(LMNN_ROWS[:2], cache[key]):
            acc[row].append(v)
        for name, base in LMNN_BASES.items():
            scores = ((np.nan, np.nan) if base not in H else
                      lmnn_scores(H[base][0], y[tr], H[base][1], y[te]))
            acc[f"{name} + LMNN"].append(scores[0])
            acc[f"{name} + LMNN-G"].append(scores[1])
    return {m: np.array(v) for m, v in acc.items()}


def _cell(v):
    ok = ~np.isnan(v)
    if not np.any(ok):
        return "n/a"
    cell = f"{100 * np.mean(v[ok]):.1f} +- {100 * np.std(v[ok]):.1f}"
    return cell if np.all(ok) else f"{cell} ({int(ok.sum())}/{len(v)})"


def print_table(results, settings):
    head = f"{'method':24s}" + "".join(f"{s:>20s}" for s in settings)
    print("Gaussian-model accuracy (%), mean +- std over seeds (rows with LMNN: "
          f"its {LMNN_K}-NN rule, LMNN-G: the Gaussian model on LMNN's L h)")
    print(head)
    print("-" * len(head))
    for m in next(iter(results.values())):
        print(f"{m:24s}" + "".join(f"{_cell(results[s][m]):>20s}" for s in settings))
    print("n/a: some attribute leaves the method no usable class pair (every pair "
          "touches a border level);\n(k/n): the mean over the k seeds where it had one.")


def print_paired(results, settings, pairs, title):
    """Per-seed differences ``row - reference`` for each ``(row, reference)``
    of ``pairs`` (same split, same orderings)."""
    print(f"\npaired difference {title} (points; mean +- std, seeds won)")
    for m, ref in pairs:
        cells = []
        for s in settings:
            d = 100 * (results[s][m] - results[s][ref])
            ok = ~np.isnan(d)
            cells.append("n/a" if not np.any(ok) else
                         f"{np.mean(d[ok]):+.1f} +- {np.std(d[ok]):.1f} "
                         f"{int(np.sum(d[ok] > 0))}/{int(ok.sum())}")
        print(f"{m:24s}" + "".join(f"{c:>20s}" for c in cells))


def paired_tables(results, settings, baseline="pairwise (RA baseline)"):
    """Every row against the baseline; with the LMNN rows, each ``X + LMNN``
    against its base ``X`` and against ``RA + LMNN``."""
    rows = list(next(iter(results.values())))
    print_paired(results, settings, [(m, baseline) for m in rows if m != baseline],
                 f"to the {baseline}")
    if LMNN_ROWS[0] not in rows:
        return
    print_paired(results, settings,
                 [(f"{b} + LMNN{g}", base) for b, base in LMNN_BASES.items()
                  for g in ("", "-G")], "of X + LMNN to X")
    print_paired(results, settings,
                 [(f"{b} + LMNN", "RA + LMNN") for b in LMNN_BASES if b != "RA"],
                 "to RA + LMNN")


def plot_sweep(sweep, Bs):
    """Fig. 11: accuracy against B, one panel per annotation."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(sweep), figsize=(5.5 * len(sweep), 4), sharey=True)
    for ax, (setting, res) in zip(np.atleast_1d(axes), sweep.items()):
        for i, (m, curve) in enumerate(res.items()):
            if all(np.all(np.isnan(curve[b])) for b in Bs):
                continue  # no usable class pair in these orderings
            mean = [100 * np.nanmean(curve[b]) for b in Bs]
            std = [100 * np.nanstd(curve[b]) for b in Bs]
            ax.errorbar(Bs, mean, yerr=std, capsize=2, label=m, **style(i))
        ax.set_xlabel("B (class pairs per attribute)")
        ax.set_xlim(0, Bs[-1] + 2)
        ax.set_xticks(Bs)
        ax.set_title(f"{setting} orderings")
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].set_ylim(0, 100)
    np.atleast_1d(axes)[0].set_ylabel("mean per-class accuracy (%)")
    np.atleast_1d(axes)[0].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def plot_table(results, n_train, n_seeds):
    """The table: each method's accuracy in each setting (bars from 0)."""
    plt = pyplot()
    settings = list(results)
    rows = list(next(iter(results.values())))
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) + 2.0))
    width = 0.8 / len(settings)
    for i, s in enumerate(settings):
        means = [100 * np.nanmean(results[s][m]) if np.any(~np.isnan(results[s][m]))
                 else 0.0 for m in rows]
        ax.barh(np.arange(len(rows)) + (i - (len(settings) - 1) / 2) * width, means,
                width, label={"B=5": "clean orderings, B = 5"}.get(s, f"{s} orderings"),
                **bar_style(i))
    ax.set_yticks(np.arange(len(rows)))
    ax.set_yticklabels(rows, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("mean per-class accuracy on the test images (%; 0: no usable "
                  "class pair)")
    ax.set_title(f"Relative attributes on the digits: N = {n_train}, {n_seeds} seed(s)")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3)
    ax.grid(alpha=0.3, axis="x")
    fig.tight_layout()
    return fig


def run_sweep(X, y, measures, seeds, n_train, C_q, Bs=(1, 3, 5, 10, 20, 45)):
    """The B sweep on the clean and noisy orderings (Fig. 11)."""
    Bs = list(Bs)
    chosen = ["pairwise (RA baseline)", "QWSL-1", "QWSL-2", "OQWSL-1", "OQWSL-2"]
    sweep = {}
    for setting in ("clean", "noisy"):
        tau, sigma, _ = SETTINGS[setting]
        per_b = {b: run_setting(X, y, measures, tau, sigma, b, chosen, seeds,
                                n_train, C_q) for b in Bs}
        sweep[setting] = {m: {b: per_b[b][m] for b in Bs} for m in chosen}
        print(f"\nB sweep, {setting} orderings (B capped at the usable pairs)")
        print(f"{'method':24s}" + "".join(f"{b:>8d}" for b in Bs))
        for m in chosen:
            print(f"{m:24s}" + "".join(
                f"{100 * np.nanmean(sweep[setting][m][b]):8.1f}"
                if not np.all(np.isnan(sweep[setting][m][b])) else f"{'n/a':>8s}"
                for b in Bs))
    return sweep, Bs


def merge(paths):
    """The table and paired differences of the per-seed results of several
    ``--json`` runs (each over its own seeds, same settings)."""
    runs = [json.loads(Path(p).read_text()) for p in paths]
    seeds = [s for r in runs for s in r["seeds"]]
    if len(set(seeds)) != len(seeds) or len({r["n_train"] for r in runs}) != 1:
        raise SystemExit("--merge: the runs must share N and have distinct seeds")
    settings = list(runs[0]["table"])
    results = {s: {m: np.concatenate([np.asarray(r["table"][s][m], float) for r in runs])
                   for m in runs[0]["table"][s]} for s in settings}
    print(f"N = {runs[0]['n_train']} training images per class, {len(seeds)} seeds "
          f"({min(seeds)}-{max(seeds)}), C_q = {runs[0]['C_q']}")
    print_table(results, settings)
    paired_tables(results, settings)
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true",
                        help="N = 30, 10 seeds, and the B sweep")
    parser.add_argument("--quick", action="store_true",
                        help="1 seed, no LMNN rows, the B sweep at B = 1, 5, 20 "
                             "(the gallery; seconds)")
    parser.add_argument("--sweep", action="store_true",
                        help="also the B sweep (Fig. 11) and its figure")
    parser.add_argument("--n-train", type=int, default=None,
                        help="training images per class (default 20; --full 30)")
    parser.add_argument("--seeds", type=int, default=None,
                        help="random splits (default 3; --full 10; --quick 1)")
    parser.add_argument("--first-seed", type=int, default=0,
                        help="the first split's seed (runs of several processes)")
    parser.add_argument("--merge", nargs="+", default=None, metavar="JSON",
                        help="print the tables of the per-seed results of "
                             "earlier --json runs (other seeds), run nothing")
    parser.add_argument("--C-q", type=float, default=0.01, help="quadruplet weight")
    parser.add_argument("--no-lmnn", action="store_true",
                        help="leave out Table 8's LMNN rows")
    parser.add_argument("--json", default=None, metavar="PATH")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads (0: the library default)")
    add_figure_options(parser)
    args = parser.parse_args(argv)
    if args.quick and args.full:
        parser.error("--quick and --full exclude each other")
    n_train = args.n_train or (30 if args.full else 20)
    if args.merge:
        return merge(args.merge)
    require_matplotlib(args, "qwise_attributes.py")
    n_seeds = args.seeds or (10 if args.full else 1 if args.quick else 3)
    seeds = list(range(args.first_seed, args.first_seed + n_seeds))
    lmnn = not (args.no_lmnn or args.quick)
    X, y = load_digits(return_X_y=True)
    measures = digit_measures(X)
    X = X / 16.0
    t0 = time.perf_counter()
    with threadpool_limits(limits=args.threads or None, user_api="blas"):
        print("class orderings (clean annotation, tau = 0.25):")
        for k, v in measures.items():
            print(f"  {k:7s} {class_ordering(v, y, 0.25)}")
        cache = {}
        results = {s: run_setting(X, y, measures, tau, sigma, B, list(METHODS), seeds,
                                  n_train, args.C_q, lmnn=lmnn, cache=cache)
                   for s, (tau, sigma, B) in SETTINGS.items()}
        print(f"\nN = {n_train} training images per class, {len(seeds)} seeds, "
              f"C_q = {args.C_q}" + ("" if lmnn else ", no LMNN rows"))
        print_table(results, list(SETTINGS))
        paired_tables(results, list(SETTINGS))
        sweep, Bs = (run_sweep(X, y, measures, seeds, n_train, args.C_q,
                               **({"Bs": QUICK_BS} if args.quick else {}))
                     if args.full or args.sweep or args.quick else (None, None))
    print(f"\n{time.perf_counter() - t0:.1f} s")
    if not args.no_figures:
        figs = {"qwise_attributes_table": plot_table(results, n_train, len(seeds))}
        if sweep is not None:
            figs["qwise_attributes"] = plot_sweep(sweep, Bs)
        finish(figs, args)
    if args.json:
        out = {"n_train": n_train, "seeds": seeds, "C_q": args.C_q,
               "table": {s: {m: v.tolist() for m, v in r.items()}
                         for s, r in results.items()}}
        if sweep is not None:
            out["sweep"] = {s: {m: {str(b): v.tolist() for b, v in c.items()}
                                for m, c in r.items()} for s, r in sweep.items()}
        Path(args.json).write_text(json.dumps(out, indent=1))
    return results


if __name__ == "__main__":
    main()

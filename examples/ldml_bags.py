"""LDML, MildML and LDML* on labelled bags of "people": the paper's Fig. 4, Table 1, Fig. 5.

Guillaumin, Verbeek, Schmid, "Multiple instance metric learning from
automatically labeled bags of faces" (ECCV 2010), Sec. 4, on
:func:`cvxmetric.ldml.digit_people_bags` instead of Labeled Yahoo! News:
each "person" is one digit image and each instance a "photo" of it
(shifted by up to a pixel, contrast-scaled, with pixel noise: a nuisance
shared by all people, like pose and lighting).  A document is a bag of
1-``max_bag`` photos of distinct people, its caption the set of their
names.  Two sets A and B of ``--people`` people each, with no person in
common, in the three annotation settings of Sec. 4.1: (a) instance labels,
(b) correct bag captions, (c) noisy captions (each true name missing with
probability 0.1, a spurious name added with probability 0.2).

The paper's protocol.  Train on set A, test on pairs of set B, and the
other way round; the mAP is the mean of the two directions.  Verification
(Fig. 4, Table 1): up to ``--pairs`` test pairs per set, half positive
(:func:`cvxmetric.experiments.ldml.evaluation.verification_pairs`; the paper takes
20 000, here capped by the number of same-person pairs), scored by the
average precision at ten recall values
(:func:`cvxmetric.experiments.ldml.evaluation.average_precision_10`), averaged over
``--seeds`` seeds (data, pairs and random starts).

Metrics (rank ``d`` = ``n_components``; ``lam = 0``: the low-rank
gradient method stopped at ``--max-iter`` iterations, one random start):

* L2 (the 64 pixels), PCA (fit on the training set);
* LDML (a): :class:`cvxmetric.LDMLSupervised` on the instance labels;
* LDML (b), (c): :class:`cvxmetric.LDMLStar` with ``n_rounds=1`` -- names
  from one constrained clustering in the L2 metric, then LDML (the "LDML"
  rows of Table 1);
* LDML* (b), (c): the same with up to ``--rounds`` rounds of relabelling
  in the learned metric (fewer when the labels stop changing);
* MildML (b), (c): :class:`cvxmetric.MildML` on the bags.

The iteration budget is the same for every method.  With ``lam = 0`` the
likelihood of the training pairs keeps improving as the metric grows, and
the metric transfers worse to the other set's people after many
iterations: the budget acts as the regulariser (``--max-iter``; the
documentation shows its effect).

Naming (Fig. 5): the test set's bags with their noisy captions are named
by the constrained clustering of Sec. 2.3 in the PCA, LDML (a) and
MildML (c) metrics of rank ``--naming-rank`` learned on the other set, at
thresholds ``b`` found by a dichotomic search
(:func:`cvxmetric.experiments.ldml.evaluation.naming_curve`); precision against the
number of named photos (first seed).

    python examples/ldml_bags.py                 # 120 people, ranks 4, 16, 1 seed (~25 s)
    python examples/ldml_bags.py --full          # 300 people, ranks 2-32, 2 seeds
    python examples/ldml_bags.py --data digits   # the same protocol on digit classes
    python examples/ldml_bags.py --json out.json # also the numbers as JSON

``--data digits`` runs the protocol on :func:`cvxmetric.ldml.digits_bags`
instead (A: digits 0-4, B: digits 5-9, ``--per-class`` digits per class,
bags of 1-3): there a metric learned on five digit classes ranks pairs of
the five others worse than L2.

The two figures, Fig. 4 with Table 1 (mAP against the rank) and Fig. 5
(naming), are shown by default (``--no-figures``: the tables only,
without matplotlib); ``--figures DIR`` writes them to
DIR/ldml_map_rank.png and DIR/ldml_naming.png (the documentation's
copies: ``--replot full.json --figures docs/img`` from a ``--full --json
full.json`` run).  ``--quick`` (the gallery's run, about 10 s): 60 people
per set, ranks 2, 4, 8, 16, 8-point naming curves.
``--replot PATH`` prints the tables and draws the figures of a file written
by ``--json``, without fitting anything.  BLAS runs single-threaded
(``--threads``).  Durations measured on the 2-core development machine
next to other jobs: the default run 21-25 s, ``--full`` 28 minutes (1 700 s,
of which 1 490 s of fits and about 3 minutes of naming curves).
"""

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from cvxmetric import LDMLStar, LDMLSupervised, MildML
from cvxmetric.experiments._figures import (
    add_figure_options,
    finish,
    parse_example_args,
    pyplot,
    style,
)
from cvxmetric.experiments.ldml.evaluation import (
    naming_curve,
    verification_ap,
    verification_pairs,
)
from cvxmetric.ldml import digit_people_bags, digits_bags

SETTINGS = {"a": "instances", "b": "bags", "c": "noisy"}
#: Row order of the Fig. 4 table (LDML (b)/(c): one Euclidean clustering).
FIG4_ROWS = ("L2", "PCA", "LDML (a)", "LDML (b)", "MildML (b)", "LDML (c)",
             "MildML (c)")
TABLE1_ROWS = ("LDML (b)", "LDML* (b)", "LDML (c)", "LDML* (c)")
NAMING_ROWS = ("PCA", "LDML (a)", "MildML (c)")


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------

def load_sets(args, seed):
    """``{setting letter: (A, B)}``.  Each set has its own random stream,
    so a set is the same photos in every setting (and the same bags in (b)
    and (c)): only the captions differ."""
    out = {}
    for key, setting in SETTINGS.items():
        if args.data == "people":
            out[key] = digit_people_bags(setting, n_people=args.people,
                                         max_bag=args.max_bag, random_state=seed)
        else:
            out[key] = digits_bags(setting, n_per_class=args.per_class,
                                   max_bag=args.max_bag, random_state=seed)
    for k in range(2):
        for key in "ac":
            assert np.array_equal(out[key][k].X, out["b"][k].X)
    return out


def max_pairs(y):
    """Twice the smaller count of distinct positive and negative pairs."""
    counts = np.unique(y, return_counts=True)[1]
    pos = int(np.sum(counts * (counts - 1) // 2))
    neg = len(y) * (len(y) - 1) // 2 - pos
    return 2 * min(pos, neg)


# ---------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------

def learners(args, rank, seed):
    """name -> function(train sets) -> (fitted model or None, embedding function)."""
    common = dict(n_components=rank, lam=args.lam, max_iter=args.max_iter,
                  n_init=args.n_init, random_state=seed)

    def pca(train):
        model = PCA(n_components=rank, random_state=seed).fit(train["a"].X)
        return model, model.transform

    def ldml_a(train):
        S = train["a"]
        model = LDMLSupervised(**common).fit(S.X, S.y)
        return model, model.transform

    def bags(cls, key, **kw):
        def fit(train):
            S = train[key]
            model = cls(preprocessor=S.X, **common, **kw).fit(S.bags, S.captions)
            return model, model.transform
        return fit

    out = {"PCA": pca, "LDML (a)": ldml_a}
    for key in "bc":
        out[f"LDML ({key})"] = bags(LDMLStar, key, n_rounds=1)
        out[f"MildML ({key})"] = bags(MildML, key)
        out[f"LDML* ({key})"] = bags(LDMLStar, key, n_rounds=args.rounds)
    return out


def label_accuracy(model, S):
    """Fraction of the training photos that LDMLStar's last clustering
    named correctly (unnamed ones count as wrong)."""
    lab = model.labels_
    named = lab >= 0
    pred = np.full(lab.shape, -1, dtype=np.int64)
    pred[named] = np.asarray(model.classes_seen_)[lab[named]]
    return float(np.mean(pred == S.y))


def run_seed(args, seed):
    """One seed: the mAP of every method at every rank, the LDMLStar
    diagnostics, fit times, and (at the naming rank) the test embeddings."""
    sets = load_sets(args, seed)
    tasks = []  # (train sets, test set with noisy captions, test pairs)
    rng = np.random.RandomState(seed)
    for k in range(2):  # train on set k, test on the other one
        train = {key: sets[key][k] for key in SETTINGS}
        test = sets["c"][1 - k]
        n = min(args.pairs, max_pairs(test.y))
        tasks.append((train, test, verification_pairs(test.y, n, random_state=rng)))
    sizes = [{"train_instances": int(len(tr["a"].y)), "train_bags": int(len(tr["b"].bags)),
              "train_classes": int(np.unique(tr["a"].y).size),
              "test_instances": int(len(te.y)), "test_pairs": int(len(p[0]))}
             for tr, te, p in tasks]
    res = {"L2": [float(np.mean([verification_ap(te.X, *p) for _, te, p in tasks]))]
           * len(args.ranks)}
    seconds, diag, embed = {}, {}, {}
    for rank in args.ranks:
        for name, fit in learners(args, rank, seed).items():
            aps = []
            for k, (train, test, p) in enumerate(tasks):
                t0 = time.perf_counter()
                model, transform = fit(train)
                seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - t0
                Z = transform(test.X)
                aps.append(verification_ap(Z, *p))
                if isinstance(model, LDMLStar):
                    d = diag.setdefault(name, {"rounds": [], "label_accuracy": []})
                    d["rounds"].append(int(model.n_rounds_))
                    d["label_accuracy"].append(label_accuracy(model, train[name[-2]]))
                if rank == args.naming_rank and name in NAMING_ROWS:
                    embed[(k, name)] = Z
            res.setdefault(name, []).append(float(np.mean(aps)))
    return res, seconds, diag, sizes, tasks, embed


def naming(args, tasks, embed):
    """Fig. 5: the naming curves of each test set, metrics learned on the
    other set; ``[curves of set A, curves of set B]``."""
    out = [None, None]
    for k, (_, test, _) in enumerate(tasks):
        curves = {}
        for name in NAMING_ROWS:
            c = naming_curve(embed[(k, name)], test.bags, test.captions, test.y,
                             n_points=args.naming_points,
                             max_evals=3 * args.naming_points)
            curves[name] = {"n_named": c.n_named.tolist(),
                            "precision": c.precision.tolist(),
                            "b": c.b.tolist(), "n_nameable": c.n_nameable,
                            "n_instances": int(len(test.y)),
                            "n_people": int(np.unique(test.y).size),
                            "n_names": int(np.unique(np.concatenate(
                                [np.asarray(c, dtype=int) for c in test.captions])).size)}
        out[1 - k] = curves  # task k trains on set k and names the other set
    return out


# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------

def markdown_table(headers, rows):
    lines = ["| " + " | ".join(headers) + " |",
             "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _cells(values, std=None):
    if std is None:
        return [f"{100 * v:.1f}" for v in values]
    return [f"{100 * v:.1f} ± {100 * s:.1f}" for v, s in zip(values, std)]


def print_tables(args, res):
    ranks = [f"d={d}" for d in args.ranks]
    show_std = len(args.seed_list) > 1
    note = (f"train on one set, test on the other's pairs; mean over "
            f"{len(args.seed_list)} seed(s)" + (" ± std" if show_std else ""))

    def rows(names):
        return [[n] + _cells(res["map"][n], res["std"][n] if show_std else None)
                for n in names]

    print(f"\n### Fig. 4: verification mAP (%) against the rank\n\n{note}\n")
    print(markdown_table(["metric"] + ranks, rows(FIG4_ROWS)))
    print(f"\n### Table 1: LDML (one Euclidean clustering) against LDML* "
          f"(up to {args.rounds} rounds), mAP (%)\n")
    print(markdown_table(["metric"] + ranks, rows(TABLE1_ROWS)))
    print("\nLDMLStar: rounds fitted and training photos correctly named by its "
          "last clustering (mean over ranks, directions, seeds)")
    print(markdown_table(["metric", "rounds", "correctly named (%)"], [
        [n, f"{np.mean(d['rounds']):.1f}", f"{100 * np.mean(d['label_accuracy']):.1f}"]
        for n, d in res["ldmlstar"].items()]))
    print("\nfit seconds (all ranks, both directions, all seeds): "
          + ", ".join(f"{k} {v:.1f}" for k, v in res["seconds"].items()))


def print_naming(args, curves):
    print(f"\n### Fig. 5: naming precision (%) of one set's photos, noisy captions, "
          f"metrics of rank {args.naming_rank} learned on the other set\n")
    fracs = (0.25, 0.5, 0.75, 1.0)
    rows = []
    for name_set, cset in zip("AB", curves):
        n_nameable = next(iter(cset.values()))["n_nameable"]
        for name, c in cset.items():
            k, p = np.asarray(c["n_named"]), np.asarray(c["precision"])
            cells = []
            for f in fracs:
                # the point whose count is closest to f * nameable
                i = int(np.argmin(np.abs(k - f * n_nameable))) if k.size else None
                cells.append("-" if i is None else f"{100 * p[i]:.1f} ({k[i]})")
            best = (f"{100 * np.max(p):.1f} ({k[int(np.argmax(p))]})" if k.size else "-")
            rows.append([f"{name_set} ({n_nameable})", name] + cells + [best])
    print(markdown_table(["named set (nameable)", "metric"]
                         + [f"~{int(100 * f)}% named (n)" for f in fracs]
                         + ["best (n)"], rows))


#: each verification row its own colour, marker and line style
STYLE = {name: style(i) for i, name in enumerate(
    ("L2", "PCA", "LDML (a)", "LDML (b)", "MildML (b)", "LDML (c)", "MildML (c)",
     "LDML* (b)", "LDML* (c)"))}


def figures(args, res, curves):
    """Fig. 4 and Table 1 (mAP against the rank); Fig. 5 (naming)."""
    plt = pyplot()
    what = "people" if args.data == "people" else "digit classes"
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    for ax, names, title in ((axes[0], FIG4_ROWS, "Fig. 4: L2, PCA, LDML, MildML"),
                             (axes[1], ("L2", "LDML (a)") + TABLE1_ROWS,
                              "Table 1: LDML against LDML*")):
        for name in names:
            m = 100 * np.asarray(res["map"][name])
            ax.plot(args.ranks, m, ms=5, lw=1.6, label=name, **STYLE[name])
            if len(args.seed_list) > 1:
                s = 100 * np.asarray(res["std"][name])
                ax.fill_between(args.ranks, m - s, m + s, color=STYLE[name]["color"],
                                alpha=0.08, lw=0)
        ax.set_xscale("log", base=2)
        ax.set_xticks(args.ranks)
        ax.set_xticklabels([str(d) for d in args.ranks])
        ax.set_xlabel("metric rank d (log scale)")
        ax.set_ylabel("verification mAP (%)")
        ax.set_ylim(0, 100)
        ax.set_title(f"{title} (train on A, test on B and back; {what})", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, ncol=2, loc="lower right")
    fig.tight_layout()

    fig_naming, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for ax, name_set, cset in zip(axes, "AB", curves):
        other = "B" if name_set == "A" else "A"
        for i, (name, c) in enumerate(cset.items()):
            # points in order of the count (the count need not grow with b)
            order = np.argsort(c["n_named"], kind="stable")
            ax.plot(np.asarray(c["n_named"])[order],
                    100 * np.asarray(c["precision"])[order], ms=4, label=name,
                    **style(i))
        ax.set_ylim(0, 100)
        ax.set_xlim(0, None)
        # Eq. 11 gives a lone member of a class the gain b > 0: at any b > 0
        # every name of the captions keeps at least one photo
        ax.axvline(c["n_names"], color="0.6", lw=0.8, ls=":")
        ax.text(c["n_names"], 2, " about one photo per caption name", fontsize=7,
                color="0.4", rotation=90, va="bottom", ha="right")
        ax.set_xlabel(f"number of named photos (of {c['n_nameable']} nameable)")
        ax.set_ylabel("precision (%)")
        ax.set_title(f"({'ab'[name_set == 'B']}) naming set {name_set}, metrics "
                     f"learned on set {other}, d = {args.naming_rank}", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower left")
    fig_naming.tight_layout()
    return {"ldml_map_rank": fig, "ldml_naming": fig_naming}


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true",
                        help="300 people per set, ranks 2-32, 2 seeds, 50 iterations, "
                             "LDML* up to 5 rounds, 40-point naming curves")
    parser.add_argument("--data", choices=("people", "digits"), default="people",
                        help="people: digit_people_bags (default); digits: digits_bags, "
                             "A = digits 0-4, B = digits 5-9")
    parser.add_argument("--people", type=int, default=None,
                        help="people per set (default 120; --full 300)")
    parser.add_argument("--per-class", type=int, default=90,
                        help="--data digits: digits per class (default 90)")
    parser.add_argument("--max-bag", type=int, default=None,
                        help="bags hold 1..max_bag photos (default 4; digits 3)")
    parser.add_argument("--ranks", type=lambda s: [int(v) for v in s.split(",")],
                        default=None, help="comma-separated (default 4,16; --full "
                                           "2,4,8,16,32)")
    parser.add_argument("--seeds", type=int, default=None,
                        help="number of seeds (default 1; --full 2)")
    parser.add_argument("--seed", type=int, default=0, help="first seed")
    parser.add_argument("--pairs", type=int, default=20000,
                        help="most test pairs per set (default 20000, as the paper; "
                             "capped at twice the same-person pairs)")
    parser.add_argument("--lam", type=float, default=0.0)
    parser.add_argument("--max-iter", type=int, default=None,
                        help="iterations of every gradient run (default 20; --full 50)")
    parser.add_argument("--n-init", type=int, default=1, help="random starts per fit")
    parser.add_argument("--rounds", type=int, default=None,
                        help="LDML* rounds at most (default 3; --full 5)")
    parser.add_argument("--naming-rank", type=int, default=None,
                        help="rank of the Fig. 5 metrics (default: the largest rank)")
    parser.add_argument("--naming-points", type=int, default=None,
                        help="points of each naming curve (default 12; --full 40)")
    parser.add_argument("--quick", action="store_true",
                        help="60 people per set, ranks 2-16, 8-point naming curves (the "
                             "gallery)")
    add_figure_options(parser)
    parser.add_argument("--replot", default=None, metavar="PATH",
                        help="print the tables and draw the figures of a --json file "
                             "(no fitting)")
    parser.add_argument("--json", default=None, metavar="PATH",
                        help="write the numbers to this JSON file")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads (0: the library default)")
    args = parse_example_args(parser, argv, "ldml_bags.py")
    if args.replot:
        return _replot(args)
    full = args.full
    args.people = args.people or (300 if full else 60 if args.quick else 120)
    args.max_bag = args.max_bag or (4 if args.data == "people" else 3)
    args.ranks = args.ranks or ([2, 4, 8, 16, 32] if full else [2, 4, 8, 16]
                                if args.quick else [4, 16])
    n_seeds = args.seeds or (2 if full else 1)
    args.seed_list = [args.seed + k for k in range(n_seeds)]
    args.max_iter = args.max_iter or (50 if full else 20)
    args.rounds = args.rounds or (5 if full else 3)
    args.naming_rank = args.naming_rank or max(args.ranks)
    if args.naming_rank not in args.ranks:
        parser.error(f"--naming-rank {args.naming_rank} is not among --ranks {args.ranks}")
    args.naming_points = args.naming_points or (40 if full else 8 if args.quick else 12)
    with threadpool_limits(limits=args.threads or None, user_api="blas"), \
            warnings.catch_warnings():
        # the gradient runs stop at max_iter on purpose (lam = 0: the
        # likelihood of separable training pairs has no maximiser)
        warnings.simplefilter("ignore", ConvergenceWarning)
        return _run(args)


def _run(args):
    t_start = time.perf_counter()
    what = (f"{args.people} people per set, photos in bags of 1-{args.max_bag}"
            if args.data == "people" else
            f"digits 0-4 (A) and 5-9 (B), {args.per_class} per class, bags of "
            f"1-{args.max_bag}")
    print(f"{args.data}: {what}; ranks {args.ranks}; lam = {args.lam}, "
          f"max_iter = {args.max_iter}, n_init = {args.n_init}, LDML* rounds <= "
          f"{args.rounds}; at most {args.pairs} test pairs per set; seeds "
          f"{args.seed_list}")
    per_seed, seconds, diag, curves, sizes = [], {}, {}, None, None
    for seed in args.seed_list:
        res, secs, dg, sz, tasks, embed = run_seed(args, seed)
        per_seed.append(res)
        for k, v in secs.items():
            seconds[k] = seconds.get(k, 0.0) + v
        for k, v in dg.items():
            for field, values in v.items():
                diag.setdefault(k, {}).setdefault(field, []).extend(values)
        if curves is None:
            sizes = sz
            curves = naming(args, tasks, embed)
        print(f"seed {seed} done ({time.perf_counter() - t_start:.0f} s)", flush=True)
    print("sizes (train on A, train on B): " + "; ".join(
        f"{s['train_instances']} instances of {s['train_classes']} classes in "
        f"{s['train_bags']} bags, {s['test_pairs']} test pairs" for s in sizes))

    names = per_seed[0].keys()
    stack = {n: np.array([r[n] for r in per_seed]) for n in names}
    results = {
        "map": {n: stack[n].mean(axis=0).tolist() for n in names},
        "std": {n: stack[n].std(axis=0).tolist() for n in names},
        "per_seed": {n: stack[n].tolist() for n in names},
        "seconds": {n: round(v, 2) for n, v in seconds.items()},
        "ldmlstar": diag,
        "sizes": sizes,
    }
    print_tables(args, results)
    print_naming(args, curves)
    written = [] if args.no_figures else finish(figures(args, results, curves), args)
    total = time.perf_counter() - t_start
    print(f"\ntotal {total:.1f} s")
    if args.json:
        out = {"settings": {k: v for k, v in vars(args).items()
                            if k not in ("json", "figures", "no_figures", "threads",
                                         "quick")},
               "verification": results,
               "naming": {"rank": args.naming_rank, "sets": dict(zip("AB", curves))},
               "figures": written, "seconds": round(total, 1)}
        Path(args.json).write_text(json.dumps(out, indent=1))
        print(f"numbers: {args.json}")
    return 0


def _replot(args):
    """Tables and figures of a saved ``--json`` file."""
    saved = json.loads(Path(args.replot).read_text())
    run = argparse.Namespace(**saved["settings"])
    curves = [saved["naming"]["sets"][k] for k in "AB"]
    print(f"{args.replot}: {run.data}, ranks {run.ranks}, seeds {run.seed_list}, "
          f"max_iter = {run.max_iter}")
    print_tables(run, saved["verification"])
    print_naming(run, curves)
    if not args.no_figures:
        finish(figures(run, saved["verification"], curves), args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

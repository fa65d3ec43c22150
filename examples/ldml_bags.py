"""LDML, MildML and LDML* on labelled bags of digits: the paper's Fig. 4, Table 1, Fig. 5.

Guillaumin, Verbeek, Schmid, "Multiple instance metric learning from
automatically labeled bags of faces" (ECCV 2010), Sec. 4, on bags of
scikit-learn digits instead of Labeled Yahoo! News
(:func:`cvxmetric.ldml.digits_bags`): a document is a bag of 1-``max_bag``
digits of distinct classes, its caption the set of their labels.  Two sets,
A (digits 0-4) and B (digits 5-9), in the three annotation settings of
Sec. 4.1: (a) instance labels, (b) correct bag captions, (c) noisy captions
(each true label missing with probability 0.1, a spurious label added with
probability 0.2).

Metrics compared (rank ``d`` = ``n_components``; ``lam = 0``, the low-rank
gradient method stopped at ``--max-iter`` iterations, one random start):

* L2 (the 64 pixels), PCA (fit on the training part);
* LDML (a): :class:`cvxmetric.LDMLSupervised` on the instance labels;
* LDML (b), (c): :class:`cvxmetric.LDMLStar` with ``n_rounds=1`` -- labels
  from one constrained clustering in the L2 metric, then LDML (the "LDML"
  rows of Table 1);
* LDML* (b), (c): the same with ``n_rounds`` rounds of relabelling
  (``--rounds``);
* MildML (b), (c): :class:`cvxmetric.MildML` on the bags.

Two protocols:

``cross`` (the paper's)
    train on one set, test on the other set's pairs (their classes are
    disjoint), mAP of the two directions.  With only five digit classes to
    learn from, a metric specialises to them and transfers worse to the
    five others than L2 does -- unlike 1000s of people's faces.
``heldout``
    each set's bags are split in two halves; train on one half, test on
    pairs of the other half's digits (the same classes), mAP over the two
    sets.  Here learning pays off, and the weak supervisions can be
    compared.

Verification (Fig. 4, Table 1): ``--pairs`` test pairs per set, half
positive; the average precision at ten evenly spaced recall values
(:func:`cvxmetric.ldml.evaluation.average_precision_10`), averaged over
the two sets and over ``--seeds`` seeds.  Naming (Fig. 5): PCA, LDML (a)
and MildML (c) metrics of rank ``--naming-rank`` learned on the training
part; the held-out bags of the same set, with their noisy captions, are
named by the constrained clustering of Sec. 2.3 at thresholds ``b`` found
by a dichotomic search (:func:`cvxmetric.ldml.evaluation.naming_curve`);
precision against the number of named digits (first seed).

    python examples/ldml_bags.py                 # both protocols, 3 seeds (4 CPU-min)
    python examples/ldml_bags.py --small         # 60 digits per class, 1 seed (20 s)
    python examples/ldml_bags.py --full          # 5 seeds, 3 random starts
    python examples/ldml_bags.py --json out.json # also the numbers as JSON

What to expect.  On these digits the Euclidean constrained clustering
already names the training bags almost perfectly (100 % correct labels
with correct captions, 98 % with noisy ones), so LDML (b), (c) are as good
as LDML (a) and MildML has no labelling errors to avoid: the weakly
supervised metrics come within about 1 point of the supervised one
(heldout), and LDML* stops after one or two rounds because the labels no
longer change.  In the naming curves, thresholds ``b`` well below the
typical squared distance of two digits of a class make the clustering's
first sweep (started, as in the paper, from every instance in every class
of its caption) empty every class; the few digits then named are picked
by ties between equal gains and seed wrong clusters, so the left part of
the curves measures that start, not the metric.

``--figures DIR`` (default ``docs/img``; ``--no-figures`` to skip) writes
DIR/ldml_map_rank.png (Fig. 4) and DIR/ldml_naming.png (Fig. 5); they need
matplotlib (``pip install cvxmetric[plot]``) and are skipped with a note
without it.  BLAS runs single-threaded (``--threads``).  Durations measured
on the 2-core development machine: the default run took 221 s of CPU (7 min
of wall time next to other jobs), ``--small`` 15-20 s.
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
from cvxmetric.ldml import digits_bags
from cvxmetric.ldml.evaluation import (naming_curve, restrict_bags, split_bags,
                                       verification_ap, verification_pairs)

ROOT = Path(__file__).resolve().parents[1]
CLASSES_A, CLASSES_B = (0, 1, 2, 3, 4), (5, 6, 7, 8, 9)
SETTINGS = {"a": "instances", "b": "bags", "c": "noisy"}
#: Row order of the Fig. 4 table (LDML (b)/(c): one Euclidean clustering).
FIG4_ROWS = ("L2", "PCA", "LDML (a)", "LDML (b)", "MildML (b)", "LDML (c)",
             "MildML (c)")
TABLE1_ROWS = ("LDML (b)", "LDML* (b)", "LDML (c)", "LDML* (c)")
NAMING_ROWS = ("PCA", "LDML (a)", "MildML (c)")


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------

def load_sets(seed, n_per_class, max_bag):
    """``{setting letter: (A, B)}``.  Each set comes first out of its own
    call of :func:`digits_bags`, so the settings (b) and (c) of a set share
    its bags (and (a) its digits): only the captions differ."""
    out = {}
    for key, setting in SETTINGS.items():
        kw = dict(n_per_class=n_per_class, max_bag=max_bag, random_state=seed)
        A = digits_bags(setting, classes_A=CLASSES_A, classes_B=CLASSES_B, **kw)[0]
        B = digits_bags(setting, classes_A=CLASSES_B, classes_B=CLASSES_A, **kw)[0]
        out[key] = (A, B)
    for k in range(2):
        for key in "ac":
            assert np.array_equal(out[key][k].X, out["b"][k].X)
    return out


def make_tasks(sets, protocol, seed):
    """Training sets and test sets of the two directions.

    Returns
    -------
    list of (train, test) with ``train`` a dict ``{letter: LabelledBags}``
    and ``test`` a LabelledBags with the noisy captions (for naming).
    """
    tasks = []
    if protocol == "cross":
        for k in range(2):  # train on set k, test on the other one
            train = {key: sets[key][k] for key in SETTINGS}
            tasks.append((train, sets["c"][1 - k]))
        return tasks
    for k in range(2):  # heldout: one half of set k's bags, test on the other
        train_idx, test_idx = split_bags(sets["b"][k], 0.5, random_state=seed + 1000 * k)
        train = {key: restrict_bags(sets[key][k], train_idx) for key in SETTINGS}
        tasks.append((train, restrict_bags(sets["c"][k], test_idx)))
    return tasks


# ---------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------

def learners(args, rank, seed):
    """name -> function(train sets) -> the embedding function of the test X."""
    common = dict(n_components=rank, lam=args.lam, max_iter=args.max_iter,
                  n_init=args.n_init, random_state=seed)

    def pca(train):
        model = PCA(n_components=rank, random_state=seed).fit(train["a"].X)
        return model.transform

    def ldml_a(train):
        S = train["a"]
        return LDMLSupervised(**common).fit(S.X, S.y).transform

    def bags(cls, key, **kw):
        def fit(train):
            S = train[key]
            return cls(preprocessor=S.X, **common, **kw).fit(S.bags, S.captions).transform
        return fit

    out = {"PCA": pca, "LDML (a)": ldml_a}
    for key in "bc":
        out[f"LDML ({key})"] = bags(LDMLStar, key, n_rounds=1)
        out[f"MildML ({key})"] = bags(MildML, key)
        out[f"LDML* ({key})"] = bags(LDMLStar, key, n_rounds=args.rounds)
    return out


def verification(args, tasks, pairs, seed):
    """mAP of every method at every rank on one seed's tasks."""
    res = {"L2": [float(np.mean([verification_ap(test.X, *p)
                                 for (_, test), p in zip(tasks, pairs)]))] * len(args.ranks)}
    seconds = {}
    for r, rank in enumerate(args.ranks):
        for name, fit in learners(args, rank, seed).items():
            t0 = time.perf_counter()
            aps = [verification_ap(fit(train)(test.X), *p)
                   for (train, test), p in zip(tasks, pairs)]
            seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - t0
            res.setdefault(name, []).append(float(np.mean(aps)))
    return res, seconds


def naming(args, tasks, seed):
    """Fig. 5: the naming curves of the test bags of each direction."""
    out = []
    make = learners(args, args.naming_rank, seed)
    for train, test in tasks:
        curves = {}
        for name in NAMING_ROWS:
            Z = make[name](train)(test.X)
            c = naming_curve(Z, test.bags, test.captions, test.y,
                             n_points=args.naming_points, max_evals=3 * args.naming_points)
            curves[name] = {"n_named": c.n_named.tolist(),
                            "precision": c.precision.tolist(),
                            "b": c.b.tolist(), "n_nameable": c.n_nameable,
                            "n_instances": int(len(test.y))}
        out.append(curves)
    return out


# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------

def markdown_table(headers, rows):
    lines = ["| " + " | ".join(headers) + " |",
             "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _pct(values, std=None):
    if std is None:
        return [f"{100 * v:.1f}" for v in values]
    return [f"{100 * v:.1f} ± {100 * s:.1f}" for v, s in zip(values, std)]


def print_tables(args, results):
    for protocol, res in results.items():
        ranks = [f"d={d}" for d in args.ranks]
        show_std = len(args.seed_list) > 1
        what = ("train on one set, test on the other's pairs (disjoint classes)"
                if protocol == "cross" else
                "train on half of each set's bags, test on the other half's digits")
        print(f"\n### Fig. 4 ({protocol}): verification mAP (%) against the rank\n")
        print(f"{what}; mean over {len(args.seed_list)} seed(s)"
              + (" ± std" if show_std else "") + "\n")
        print(markdown_table(["metric"] + ranks, [
            [name] + _pct(res["map"][name], res["std"][name] if show_std else None)
            for name in FIG4_ROWS]))
        print(f"\n### Table 1 ({protocol}): LDML (one Euclidean clustering) against "
              f"LDML* (up to {args.rounds} rounds), mAP (%)\n")
        print(markdown_table(["metric"] + ranks, [
            [name] + _pct(res["map"][name], res["std"][name] if show_std else None)
            for name in TABLE1_ROWS]))
        secs = res["seconds"]
        print("\nfit seconds (all ranks, both directions, all seeds): "
              + ", ".join(f"{k} {v:.1f}" for k, v in secs.items()))


def print_naming(args, curves):
    print(f"\n### Fig. 5 ({args.naming_protocol}): naming precision (%) of the "
          f"held-out bags, noisy captions, rank {args.naming_rank}\n")
    rows = []
    for name_set, cset in zip("AB", curves):
        n_nameable = next(iter(cset.values()))["n_nameable"]
        fracs = (0.25, 0.5, 0.75, 1.0)
        for name, c in cset.items():
            k, p = np.asarray(c["n_named"]), np.asarray(c["precision"])
            cells = []
            for f in fracs:
                # the point whose count is closest to f * nameable
                i = int(np.argmin(np.abs(k - f * n_nameable))) if k.size else None
                cells.append("-" if i is None else f"{100 * p[i]:.1f} ({k[i]})")
            rows.append([f"set {name_set}", name] + cells)
    print(markdown_table(["clustered", "metric"] + [f"~{int(100 * f)}% named (n)"
                                                    for f in fracs], rows))


def figures(args, results, curves, folder):
    try:
        import matplotlib
    except ImportError:
        print("\nfigures skipped: matplotlib is not installed "
              "(pip install cvxmetric[plot])")
        return []
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    style = {"L2": ("0.4", ":", "o"), "PCA": ("0.55", "--", "s"),
             "LDML (a)": ("tab:blue", "-", "o"), "LDML (b)": ("tab:green", "-", "^"),
             "MildML (b)": ("tab:green", "--", "v"), "LDML (c)": ("tab:red", "-", "^"),
             "MildML (c)": ("tab:red", "--", "v"), "LDML* (b)": ("tab:olive", ":", "x"),
             "LDML* (c)": ("tab:pink", ":", "x")}
    protocols = list(results)
    fig, axes = plt.subplots(1, len(protocols), figsize=(6 * len(protocols), 4.5),
                             squeeze=False)
    for ax, protocol in zip(axes[0], protocols):
        res = results[protocol]
        for name in FIG4_ROWS + ("LDML* (b)", "LDML* (c)"):
            color, ls, marker = style[name]
            ax.plot(args.ranks, 100 * np.asarray(res["map"][name]), ls, color=color,
                    marker=marker, ms=4, lw=1.6, label=name)
        ax.set_xscale("log", base=2)
        ax.set_xticks(args.ranks)
        ax.set_xticklabels([str(d) for d in args.ranks])
        ax.set_xlabel("metric rank d")
        ax.set_ylabel("verification mAP (%)")
        title = ("cross: train on A, test on B and back" if protocol == "cross"
                 else "heldout: train on half the bags, test on the rest")
        ax.set_title(f"digits bags, {title}", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    p1 = folder / "ldml_map_rank.png"
    fig.savefig(p1, dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    colors = {"PCA": "0.5", "LDML (a)": "tab:blue", "MildML (c)": "tab:red"}
    for ax, name_set, cset in zip(axes, "AB", curves):
        for name, c in cset.items():
            # points in order of the count (the count need not grow with b)
            order = np.argsort(c["n_named"], kind="stable")
            ax.plot(np.asarray(c["n_named"])[order],
                    100 * np.asarray(c["precision"])[order], "-o", ms=3,
                    color=colors[name], label=name)
        ax.set_xlabel("number of named digits")
        ax.set_ylabel("precision (%)")
        ax.set_title(f"({'ab'[name_set == 'B']}) naming the held-out bags of set "
                     f"{name_set} ({args.naming_protocol}), d = {args.naming_rank}",
                     fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    p2 = folder / "ldml_naming.png"
    fig.savefig(p2, dpi=110)
    plt.close(fig)
    print(f"\nfigures: {p1}, {p2}")
    return [str(p1), str(p2)]


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--small", action="store_true",
                      help="60 digits per class, ranks 2-16, 1 seed, 2000 pairs "
                           "(under a minute; for the tests)")
    size.add_argument("--full", action="store_true",
                      help="5 seeds, 3 random starts per fit")
    parser.add_argument("--protocol", choices=("both", "heldout", "cross"), default=None,
                        help="default: both (--small: heldout)")
    parser.add_argument("--ranks", type=lambda s: [int(v) for v in s.split(",")],
                        default=None, help="comma-separated (default 2,4,8,16,32)")
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds")
    parser.add_argument("--seed", type=int, default=0, help="first seed")
    parser.add_argument("--n-per-class", type=int, default=None,
                        help="digits per class, heldout protocol (default: all, about "
                             "180, half of them for training; --small 60)")
    parser.add_argument("--cross-per-class", type=int, default=None,
                        help="digits per class, cross protocol (default 90: as many "
                             "training digits as heldout; --small 60)")
    parser.add_argument("--max-bag", type=int, default=3,
                        help="bags hold 1..max_bag digits (default 3)")
    parser.add_argument("--pairs", type=int, default=None,
                        help="test pairs per set (default 20000; --small 2000)")
    parser.add_argument("--lam", type=float, default=0.0)
    parser.add_argument("--max-iter", type=int, default=None,
                        help="iterations of each gradient run (default 30)")
    parser.add_argument("--n-init", type=int, default=None,
                        help="random starts per fit (default 1; --full 3)")
    parser.add_argument("--rounds", type=int, default=5, help="LDML* rounds")
    parser.add_argument("--naming-rank", type=int, default=None,
                        help="rank of the Fig. 5 metrics (default 16; --small 8)")
    parser.add_argument("--naming-points", type=int, default=None,
                        help="points of each naming curve (default 30; --small 10)")
    parser.add_argument("--naming-protocol", choices=("heldout", "cross"),
                        default="heldout")
    parser.add_argument("--figures", default=str(ROOT / "docs" / "img"), metavar="DIR")
    parser.add_argument("--no-figures", action="store_true")
    parser.add_argument("--json", default=None, metavar="PATH",
                        help="write the numbers to this JSON file")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads (0: the library default)")
    args = parser.parse_args(argv)
    small, full = args.small, args.full
    args.protocol = args.protocol or ("heldout" if small else "both")
    args.ranks = args.ranks or ([2, 4, 8, 16] if small else [2, 4, 8, 16, 32])
    n_seeds = args.seeds or (1 if small else 5 if full else 3)
    args.seed_list = [args.seed + k for k in range(n_seeds)]
    if args.n_per_class is None and small:
        args.n_per_class = 60
    args.cross_per_class = args.cross_per_class or (60 if small else 90)
    args.pairs = args.pairs or (2000 if small else 20000)
    args.max_iter = args.max_iter or 30
    args.n_init = args.n_init or (3 if full else 1)
    args.naming_rank = args.naming_rank or (8 if small else 16)
    args.naming_points = args.naming_points or (10 if small else 30)
    with threadpool_limits(limits=args.threads or None, user_api="blas"), \
            warnings.catch_warnings():
        # the gradient runs stop at max_iter on purpose (lam = 0: the
        # likelihood of separable training pairs has no maximiser)
        warnings.simplefilter("ignore", ConvergenceWarning)
        return _run(args)


def _run(args):
    t_start = time.perf_counter()
    protocols = ["heldout", "cross"] if args.protocol == "both" else [args.protocol]
    print(f"digits bags: A = digits {CLASSES_A}, B = digits {CLASSES_B}, "
          f"{args.n_per_class or 'all'} per class (cross: {args.cross_per_class}), "
          f"bags of 1-{args.max_bag}; "
          f"ranks {args.ranks}; lam = {args.lam}, max_iter = {args.max_iter}, "
          f"n_init = {args.n_init}, LDML* rounds <= {args.rounds}; "
          f"{args.pairs} test pairs per set; seeds {args.seed_list}")
    per_seed = {p: [] for p in protocols}
    seconds = {p: {} for p in protocols}
    curves, sizes = None, {}
    for seed in args.seed_list:
        for protocol in protocols:
            sets = load_sets(seed, _per_class(args, protocol), args.max_bag)
            tasks = make_tasks(sets, protocol, seed)
            sizes[protocol] = [{"train_instances": len(tr["a"].y),
                                "train_bags": len(tr["b"].bags),
                                "test_instances": len(te.y)} for tr, te in tasks]
            rng = np.random.RandomState(seed)
            n_pairs = [min(args.pairs, _max_pairs(te.y)) for _, te in tasks]
            pairs = [verification_pairs(te.y, n, random_state=rng)
                     for (_, te), n in zip(tasks, n_pairs)]
            res, secs = verification(args, tasks, pairs, seed)
            per_seed[protocol].append(res)
            for k, v in secs.items():
                seconds[protocol][k] = seconds[protocol].get(k, 0.0) + v
            if curves is None and protocol == args.naming_protocol:
                curves = naming(args, tasks, seed)
        print(f"seed {seed} done ({time.perf_counter() - t_start:.0f} s)", flush=True)
    if curves is None:  # the naming protocol was not among those run
        sets = load_sets(args.seed_list[0], _per_class(args, args.naming_protocol),
                         args.max_bag)
        curves = naming(args, make_tasks(sets, args.naming_protocol, args.seed_list[0]),
                        args.seed_list[0])

    results = {}
    for protocol in protocols:
        names = per_seed[protocol][0].keys()
        stack = {n: np.array([r[n] for r in per_seed[protocol]]) for n in names}
        results[protocol] = {
            "map": {n: stack[n].mean(axis=0).tolist() for n in names},
            "std": {n: stack[n].std(axis=0).tolist() for n in names},
            "per_seed": {n: stack[n].tolist() for n in names},
            "seconds": {n: round(v, 2) for n, v in seconds[protocol].items()},
            "sizes": sizes[protocol],
        }
    print_tables(args, results)
    print_naming(args, curves)
    written = [] if args.no_figures else figures(args, results, curves, args.figures)
    total = time.perf_counter() - t_start
    print(f"\ntotal {total:.1f} s")
    if args.json:
        out = {"settings": {k: v for k, v in vars(args).items()
                            if k not in ("json", "figures", "no_figures", "threads")},
               "verification": results,
               "naming": {"protocol": args.naming_protocol, "rank": args.naming_rank,
                          "sets": dict(zip("AB", curves))},
               "figures": written, "seconds": round(total, 1)}
        Path(args.json).write_text(json.dumps(out, indent=1))
        print(f"numbers: {args.json}")
    return 0


def _per_class(args, protocol):
    """Digits per class of a protocol's sets (``None``: all)."""
    return args.cross_per_class if protocol == "cross" else args.n_per_class


def _max_pairs(y):
    """Twice the smaller count of distinct positive and negative pairs."""
    counts = np.unique(y, return_counts=True)[1]
    pos = int(np.sum(counts * (counts - 1) // 2))
    neg = len(y) * (len(y) - 1) // 2 - pos
    return 2 * min(pos, neg)


if __name__ == "__main__":
    raise SystemExit(main())

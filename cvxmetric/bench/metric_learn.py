"""metric-learn 0.7's LMNN and MMC beside cvxmetric's certified optima.

metric-learn 0.7.0 (its last release) fails in every ``fit`` on
scikit-learn >= 1.8, so its side runs in an environment of its own: a
virtual environment with ``metric-learn==0.7.0`` and ``scikit-learn<1.8``,
which ``--make-env`` creates from the package index.  That side fits
metric-learn's ``LMNN`` (k = 3, its defaults) and ``MMC`` (on pairs drawn
once and saved) on the training split of each dataset and saves, per
dataset, the data it saw, the pairs and the learned matrices (``.npz``,
no pickle).  This side then fits cvxmetric's ``LMNN`` and ``MMC`` on the same
data, evaluates metric-learn's matrices on the same objectives (LMNN's
JMLR 2009 objective; MMC's scale-free value), and prints one table::

    python -m cvxmetric.bench.metric_learn --env /tmp/mlenv --make-env

Datasets: iris, wine, breast_cancer (standardised) and digits (standardised,
then PCA to 30 dimensions); a stratified 70/30 split (``random_state=0``);
the excess and times on the training split, 3-NN accuracy on the test split.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

__all__ = ["main", "compare", "SIDE_SCRIPT"]

#: Run by the metric-learn environment's Python: ``SIDE_SCRIPT OUT_DIR``.
SIDE_SCRIPT = r'''
import sys, time, warnings
from pathlib import Path
import numpy as np
from sklearn import datasets
from sklearn.decomposition import PCA
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
import metric_learn
from metric_learn.constraints import Constraints

out = Path(sys.argv[1])
loaders = {"iris": datasets.load_iris, "wine": datasets.load_wine,
           "breast_cancer": datasets.load_breast_cancer, "digits": datasets.load_digits}
for name, load in loaders.items():
    X, y = load(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    scaler = StandardScaler().fit(Xtr)
    Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
    if name == "digits":
        pca = PCA(30, random_state=0).fit(Xtr)
        Xtr, Xte = pca.transform(Xtr), pca.transform(Xte)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        lmnn = metric_learn.LMNN(n_neighbors=3, random_state=0).fit(Xtr, ytr)
        t_lmnn = time.perf_counter() - t
        n_classes = len(np.unique(ytr))
        a, b, c, d = Constraints(ytr).positive_negative_pairs(
            20 * n_classes ** 2, random_state=np.random.RandomState(0))
        pairs = np.vstack([np.column_stack([a, b]), np.column_stack([c, d])])
        labels = np.r_[np.ones(len(a)), -np.ones(len(c))]
        keep = (Xtr[pairs[:, 0]] != Xtr[pairs[:, 1]]).any(axis=1)  # no identical points
        pairs, labels = pairs[keep], labels[keep]
        t = time.perf_counter()
        mmc = metric_learn.MMC(random_state=0).fit(Xtr[pairs], labels)
        t_mmc = time.perf_counter() - t
    np.savez(out / f"{name}.npz", Xtr=Xtr, Xte=Xte, ytr=ytr, yte=yte, pairs=pairs,
             labels=labels, M_lmnn=lmnn.get_mahalanobis_matrix(), t_lmnn=t_lmnn,
             M_mmc=mmc.get_mahalanobis_matrix(), t_mmc=t_mmc)
    print(name, round(t_lmnn, 2), round(t_mmc, 2), flush=True)
'''

DATASETS = ("iris", "wine", "breast_cancer", "digits")


def make_env(env):
    """A virtual environment at ``env`` with metric-learn 0.7.0 and a
    scikit-learn it supports."""
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    pip = Path(env) / "bin" / "pip"
    subprocess.run([str(pip), "install", "-q", "metric-learn==0.7.0",
                    "scikit-learn>=1.5,<1.8"], check=True)


def run_side(env, out):
    """Run :data:`SIDE_SCRIPT` in the environment ``env``, writing to ``out``."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(SIDE_SCRIPT)
        script = f.name
    python = Path(env) / "bin" / "python"
    subprocess.run([str(python), script, str(out)], check=True)


def _knn(M, Xtr, ytr, Xte, yte):
    from sklearn.neighbors import KNeighborsClassifier

    w, V = np.linalg.eigh(0.5 * (M + M.T))
    L = V * np.sqrt(np.maximum(w, 0.0))
    return KNeighborsClassifier(3).fit(Xtr @ L, ytr).score(Xte @ L, yte)


def compare(name, saved):
    """One row per method: metric-learn's excess over the certified optimum,
    both times and both 3-NN accuracies."""
    from cvxmetric import LMNN, MMC
    from cvxmetric.lmnn._problem import LMNNData
    from cvxmetric.mmc import MMCData

    Xtr, Xte, ytr, yte = (saved[k] for k in ("Xtr", "Xte", "ytr", "yte"))
    t = time.perf_counter()
    ours = LMNN(k=3).fit(Xtr, ytr)
    t_ours = time.perf_counter() - t
    f_ml = LMNNData(Xtr, ytr, k=3, mu=0.5).objective(saved["M_lmnn"])
    rows = [dict(dataset=name, method="LMNN", excess=(f_ml - ours.objective_)
                 / abs(ours.objective_), certified=ours.certificate_.passed,
                 t_ml=float(saved["t_lmnn"]), t_ours=t_ours,
                 acc_ml=_knn(saved["M_lmnn"], Xtr, ytr, Xte, yte),
                 acc_ours=_knn(ours.get_mahalanobis_matrix(), Xtr, ytr, Xte, yte))]
    pairs, labels = saved["pairs"], saved["labels"]
    t = time.perf_counter()
    ours = MMC(preprocessor=Xtr).fit(pairs, labels)
    t_ours = time.perf_counter() - t
    data = MMCData.create(Xtr, pairs, labels)
    r_ml, r_ours = data.scale_free(saved["M_mmc"]), ours.scale_free_objective_
    rows.append(dict(dataset=name, method="MMC", excess=(r_ml - r_ours) / abs(r_ours),
                     certified=ours.certificate_.passed, t_ml=float(saved["t_mmc"]),
                     t_ours=t_ours, acc_ml=_knn(saved["M_mmc"], Xtr, ytr, Xte, yte),
                     acc_ours=_knn(ours.get_mahalanobis_matrix(), Xtr, ytr, Xte, yte)))
    return rows


def table(rows):
    """The rows as a Markdown table."""
    lines = ["| dataset | method | metric-learn excess | cvxmetric certified | "
             "metric-learn s | cvxmetric s | 3-NN metric-learn | 3-NN cvxmetric |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['dataset']} | {r['method']} | {100 * r['excess']:.2f} % | "
                     f"{r['certified']} | {r['t_ml']:.2f} | {r['t_ours']:.2f} | "
                     f"{r['acc_ml']:.3f} | {r['acc_ours']:.3f} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m cvxmetric.bench.metric_learn",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", required=True, help="the metric-learn environment")
    parser.add_argument("--make-env", action="store_true",
                        help="create it first (metric-learn 0.7.0, scikit-learn < 1.8)")
    parser.add_argument("--out", default=None, help="folder for its saved fits")
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS),
                        choices=DATASETS)
    args = parser.parse_args(argv)
    if args.make_env:
        make_env(args.env)
    out = Path(args.out or tempfile.mkdtemp(prefix="metric_learn_side_"))
    out.mkdir(parents=True, exist_ok=True)
    run_side(args.env, out)
    rows = []
    for name in args.datasets:
        with np.load(out / f"{name}.npz") as saved:
            rows += compare(name, dict(saved))
    print(table(rows))
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

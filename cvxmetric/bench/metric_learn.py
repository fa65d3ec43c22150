"""metric-learn 0.7's estimators beside cvxmetric's certified optima.

metric-learn 0.7.0 (its last release) fails in every ``fit`` on
scikit-learn >= 1.8, so its side runs in an environment of its own: a
virtual environment with ``metric-learn==0.7.0`` and ``scikit-learn<1.8``,
which ``--make-env`` creates from the package index.  That side splits and
scales each dataset, runs every plugin's metric-learn fit on the training
split and saves, per dataset, the data it saw, the constraints each fit drew
and the learned matrices (``.npz``, no pickle).  This side then fits
cvxmetric's counterpart on the same data and constraints, evaluates
metric-learn's matrix on the same objective, and prints one table::

    python -m cvxmetric.bench.metric_learn --env /tmp/mlenv --make-env

A plugin is a module ``cvxmetric.bench._ml_<name>`` (named in
:data:`PLUGINS`) with two names: ``SIDE``, code run in metric-learn's
environment once per dataset with ``np``, ``time``, ``metric_learn``,
``Constraints``, ``Xtr``, ``ytr`` and ``name`` bound, which sets a dict
``saved`` whose keys start with ``<name>_``; and ``compare(name, saved)``,
which returns the table's rows.  A ``SIDE`` that raises is recorded
(``<name>_error``) and shown as a row of its own.

Datasets: iris, wine, breast_cancer (standardised) and digits (standardised,
then PCA to 30 dimensions); a stratified 70/30 split (``random_state=0``);
the excess and times on the training split, 3-NN accuracy on the test split.
"""

import argparse
import importlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

__all__ = ["main", "compare", "table", "run_side", "PLUGINS", "SIDE_SCRIPT"]

#: Run by the metric-learn environment's Python: ``SIDE_SCRIPT OUT_DIR
#: PLUGINS_JSON``, the JSON a list of ``[name, code]``.
SIDE_SCRIPT = r'''
import json, sys, time, traceback, warnings
from pathlib import Path
import numpy as np
from sklearn import datasets
from sklearn.decomposition import PCA
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
import metric_learn
from metric_learn.constraints import Constraints

out = Path(sys.argv[1])
plugins = json.loads(Path(sys.argv[2]).read_text())
loaders = {"iris": datasets.load_iris, "wine": datasets.load_wine,
           "breast_cancer": datasets.load_breast_cancer, "digits": datasets.load_digits}
for name in sys.argv[3:]:
    X, y = loaders[name](return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    scaler = StandardScaler().fit(Xtr)
    Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
    if name == "digits":
        pca = PCA(30, random_state=0).fit(Xtr)
        Xtr, Xte = pca.transform(Xtr), pca.transform(Xte)
    arrays = dict(Xtr=Xtr, Xte=Xte, ytr=ytr, yte=yte)
    for plugin, code in plugins:
        ns = dict(np=np, time=time, metric_learn=metric_learn, Constraints=Constraints,
                  Xtr=Xtr.copy(), ytr=ytr.copy(), name=name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                exec(code, ns)
                arrays.update(ns["saved"])
            except Exception as exc:
                arrays[plugin + "_error"] = np.array(f"{type(exc).__name__}: {exc}")
        print(name, plugin, "error" if plugin + "_error" in arrays else "ok", flush=True)
    np.savez(out / f"{name}.npz", **arrays)
'''

#: The plugins, ``cvxmetric.bench._ml_<name>``, in the table's order.
PLUGINS = ("lmnn", "mmc", "itml", "rca", "scml", "sdml")

DATASETS = ("iris", "wine", "breast_cancer", "digits")


def make_env(env):
    """A virtual environment at ``env`` with metric-learn 0.7.0 and a
    scikit-learn it supports."""
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    pip = Path(env) / "bin" / "pip"
    subprocess.run([str(pip), "install", "-q", "metric-learn==0.7.0",
                    "scikit-learn>=1.5,<1.8"], check=True)


def _plugin(name):
    return importlib.import_module(f"{__package__}._ml_{name}")


def run_side(env, out, datasets=DATASETS, plugins=PLUGINS):
    """Run :data:`SIDE_SCRIPT` with ``plugins``' code in the environment
    ``env``, writing one ``.npz`` per dataset to ``out``."""
    out = Path(out)
    codes = [[name, _plugin(name).SIDE] for name in plugins]
    script, spec = out / "side.py", out / "plugins.json"
    script.write_text(SIDE_SCRIPT)
    spec.write_text(json.dumps(codes))
    python = Path(env) / "bin" / "python"
    subprocess.run([str(python), str(script), str(out), str(spec), *datasets], check=True)


def compare(name, saved, plugins=PLUGINS):
    """The table's rows for one dataset: each plugin's, or a row saying that
    metric-learn's fit raised."""
    rows = []
    for plugin in plugins:
        error = saved.get(f"{plugin}_error")
        if error is not None:
            rows.append(dict(dataset=name, method=plugin.upper(), error=str(error)))
        else:
            rows += _plugin(plugin).compare(name, saved)
    return rows


def _cell(value, fmt):
    return "n/a" if value is None or (isinstance(value, float) and np.isnan(value)) \
        else format(value, fmt)


def _excess_cell(row):
    """The excess in %, with its digits where it is small; metric-learn's
    failure, or cvxmetric's certified refusal, where one of them gave no
    matrix."""
    ml = row.get("outcome_ml")
    if ml and not ml.startswith("optimal"):
        return f"metric-learn raised {ml.split(':')[0]}"
    ours = row.get("outcome_ours")
    if ours and ours.endswith("Error"):
        return f"cvxmetric: {ours} (certified)"
    excess = row["excess"]
    if excess is None or np.isnan(excess):
        return "n/a"
    value = 100 * excess
    return f"{value:.2f} %" if abs(value) >= 0.01 or value == 0 else f"{value:.1e} %"


def table(rows):
    """The rows as a Markdown table."""
    lines = ["| dataset | method | metric-learn excess | cvxmetric certified | "
             "metric-learn s | cvxmetric s | 3-NN metric-learn | 3-NN cvxmetric |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['dataset']} | {r['method']} | metric-learn raised "
                         f"{r['error'].split(':')[0]} | | | | | |")
            continue
        lines.append(f"| {r['dataset']} | {r['method']} | {_excess_cell(r)} | "
                     f"{r['certified']} | {_cell(r['t_ml'], '.2f')} | "
                     f"{_cell(r['t_ours'], '.2f')} | {_cell(r['acc_ml'], '.3f')} | "
                     f"{_cell(r['acc_ours'], '.3f')} |")
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
    parser.add_argument("--methods", nargs="*", default=list(PLUGINS), choices=PLUGINS,
                        help="the plugins to run (all by default)")
    args = parser.parse_args(argv)
    if args.make_env:
        make_env(args.env)
    out = Path(args.out or tempfile.mkdtemp(prefix="metric_learn_side_"))
    out.mkdir(parents=True, exist_ok=True)
    run_side(args.env, out, args.datasets, args.methods)
    rows = []
    for name in args.datasets:
        with np.load(out / f"{name}.npz") as saved:
            rows += compare(name, dict(saved), args.methods)
    print(table(rows))
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Every example runs with its defaults, in under a minute, and needs no
stand-in: larger settings are behind ``--full``.  It draws its figures by
default and writes nothing (the figures go to ``--figures DIR`` only);
without matplotlib it ends with a clear message before any work.  That
each example's quick mode draws at least one figure is checked by the
documentation build (``tests/test_docs_site.py``: the gallery runs every
example with ``--quick`` and each page must show a figure): the quick runs
together take about two minutes, too long to repeat here.

The examples are run as a user runs them (``python examples/NAME.py``), in
a subprocess; the ones that take more than a few seconds are marked
``slow``. The durations measured on the 2-core development machine are in
the docstring of each example. No wall-clock time is asserted: the only
limit is :data:`TIMEOUT`, ten times the one-minute budget, which a loaded
machine does not reach but a hang does.
"""

import ast
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

#: name -> a line its default output must contain.
EXPECTED = {
    "metric_learn_migration.py": "5-NN accuracy",
    "slr_digits.py": "mAP",
    "slr_synthetic.py": "mAP",
    "slr_real_data.py": "certified optimal",
    "rankdml_digits_cmc.py": "rank-1",
    "knn_accuracy.py": "5-NN accuracy",
    "omdml_digits.py": "mAP",
    "ldml_bags.py": "verification mAP",
    "qwise_webpages.py": "Table 1 (synthetic page)",
    "qwise_taxonomy.py": "Table 6-like: Eq. 24 hierarchy accuracy, 10-NN",
    "qwise_attributes.py": "Gaussian-model accuracy (%)",
}
FAST = {"metric_learn_migration.py"}

#: Seconds after which a run counts as hung (ten times the idle budget).
TIMEOUT = 600


def test_every_example_is_listed():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(EXPECTED)


def _tracked_changes():
    """New files under docs/ and examples/, and changes of the tracked
    figures of docs/img (None outside a git checkout): what an example
    could write (edits of the sources meanwhile are not its doing)."""
    try:
        proc = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all",
                               "--", "docs", "examples"],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
    except OSError:
        return None
    if proc.returncode != 0:
        return None
    return sorted(line for line in proc.stdout.splitlines()
                  if line.startswith("??") or "docs/img/" in line)


HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=() if n in FAST else pytest.mark.slow) for n in EXPECTED])
def test_example_runs_with_its_defaults(name, tmp_path):
    # run from an empty folder with a file-only backend: the figures are
    # drawn (where matplotlib is installed) and nothing is written, neither
    # there nor under the repository's docs/ or examples/
    before = _tracked_changes()
    args = [] if HAS_MATPLOTLIB else ["--no-figures"]
    env = dict(os.environ, MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(EXAMPLES / name)] + args,
                          capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp_path,
                          env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert EXPECTED[name] in proc.stdout, proc.stdout[-2000:]
    if HAS_MATPLOTLIB:
        assert "figure(s) drawn" in proc.stdout, proc.stdout[-2000:]
    assert not list(tmp_path.iterdir())
    assert _tracked_changes() == before


#: A ``sitecustomize`` that hides matplotlib (``None`` in ``sys.modules``:
#: ``import matplotlib`` fails, ``find_spec`` finds nothing).
_NO_MATPLOTLIB = 'import sys\nsys.modules["matplotlib"] = None\n'


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_without_matplotlib_ends_before_the_work(name, tmp_path):
    (tmp_path / "sitecustomize.py").write_text(_NO_MATPLOTLIB)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(EXAMPLES / name)],
                          capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp_path,
                          env=env)
    assert proc.returncode == 1
    assert proc.stdout == ""  # nothing computed, nothing printed
    assert "matplotlib, which is not installed" in proc.stderr, proc.stderr[-2000:]
    assert "--no-figures" in proc.stderr and "Nothing was run" in proc.stderr


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_writes_figures_only_where_told(name):
    text = (EXAMPLES / name).read_text()
    # the shared options and ending: --figures DIR, --no-figures, and
    # no path of the repository built into the script
    assert "add_figure_options(" in text
    assert "parse_example_args(" in text or "require_matplotlib(" in text
    assert "finish(" in text
    for word in ('"docs"', "'docs'", "docs/img\"", "--plot", "savefig("):
        assert word not in text, f"{name} has {word!r}"


def test_gallery_runs_every_example_quick():
    # read, not imported: docs/_gallery.py needs sphinx-gallery
    tree = ast.parse((ROOT / "docs" / "_gallery.py").read_text())
    QUICK = next(ast.literal_eval(node.value) for node in tree.body
                 if isinstance(node, ast.AnnAssign | ast.Assign)
                 and "QUICK" in ast.unparse(node.targets[0] if isinstance(node, ast.Assign)
                                            else node.target))
    assert sorted(QUICK) == sorted(EXPECTED)
    for name, args in QUICK.items():
        text = (EXAMPLES / name).read_text()
        assert all(a in text for a in args), name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_has_no_stand_in(name):
    text = (EXAMPLES / name).read_text()
    for word in ("stand-in", "STAND-IN", "StandIn", "Until the estimators"):
        assert word not in text, f"{name} mentions {word!r}"


#: Examples whose default already is the whole experiment (seconds).
WHOLE_BY_DEFAULT = {"metric_learn_migration.py", "slr_digits.py"}


@pytest.mark.parametrize("name", sorted(set(EXPECTED) - WHOLE_BY_DEFAULT))
def test_larger_settings_are_behind_full(name):
    assert "--full" in (EXAMPLES / name).read_text()


def test_finish_writes_only_to_the_folder_it_is_given(tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    import argparse

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from cvxmetric.experiments._figures import add_figure_options, finish

    parser = argparse.ArgumentParser()
    add_figure_options(parser)
    monkeypatch.chdir(tmp_path)
    n_open = len(plt.get_fignums())
    # no --figures on a backend without a window: closed, nothing written
    assert finish({"a": plt.figure()}, parser.parse_args([])) == []
    assert "figure(s) drawn" in capsys.readouterr().out
    assert not list(tmp_path.iterdir()) and len(plt.get_fignums()) == n_open
    out = tmp_path / "figs"
    written = finish({"a": plt.figure(), "b": plt.figure()},
                     parser.parse_args(["--figures", str(out)]))
    assert written == [str(out / "a.png"), str(out / "b.png")]
    assert sorted(p.name for p in out.iterdir()) == ["a.png", "b.png"]
    assert len(plt.get_fignums()) == n_open
    with pytest.raises(SystemExit):
        parser.parse_args(["--figures", str(out), "--no-figures"])

"""Every example runs with its defaults, in under a minute, and needs no
stand-in: larger settings are behind ``--full``.

The examples are run as a user runs them (``python examples/NAME.py``), in
a subprocess; the ones that take more than a few seconds are marked
``slow``. The durations measured on the 2-core development machine are in
the docstring of each example. No wall-clock time is asserted: the only
limit is :data:`TIMEOUT`, ten times the one-minute budget, which a loaded
machine does not reach but a hang does.
"""

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
    "slr_dask.py": "certified gap",
}
FAST = {"metric_learn_migration.py"}
#: name -> the optional module it needs (skipped without it).
NEEDS = {"slr_dask.py": "distributed"}

#: Seconds after which a run counts as hung (ten times the idle budget).
TIMEOUT = 600


def test_every_example_is_listed():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=() if n in FAST else pytest.mark.slow) for n in EXPECTED])
def test_example_runs_with_its_defaults(name):
    if name in NEEDS:
        pytest.importorskip(NEEDS[name])
    proc = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True,
                          text=True, timeout=TIMEOUT, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert EXPECTED[name] in proc.stdout, proc.stdout[-2000:]


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

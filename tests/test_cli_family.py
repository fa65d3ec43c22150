"""The ``cvxmetric`` command per family, ``bench``'s suites and the guard on
commands that write into a collection.

* ``solve FILE`` derives the family of FILE (its manifest, else its array
  names) and offers that family's methods and hyperparameter options, each
  checked as the family's estimator checks the parameter;
* ``verify`` shows the family of every row;
* ``bench`` without options times the methods on the collection, the Qwise
  scaling benchmark needs ``--family qwise`` or ``--sizes``;
* ``reference`` and ``make-problems`` write only into a collection named on
  the command line (``--root``, ``--out``) or with ``--in-place``.
"""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from cvxmetric import bench
from cvxmetric.bench import qwise as qbench
from cvxmetric import collection as col
from cvxmetric.cli import _show_default, build_parser, main
from cvxmetric.constraints import pairs_from_labels, quadruplets_from_labels

REPO = Path(__file__).resolve().parents[1]

#: One bundled instance per family.
BUNDLED = {
    "qwise": "iris_trace",
    "mmc": "iris_full",
    "rankdml": "iris_burg",
    "constraintdml": "iris_eq10",
    "slr": "iris",
    "qwise_vector": "vector_squared_huber",
    "qwise_structural": "structural_quadruplets_trace",
}
#: Each family's hyperparameter options: one per name in its
#: ``FamilySpec.hyperparameters`` (``C_q`` -> ``--C-q``).
OPTIONS = {
    fam: {"--" + name.replace("_", "-") for name in spec.hyperparameters}
    for fam, spec in col.FAMILIES.items()
}
ALL_OPTIONS = set().union(*OPTIONS.values())
#: Some of them, as the estimators name their parameters.
KNOWN = {
    "qwise": {"--regularizer", "--C-q", "--C-p", "--u", "--l"},
    "mmc": {"--diagonal"},
    "rankdml": {"--regularizer", "--lam", "--tau", "--diagonal"},
    "constraintdml": {"--hard", "--diagonal", "--lam"},
    "slr": {"--delta1", "--delta2"},
}


def test_every_family_has_its_options():
    for fam, known in KNOWN.items():
        assert known <= OPTIONS[fam]


def run(capsys, *argv):
    """``main(argv)`` -> (exit code, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def bundled(family):
    return REPO / "problems" / family / f"{BUNDLED[family]}.npz"


def help_text(capsys, *argv):
    assert main([str(a) for a in argv]) == 0  # --help: exit status 0
    return capsys.readouterr().out


@pytest.fixture
def clean_env(monkeypatch):
    """No ``$CVXMETRIC_ROOT``: the root is found as a user's would be."""
    monkeypatch.delenv("CVXMETRIC_ROOT", raising=False)


def _tiny_qwise(seed=0):
    rng = np.random.RandomState(seed)
    y = np.repeat(np.arange(3), 5)
    X = 1.5 * rng.randn(3, 3)[y] + rng.randn(len(y), 3)
    q = quadruplets_from_labels(y, 15, random_state=seed)
    return {"X": X, "quadruplets": q, "delta": np.ones(len(q))}


def _tiny_mmc(seed=0):
    rng = np.random.RandomState(seed)
    y = np.repeat(np.arange(3), 6)
    X = 1.5 * rng.randn(3, 3)[y] + rng.randn(len(y), 3)
    p, lab = pairs_from_labels(y, 30, random_state=seed)
    return {"X": X, "pairs": p, "pair_labels": lab}


@pytest.fixture
def two_family_root(tmp_path):
    """A qwise and an mmc instance of the same name, with references."""
    col.write_instance(tmp_path, "qwise", "tiny", _tiny_qwise(),
                       hyperparameters={"regularizer": "trace", "C_q": 1.0})
    col.write_instance(tmp_path, "mmc", "tiny", _tiny_mmc(),
                       hyperparameters={"diagonal": True})
    outcomes = col.make_references(tmp_path)
    assert all(o.written for o in outcomes), [o.reasons for o in outcomes]
    return tmp_path


# ---------------------------------------------------------------------------
# solve: the family, its methods and its options
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("family", sorted(BUNDLED))
def test_solve_help_shows_the_family_of_the_file(capsys, family):
    out = help_text(capsys, "solve", bundled(family), "--help")
    assert f"options of family '{family}'" in out
    # an option ends where no word character or dash follows (--C is not --C-q)
    shown = {o for o in ALL_OPTIONS if re.search(rf"^\s+{re.escape(o)}(?![\w-])", out,
                                                 re.MULTILINE)}
    assert shown == OPTIONS[family]
    methods = ", ".join(["exact"] + list(col.METHODS[family]))
    assert f"{family}: one of {methods}" in " ".join(out.split())


@pytest.mark.parametrize("family", sorted(BUNDLED))
def test_list_methods_of_a_file(capsys, family):
    code, out, err = run(capsys, "solve", bundled(family), "--list-methods")
    assert code == 0, err
    assert out.splitlines()[0].endswith(f"family {family}")
    listed = [ln.split()[0] for ln in out.splitlines()
              if ln.split() and ln.split()[0] in {"exact", *col.METHODS[family]}]
    assert listed == ["exact", *col.METHODS[family]]
    flags = {ln.split()[0] for ln in out.splitlines()
             if ln.startswith("--") and not ln.startswith("---")}
    assert flags == OPTIONS[family]
    # the values of this file, from its manifest
    inst = col.load_instance(REPO, family, BUNDLED[family])
    for name, value in inst.hyperparameters.items():
        line = next(ln for ln in out.splitlines()
                    if ln.startswith("--" + name.replace("_", "-") + " "))
        assert line.rstrip().endswith(_show_default(value))
    assert "null" not in out  # an unset value is "not set", never JSON's null


def test_list_methods_without_a_file(capsys):
    code, out, _ = run(capsys, "solve", "--list-methods")
    assert code == 0
    assert [ln for ln in out.splitlines() if ln.startswith("family ")] == [
        f"family {f}" for f in col.FAMILIES]
    code, out, _ = run(capsys, "solve", "--list-methods", "--family", "mmc")
    assert code == 0 and out.startswith("family mmc") and "newton" in out
    assert "--C-q" not in out


def test_solve_help_without_a_file_lists_every_family(capsys):
    out = help_text(capsys, "solve", "--help")
    for fam in col.FAMILIES:
        line = next(ln for ln in out.splitlines() if ln.strip().startswith(f"{fam}:"))
        assert "exact" in line
        for opt in OPTIONS.get(fam, ()):
            assert opt in line
    # no family's option is shown as an option of every family
    assert not re.search(r"^\s+--C-q\b", out, re.MULTILINE)


def test_mmc_newton_on_a_full_instance_can_be_switched_to_diagonal(capsys):
    path = bundled("mmc")  # full M: Xing's Newton method does not apply
    code, out, err = run(capsys, "solve", path, "--method", "newton")
    assert code == 2 and out == ""
    assert "--method: 'newton' does not apply" in err
    code, out, err = run(capsys, "solve", path, "--method", "newton", "--diagonal",
                         "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["instance"]["hyperparameters"]["diagonal"] is True
    assert doc["status"] == "optimal"
    M = np.array(doc["M"])
    assert np.count_nonzero(M - np.diag(np.diag(M))) == 0
    # the reference is the full problem's: it is now stale
    assert doc["reference"]["status"] == "stale"


def test_solve_with_a_method_of_another_family_is_refused(capsys):
    code, out, err = run(capsys, "solve", bundled("qwise"), "--method", "newton")
    assert code == 2 and out == ""
    assert "--method: 'newton' is not a method of family 'qwise'" in err
    assert "exact, fast, subgradient" in err


@pytest.mark.parametrize("family, option", [
    ("qwise", "--lam=1"), ("qwise", "--diagonal"), ("mmc", "--C-q=2"),
    ("slr", "--regularizer=trace"), ("rankdml", "--hard"),
    ("constraintdml", "--delta1=2"),
])
def test_an_option_of_another_family_is_refused(capsys, family, option):
    code, out, err = run(capsys, "solve", bundled(family), option)
    flag = option.split("=")[0]
    assert code == 2 and out == ""
    assert f"{flag}: not an option of family '{family}'" in err
    for opt in OPTIONS[family]:
        assert opt in err


@pytest.mark.parametrize("family, option, value, match", [
    # -1: refused whether lam = 0 is (RankDML's lam in (0, inf) or [0, inf))
    ("rankdml", "--lam", "-1", r"--lam: must be a float in the range [(\[]0\.0, inf\)"),
    ("rankdml", "--lam", "nan", "--lam: must be finite, got nan"),
    ("rankdml", "--tau", "inf", "--tau: must be finite, got inf"),
    ("rankdml", "--tau", "-1", r"--tau: must be a float in the range \(0\.0"),
    ("rankdml", "--regularizer", "trace",
     r"--regularizer: must be a str among \{'burg', 'frobenius', 'laplacian', "
     r"'logdet'\}, got 'trace'"),
    ("constraintdml", "--lam", "-0.5", r"--lam: must be a float in the range \[0\.0"),
    ("constraintdml", "--lam", "-inf", "--lam: must be finite"),
    ("slr", "--delta1", "inf", "--delta1: must be finite, got inf"),
    ("slr", "--delta2", "nan", "--delta2: must be finite, got nan"),
    ("qwise", "--C-p", "1e400", "--C-p: must be finite"),
])
def test_each_family_checks_its_options(capsys, family, option, value, match):
    code, out, err = run(capsys, "solve", bundled(family), f"{option}={value}")
    assert code == 2 and out == ""
    assert re.search(match, err), err
    assert err.count("\n") == 1 and "[" not in err.split(":", 2)[-1].split("range")[0]


def test_the_estimators_accept_what_solve_accepts(capsys):
    """lam = 0 is a valid ConstraintDML parameter (and not a RankDML one)."""
    code, out, err = run(capsys, "solve", bundled("constraintdml"), "--lam=0",
                         "--json")
    assert code == 0, err
    assert json.loads(out)["instance"]["hyperparameters"]["lam"] == 0.0


def test_cross_option_errors_name_the_options(capsys):
    code, out, err = run(capsys, "solve", bundled("slr"), "--delta1=0.5",
                         "--delta2=1")
    assert code == 2 and out == ""
    assert "delta1 > delta2" in err and "--delta1=0.5" in err and "--delta2=1.0" in err
    assert "[" not in err  # no arrays


def test_errors_never_print_arrays(tmp_path, capsys):
    path = tmp_path / "big.npz"
    rng = np.random.RandomState(0)
    np.savez(path, X=rng.randn(400, 3), y=np.zeros(400, dtype=int))  # one class
    code, out, err = run(capsys, "solve", path, "--method", "newton")
    assert code == 2 and out == ""
    assert "big.npz" in err and len(err) < 600 and "..." not in err
    assert not re.search(r"\d\.\d+\s+-?\d\.\d+\s+-?\d\.\d+", err)


# ---------------------------------------------------------------------------
# solve: the family of a file without a manifest
# ---------------------------------------------------------------------------


def test_bare_files_are_solved_by_their_family(tmp_path, capsys):
    rng = np.random.RandomState(0)
    mmc = tmp_path / "pairs.npz"
    np.savez(mmc, **_tiny_mmc())
    code, out, err = run(capsys, "solve", mmc, "--method", "fast", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["instance"]["family"] == "mmc" and doc["reference"] is None
    assert col.instance_family(mmc) == "mmc"

    slr = tmp_path / "labels.npz"
    X = rng.randn(20, 3)
    np.savez(slr, X=X, y=np.arange(20) % 2)
    assert col.instance_family(slr) == "slr"
    out = help_text(capsys, "solve", slr, "--help")
    assert "options of family 'slr'" in out
    code, out, err = run(capsys, "solve", slr, "--method", "newton", "--delta1=2")
    assert code == 0, err
    assert "(slr," in out

    qwise = tmp_path / "quads.npz"
    np.savez(qwise, **_tiny_qwise())
    assert col.load_instance_file(qwise).family == "qwise"


def test_a_file_of_no_single_family_is_refused(tmp_path, capsys):
    path = tmp_path / "only_x.npz"
    np.savez(path, X=np.zeros((4, 2)))
    code, out, err = run(capsys, "solve", path)
    assert code == 2 and out == ""
    assert "only_x.npz" in err and "cannot tell the family" in err
    assert "--family" in err
    # --family says it; then the family's own checks speak
    code, _, err = run(capsys, "solve", path, "--family", "slr")
    assert code == 2 and "missing array 'y'" in err


def test_family_given_overrides_the_arrays(tmp_path, capsys):
    path = tmp_path / "x.npz"
    np.savez(path, **_tiny_mmc())
    assert col.instance_family(path, "qwise") == "qwise"
    code, _, err = run(capsys, "solve", path, "--family", "qwise")
    assert code == 2 and "missing array 'quadruplets'" in err


# ---------------------------------------------------------------------------
# verify: a family column
# ---------------------------------------------------------------------------


def test_verify_has_a_family_column(two_family_root, capsys):
    code, out, err = run(capsys, "verify", "--root", two_family_root,
                         "--no-progress")
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["family", "instance", "method"]
    rows = [ln.split() for ln in lines[2:] if ln.split()[1:2] == ["tiny"]]
    got = {(r[0], r[2]) for r in rows}
    want = {("qwise", m) for m in col.METHODS["qwise"]} | {
        ("mmc", m) for m in col.METHODS["mmc"]}
    assert got == want
    code, out, _ = run(capsys, "verify", "--root", two_family_root, "--family",
                       "mmc", "--json", "--no-progress")
    assert {r["family"] for r in json.loads(out)} == {"mmc"}


# ---------------------------------------------------------------------------
# bench: the collection by default
# ---------------------------------------------------------------------------


@pytest.fixture
def recorded_bench(monkeypatch):
    """Record which benchmark ``bench`` runs, without running it."""
    calls = []

    def collection(root, family=None, methods=None, only=None, **kw):
        calls.append(("collection", Path(root), family, methods, only, kw))
        return []

    def synthetic(sizes, methods, **kw):
        # sizes None: each model's default sizes (qbench.MODEL_SIZES)
        calls.append(("synthetic", None if sizes is None else tuple(sizes),
                      tuple(methods), kw))
        return []

    monkeypatch.setattr(bench, "run_collection_bench", collection)
    monkeypatch.setattr(qbench, "run_bench", synthetic)
    return calls


def test_bench_without_options_times_the_collection(recorded_bench, capsys):
    code, out, err = run(capsys, "bench", "--root", REPO)
    assert code == 0, err
    ((kind, root, family, methods, only, kw),) = recorded_bench
    assert kind == "collection" and root == REPO
    assert family is None and methods is None and only is None
    assert kw["repeat"] == 1
    assert out.splitlines()[0].split()[:3] == ["family", "instance", "method"]


def test_bench_collection_filters(recorded_bench, capsys):
    code, _, err = run(capsys, "bench", "--root", REPO, "--suite", "collection",
                       "--family", "mmc", "--only", "iris_full", "--methods",
                       "exact,fast", "--repeat", "3")
    assert code == 0, err
    ((kind, _, family, methods, only, kw),) = recorded_bench
    assert (kind, family, methods, only, kw["repeat"]) == (
        "collection", ["mmc"], ["exact", "fast"], ["iris_full"], 3)
    # a family without a synthetic benchmark has its collection instances
    code, _, err = run(capsys, "bench", "--root", REPO, "--suite", "collection",
                       "--family", "constraintdml")
    assert code == 0, err
    assert recorded_bench[-1][:3] == ("collection", REPO, ["constraintdml"])


def test_the_qwise_scaling_benchmark_needs_an_explicit_option(recorded_bench,
                                                              capsys):
    code, _, err = run(capsys, "bench", "--family", "qwise")
    assert code == 0
    assert recorded_bench[-1][:3] == ("synthetic", None, tuple(qbench.BENCH_METHODS))
    assert "Qwise scaling benchmark" in err
    code, _, _ = run(capsys, "bench", "--sizes", "4x30", "--methods", "exact")
    assert code == 0 and recorded_bench[-1][:3] == ("synthetic", ((4, 30),),
                                                    ("exact",))
    code, _, _ = run(capsys, "bench", "--suite", "synthetic")
    assert code == 0 and recorded_bench[-1][1] is None


@pytest.mark.parametrize("argv, match", [
    (["--suite", "collection", "--sizes", "4x30"], "--sizes: not used by the collection"),
    (["--max-seconds", "10"], "--max-seconds: not used by the collection"),
    (["--seed", "1"], "--seed: not used by the collection"),
    (["--family", "mmc", "--sizes", "4x30"], "--sizes: only for the Qwise benchmark"),
    (["--family", "mmc", "--methods", "fast"], "--methods: only for the Qwise"),
    (["--family", "mmc", "--only", "iris_full"], "--only: only with the collection"),
    (["--datasets", "iris"], "--datasets: only with --suite real"),
    (["--repeat", "0"], "--repeat: must be >= 1"),
    (["--family", "mmc", "--max-seconds=nan"], "--max-seconds: must be finite"),
    (["--family", "mmc", "--max-seconds=0"], "--max-seconds: must be > 0"),
    (["--family", "constraintdml"], "--family: constraintdml has no synthetic"),
    (["--methods", "sgd"], "--methods: unknown ['sgd']"),
])
def test_bench_refuses_options_its_suite_does_not_use(recorded_bench, capsys, argv,
                                                      match):
    code, out, err = run(capsys, "bench", "--root", REPO, *argv)
    assert code == 2 and out == "" and match in err, err
    assert recorded_bench == []


def test_collection_bench_runs(two_family_root, capsys):
    code, out, err = run(capsys, "bench", "--root", two_family_root, "--family",
                         "mmc", "--suite", "collection", "--json")
    assert code == 0, err
    rows = json.loads(out)
    methods = ["exact"] + [m for m in col.METHODS["mmc"]]  # diagonal: all apply
    assert [(r["family"], r["instance"], r["method"]) for r in rows] == [
        ("mmc", "tiny", m) for m in methods]
    assert all(r["error"] is None and r["seconds"] > 0 for r in rows)
    assert all(r["gap_kind"] == "vs reference" for r in rows)
    assert rows[0]["speedup_exact"] == pytest.approx(1.0)
    table = bench.format_collection_table(rows)
    assert table.splitlines()[0].split()[:3] == ["family", "instance", "method"]
    with pytest.raises(ValueError, match="methods: unknown"):
        bench.run_collection_bench(two_family_root, methods=["sgd"])


# ---------------------------------------------------------------------------
# reference / make-problems: never into the default collection by accident
# ---------------------------------------------------------------------------


def _snapshot(root):
    return {p: p.read_bytes() for p in sorted(Path(root).rglob("*")) if p.is_file()}


def test_reference_refuses_the_default_root(two_family_root, clean_env,
                                            monkeypatch, capsys):
    before = _snapshot(two_family_root)
    monkeypatch.chdir(two_family_root)  # found as "the current directory"
    code, out, err = run(capsys, "reference", "--family", "mmc")
    assert code == 2 and out == ""
    assert f"refusing to write into {two_family_root / 'reference'}/" in err
    assert "--in-place" in err and "--out DIR" in err
    monkeypatch.setenv("CVXMETRIC_ROOT", str(two_family_root))
    code, _, err = run(capsys, "reference")
    assert code == 2 and "$CVXMETRIC_ROOT" in err and "--in-place" in err
    assert _snapshot(two_family_root) == before
    # reading is fine, and so is a dry run
    code, out, _ = run(capsys, "reference", "--dry-run", "--family", "mmc")
    assert code == 0 and "dry run: nothing written" in out
    assert _snapshot(two_family_root) == before


def test_reference_in_place(two_family_root, clean_env, monkeypatch, capsys):
    monkeypatch.chdir(two_family_root)
    record = col.reference_dir(two_family_root, "mmc") / "tiny.json"
    record.unlink()
    code, out, err = run(capsys, "reference", "--in-place", "--family", "mmc")
    assert code == 0, err
    assert f"written to {col.reference_dir(two_family_root, 'mmc')}" in out
    assert f"to {col.reference_dir(two_family_root, 'mmc')}" in err
    assert record.is_file()


def test_reference_out_leaves_the_collection_alone(two_family_root, tmp_path_factory,
                                                   clean_env, monkeypatch, capsys):
    before = _snapshot(two_family_root)
    out_dir = tmp_path_factory.mktemp("out")
    monkeypatch.chdir(two_family_root)
    code, out, err = run(capsys, "reference", "--out", out_dir, "--family", "qwise")
    assert code == 0, err
    assert f"written to {col.reference_dir(out_dir, 'qwise')}" in out
    assert sorted(p.name for p in col.reference_dir(out_dir, "qwise").iterdir()) == [
        "tiny.json", "tiny.npz"]
    assert _snapshot(two_family_root) == before
    # the written reference is the collection's instance's
    inst = col.load_instance(two_family_root, "qwise", "tiny")
    assert col.reference_status(out_dir, inst)[0] == "current"


def test_in_place_and_out_exclude_each_other(tmp_path, capsys):
    for command in ("reference", "make-problems"):
        assert main([command, "--in-place", "--out", str(tmp_path)]) == 2
        assert "not allowed with argument" in capsys.readouterr().err


def test_make_problems_refuses_the_default_root(tmp_path, clean_env, monkeypatch,
                                                capsys):
    (tmp_path / "problems").mkdir()
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "make-problems", "slr")
    assert code == 2 and out == ""
    assert f"refusing to write into {tmp_path.resolve() / 'problems'}/" in err
    assert "--in-place" in err
    assert list((tmp_path / "problems").iterdir()) == []
    # --check writes nothing and needs no flag
    code, out, _ = run(capsys, "make-problems", "slr", "--check")
    assert code == 1 and "check only, nothing written" in out
    assert list((tmp_path / "problems").iterdir()) == []


def test_make_problems_out_and_in_place(tmp_path, clean_env, monkeypatch, capsys):
    out_dir = tmp_path / "elsewhere"
    code, out, err = run(capsys, "make-problems", "slr", "--out", out_dir)
    assert code == 0, err
    where = col.problems_dir(out_dir, "slr")
    assert f"slr: {where} (written)" in out and f"to {where}" in err
    assert col.instance_names(out_dir, "slr")
    assert f"cvxmetric reference --root {out_dir}" in out
    # --in-place on the collection found in the current directory
    monkeypatch.chdir(out_dir)
    code, out, err = run(capsys, "make-problems", "slr", "--in-place")
    assert code == 0, err
    assert "unchanged" in out and "changed" not in out.replace("unchanged", "")
    # an unknown family is named
    code, _, err = run(capsys, "make-problems", "nope", "--out", out_dir)
    assert code == 2 and "FAMILY: unknown family 'nope'" in err


def test_the_repository_is_not_written_by_default(clean_env, monkeypatch, capsys):
    before = {p: p.stat().st_mtime_ns for p in (REPO / "reference").rglob("*")}
    monkeypatch.chdir(REPO)
    for command in ("reference", "make-problems"):
        code, out, err = run(capsys, command)
        assert code == 2 and out == "" and "--in-place" in err
    after = {p: p.stat().st_mtime_ns for p in (REPO / "reference").rglob("*")}
    assert after == before


def test_parser_defaults_match_the_readme():
    """README: `cvxmetric bench` times the methods on the collection."""
    args = build_parser().parse_args(["bench"])
    assert args.suite is None and args.family is None and args.sizes is None
    readme = (REPO / "README.md").read_text()
    line = next(ln for ln in readme.splitlines() if ln.startswith("| `cvxmetric bench`"))
    assert "on the collection" in line


# ---------------------------------------------------------------------------
# every command says what it did: refusals up front, true labels
# ---------------------------------------------------------------------------


@pytest.fixture
def nothing_runs(monkeypatch):
    """Every benchmark runner and the real-data suite fail the test if called."""
    import importlib

    from cvxmetric import cli
    from cvxmetric.bench import conformance, contended, scaling

    def ran(*args, **kwargs):
        raise AssertionError("a run started although the command was refused")

    monkeypatch.setattr(bench, "run_collection_bench", ran)
    monkeypatch.setattr(qbench, "run_bench", ran)
    monkeypatch.setattr(conformance, "run_suite", ran)
    monkeypatch.setattr(contended, "run_contended", ran)
    monkeypatch.setattr(scaling, "run_scaling", ran)
    for fam in cli._bench_families():
        if fam != "qwise":
            mod = importlib.import_module(f"cvxmetric.bench.{fam}")
            monkeypatch.setattr(mod, "run_bench", ran)


@pytest.mark.parametrize("argv, option", [
    (["--suite", "real", "--seeds", "a"], "--seeds"),
    (["--suite", "real", "--seeds", "1.5"], "--seeds"),
    (["--suite", "real", "--seeds", "-1"], "--seeds"),
    (["--suite", "real", "--seeds", ","], "--seeds"),
    (["--suite", "real", "--seeds", "0,,1"], "--seeds"),
    (["--suite", "real", "--seeds", "0,0"], "--seeds"),
    (["--suite", "real", "--datasets", ","], "--datasets"),
    (["--suite", "real", "--datasets", "mnist"], "--datasets"),
    (["--suite", "real", "--families", ","], "--families"),
    (["--suite", "real", "--family", ","], "--family"),
    (["--suite", "real", "--estimators", ","], "--estimators"),
    (["--suite", "real", "--estimators", "MildML"], "--estimators"),
    (["--contended", "--repeat", "-1"], "--repeat"),
    (["--contended", "--repeat", "0"], "--repeat"),
    (["--contended", "--repeat", "x"], "--repeat"),
    (["--scaling", "--seed", "-1"], "--seed"),
    (["--family", "ldml", "--seed", "-1"], "--seed"),
    (["--family", "ldml", "--seed", "4294967296"], "--seed"),
    (["--family", "mmc", "--max-seconds", "inf"], "--max-seconds"),
    (["--family", "mmc", "--max-seconds", "-2"], "--max-seconds"),
    (["--sizes", "0x10"], "--sizes"),
    (["--sizes", "2.5x10"], "--sizes"),
    (["--sizes", ","], "--sizes"),
    (["--methods", ","], "--methods"),
    (["--subgradient-maxiter", "0"], "--subgradient-maxiter"),
])
def test_bench_refuses_malformed_values_naming_the_option(nothing_runs, capsys,
                                                          argv, option):
    code, out, err = run(capsys, "bench", "--root", REPO, *argv)
    assert code == 2 and out == ""
    assert f"argument {option}: " in err
    assert "invalid literal" not in err and "Traceback" not in err


@pytest.mark.parametrize("argv, match", [
    # a selection without any case
    (["--suite", "real", "--estimators", "LDML", "--families", "qwise"],
     "--suite real: the selection has no case"),
    (["--suite", "real", "--family", "mmc", "--methods", "lowrank"],
     "--suite real: the selection has no case"),
    (["--suite", "collection", "--family", "omdml", "--methods", "fast"],
     "--family/--methods: no selected instance has method(s) ['fast']"),
    # --sizes: the Qwise benchmark only, also among several families
    (["--family", "qwise,mmc", "--sizes", "20x1000"],
     "--sizes: only for the Qwise benchmark"),
    # both spellings of the family option
    (["--family", "mmc", "--families", "slr"], "--families: a deprecated spelling"),
    (["--family", "mmc,mmc"], "argument --family: given twice: ['mmc']"),
    (["--family", "mmc", "--family", "mmc"], "--family: families given twice"),
    (["--contended", "--family", "ldml"], "--family: --contended has no case of ldml"),
    (["--scaling", "--families", "omdml"],
     "--families: --scaling has no case of omdml"),
    (["--family", "mmc", "--no-isolate", "--max-seconds", "5"],
     "--max-seconds: needs isolated runs"),
    (["--suite", "real", "--seed", "1"], "--seed: not used by --suite real"),
])
def test_bench_refuses_what_it_would_not_run(nothing_runs, capsys, argv, match):
    code, out, err = run(capsys, "bench", "--root", REPO, *argv)
    assert code == 2 and out == "" and match in err, err


def test_bench_help_lists_the_families_of_each_mode(capsys):
    from cvxmetric import cli
    from cvxmetric.bench import conformance, contended, scaling

    out = " ".join(help_text(capsys, "bench", "--help").split())
    assert "null" not in out
    assert "[--families" not in out  # the alias is not offered in the usage line
    assert "(--families is a deprecated spelling)" in out
    for where, fams in [
            ("Synthetic benchmarks (the default with --family):",
             cli._bench_families()),
            ("collection suite:", sorted(col.FAMILIES)),
            ("--suite real:", list(conformance.FAMILIES)),
            ("--contended:", list(contended.CASES)),
            ("--scaling:", list(scaling.GRIDS))]:
        assert f"{where} {', '.join(fams)}" in out
    # --sizes names the benchmarks that refuse it
    others = [f for f in cli._bench_families() if f != "qwise"]
    assert f"The benchmarks of {', '.join(others)} run fixed cases" in out


def test_bench_family_takes_a_list_and_the_old_spelling(monkeypatch, capsys):
    import importlib

    called = []

    def fake(family):
        def run_bench(max_seconds=None, seed=0, callback=None, **kw):
            called.append((family, seed, kw))
            row = bench.bench_row({"objective": 1.0, "seconds": 0.1,
                                   "status": "optimal", "cert_rel_gap": 1e-9},
                                  None, problem=f"{family}-synthetic",
                                  method="fast", d=2, N=3, n=4)
            callback(row)
            return [row]
        return run_bench

    for fam in ("mmc", "slr"):
        mod = importlib.import_module(f"cvxmetric.bench.{fam}")
        monkeypatch.setattr(mod, "run_bench", fake(fam))
    code, out, err = run(capsys, "bench", "--family", "mmc,slr", "--seed", "3")
    assert code == 0, err
    assert [c[:2] for c in called] == [("mmc", 3), ("slr", 3)]
    assert "mmc-synthetic" in out and "slr-synthetic" in out
    called.clear()
    code, out, err = run(capsys, "bench", "--families", "slr", "--family", "mmc")
    assert code == 2 and called == []
    code, out, err = run(capsys, "bench", "--families", "slr", "--no-isolate")
    assert code == 0 and "--families is deprecated" in err
    assert called == [("slr", 0, {"isolate": False})]


def test_bench_exits_1_when_a_run_failed(monkeypatch, capsys):
    from cvxmetric.bench import mmc as mmc_bench

    def run_bench(max_seconds=None, seed=0, callback=None, **kw):
        return [bench.bench_row({"error": "exit code 1: ValueError: boom"}, None,
                                problem="mmc-synthetic", method="fast", d=2, N=3,
                                n=4)]

    monkeypatch.setattr(mmc_bench, "run_bench", run_bench)
    code, out, err = run(capsys, "bench", "--family", "mmc")
    assert code == 1 and "error" in out
    assert "1 of 1 runs failed" in err and "boom" in err


def test_bench_suite_real_takes_the_family_option(monkeypatch, capsys):
    from cvxmetric.bench import conformance

    seen = {}

    def run_suite(datasets, seeds, families, **kw):
        seen.update(datasets=datasets, seeds=seeds, families=families, **kw)
        return []

    monkeypatch.setattr(conformance, "run_suite", run_suite)
    monkeypatch.setattr(conformance, "report", lambda rows: "report")
    code, out, err = run(capsys, "bench", "--suite", "real", "--family", "mmc",
                         "--datasets", "iris", "--seeds", "1,2", "--estimators",
                         "MMC", "--methods", "fast")
    assert code == 0, err
    assert (seen["datasets"], seen["seeds"], seen["families"]) == (
        ["iris"], [1, 2], ["mmc"])
    assert seen["estimators"] == ["MMC"] and seen["methods"] == ["fast"]


def test_verify_refuses_unknown_methods_up_front(capsys, monkeypatch):
    def ran(*args, **kwargs):
        raise AssertionError("verify ran although its method was refused")

    monkeypatch.setattr(col, "verify", ran)
    code, out, err = run(capsys, "verify", "--root", REPO, "--method", "bogus")
    assert code == 2 and out == ""
    assert "argument --method: unknown method 'bogus'" in err
    code, out, err = run(capsys, "verify", "--root", REPO, "--family", "qwise",
                         "--method", "newton")
    assert code == 2 and out == ""
    assert "--method: 'newton' is not a method of family 'qwise'" in err


def test_verify_a_family_without_fast_method_verifies_its_exact_path(capsys):
    assert col.METHODS["omdml"] == {}  # the premise: OMDML has none
    code, out, err = run(capsys, "verify", "--root", REPO, "--family", "omdml",
                         "--only", "synthetic_skewed_theta", "--no-progress")
    assert code == 0, out
    rows = [ln.split() for ln in out.splitlines()
            if ln.split()[:2] == ["omdml", "synthetic_skewed_theta"]]
    assert [r[2] for r in rows] == ["exact"] and rows[0][-1] == "ok"
    assert "1/1 passed" in out and "0/0" not in out
    assert "omdml: no fast method is registered; its exact path was verified" in out
    assert "speedup" not in out.splitlines()[0]  # nothing to compare with


def test_verify_an_empty_selection_is_an_error(two_family_root, capsys):
    code, out, err = run(capsys, "verify", "--root", two_family_root, "--method",
                         "subgradient", "--family", "mmc")
    assert code == 2 and out == "" and "--method" in err
    # newton is an mmc method, but the qwise instance has none: only mmc rows
    code, out, err = run(capsys, "verify", "--root", two_family_root, "--method",
                         "lowrank", "--no-progress")
    assert code == 2 and out == "" and "nothing to verify" in err


def test_verify_speedup_only_from_times_of_the_same_run(two_family_root, capsys):
    code, out, _ = run(capsys, "verify", "--root", two_family_root, "--family",
                       "mmc", "--no-progress")
    assert code == 0, out
    assert "speedup" not in out.splitlines()[0]
    assert "speedup: not shown, the exact path was not run" in out
    code, out, _ = run(capsys, "verify", "--root", two_family_root, "--family",
                       "mmc", "--with-exact", "--json", "--no-progress")
    rows = json.loads(out)
    assert code == 0 and rows[0]["method"] == "exact"
    for r in rows[1:]:
        assert r["exact_seconds"] == rows[0]["seconds"]
        assert r["speedup"] == pytest.approx(rows[0]["seconds"] / r["seconds"])
    code, out, _ = run(capsys, "verify", "--root", two_family_root, "--family",
                       "mmc", "--with-exact", "--no-progress")
    assert "speedup" in out.splitlines()[0]
    assert "both measured in this run" in out and "stored exact" not in out


def test_verify_progress_bar_counts_the_rows(two_family_root, monkeypatch):
    import tqdm

    bars = []

    class Bar:
        def __init__(self, total, **kw):
            self.total, self.done = total, 0
            bars.append(self)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def update(self, n):
            self.done += n

        def set_description(self, text):
            pass

    monkeypatch.setattr(tqdm, "tqdm", Bar)
    # a stale reference is one row
    inst = col.load_instance(two_family_root, "qwise", "tiny")
    col.write_instance(two_family_root, "qwise", "tiny", inst.arrays,
                       hyperparameters={"regularizer": "trace", "C_q": 3.0})
    rows = col.verify(two_family_root, progress=True, with_exact=True)
    (bar,) = bars
    assert bar.total == bar.done == len(rows)
    assert [r.method for r in rows if r.family == "qwise"] == ["-"]


def test_list_shows_the_regularizer_solved_with(capsys):
    code, out, _ = run(capsys, "list", "--root", REPO, "--family", "ldml")
    assert code == 0
    for name in col.instance_names(REPO, "ldml"):
        hp = col.load_instance(REPO, "ldml", name).hyperparameters
        line = next(ln for ln in out.splitlines() if f" {name} " in ln)
        want = "none (lam=0)" if hp["lam"] == 0 else hp["regularizer"]
        assert f"  {want}  " in line
    assert any("noreg" in n for n in col.instance_names(REPO, "ldml"))


@pytest.mark.parametrize("command", ["list", "verify", "solve", "reference",
                                     "make-problems", "bench"])
def test_no_null_in_help(capsys, command):
    assert "null" not in help_text(capsys, command, "--help")


@pytest.mark.parametrize("family", sorted(BUNDLED))
def test_no_null_in_a_family_help(capsys, family):
    out = help_text(capsys, "solve", bundled(family), "--help")
    assert "null" not in out
    for name, default in col.FAMILIES[family].hyperparameters.items():
        if default is None:
            flag = "--" + name.replace("_", "-")
            assert re.search(rf"{re.escape(flag)} \w+\s+.*not set by default", out)

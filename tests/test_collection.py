"""The problem collection: formats, validation, atomic writes, references.

Everything here runs on tiny temporary collections (n = 18, d = 3) except
the checks of the bundled collection, which only read files.
"""

import dataclasses
import json
import os
from pathlib import Path

import numpy as np
import pytest

from cvxmetric import collection as col
from cvxmetric._tolerances import REFERENCE_AGREEMENT, TOLERANCES
from cvxmetric.constraints import pairs_from_labels, quadruplets_from_labels
from cvxmetric.qwise import QwiseData

REPO = Path(__file__).resolve().parents[1]


def tiny_arrays(seed=0, n_quads=20, with_pairs=False):
    """18 samples in 3 Gaussian classes (d = 3) and class quadruplets."""
    rng = np.random.RandomState(seed)
    y = np.repeat(np.arange(3), 6)
    X = 1.5 * rng.randn(3, 3)[y] + rng.randn(len(y), 3)
    q = quadruplets_from_labels(y, n_quads, random_state=seed)
    arrays = {"X": X, "quadruplets": q, "delta": np.ones(n_quads)}
    if with_pairs:
        p, lab = pairs_from_labels(y, 10, random_state=seed)
        arrays.update(pairs=p, pair_labels=lab)
    return arrays


HP = {"regularizer": "trace", "C_q": 1.0}
HP_PAIRS = {"regularizer": "frobenius", "C_q": 1.0, "C_p": 0.5, "u": 1.0, "l": 3.0}


@pytest.fixture
def root(tmp_path):
    """A collection with two Qwise instances (Eq. 8 and Eq. 11)."""
    col.write_instance(tmp_path, "qwise", "tiny", tiny_arrays(),
                       hyperparameters=HP, description="tiny Eq. 8",
                       source="synthetic")
    col.write_instance(tmp_path, "qwise", "tiny_pairs",
                       tiny_arrays(1, with_pairs=True), hyperparameters=HP_PAIRS,
                       description="tiny Eq. 11", source="synthetic")
    return tmp_path


def no_temp_files(folder):
    return [p.name for p in Path(folder).iterdir() if p.name.startswith(".")]


# ---------------------------------------------------------------------------
# Instances
# ---------------------------------------------------------------------------


def test_round_trip(root):
    arrays = tiny_arrays(1, with_pairs=True)
    inst = col.load_instance(root, "qwise", "tiny_pairs")
    assert set(inst.arrays) == set(arrays)
    for key, arr in arrays.items():
        np.testing.assert_array_equal(inst.arrays[key], arr)
    assert inst.arrays["X"].dtype == np.float64
    assert inst.arrays["quadruplets"].dtype == np.int64
    assert inst.hyperparameters == {**col.FAMILIES["qwise"].hyperparameters,
                                    **HP_PAIRS}
    assert inst.sha256 == col.sha256_file(inst.path)
    assert inst.sizes == {"n": 18, "d": 3, "n_quadruplets": 20, "n_pairs": 10}
    assert inst.source == "synthetic" and inst.description == "tiny Eq. 11"
    data = inst.to_data()
    assert isinstance(data, QwiseData)
    assert data.n_constraints == 30 and data.C_p == 0.5 and data.u == 1.0
    # the manifest lists both, in order, with the file's hash
    man = col.read_manifest(root, "qwise")
    assert [e["name"] for e in man["instances"]] == ["tiny", "tiny_pairs"]
    assert man["instances"][1]["sha256"] == inst.sha256


def test_load_instance_file_uses_manifest_and_overrides(root):
    path = col.problems_dir(root, "qwise") / "tiny_pairs.npz"
    inst = col.load_instance_file(path)
    assert inst.name == "tiny_pairs" and inst.hyperparameters["C_p"] == 0.5
    inst = col.load_instance_file(path, hyperparameters={"C_p": 2.0, "u": None})
    assert inst.hyperparameters["C_p"] == 2.0 and inst.hyperparameters["u"] == 1.0


def test_load_bare_file_without_manifest(tmp_path):
    path = tmp_path / "bare.npz"
    np.savez(path, **tiny_arrays())
    inst = col.load_instance_file(path, hyperparameters={"regularizer": "frobenius"})
    assert inst.family == "qwise" and inst.name == "bare"
    assert inst.to_data().regularizer == "frobenius"


def test_writes_are_deterministic(tmp_path):
    a = col.write_instance(tmp_path / "a", "qwise", "t", tiny_arrays(),
                           hyperparameters=HP)
    b = col.write_instance(tmp_path / "b", "qwise", "t", tiny_arrays(),
                           hyperparameters=HP)
    assert a.sha256 == b.sha256
    assert a.path.read_bytes() == b.path.read_bytes()


def test_rewrite_replaces_the_entry(root):
    col.write_instance(root, "qwise", "tiny", tiny_arrays(5), hyperparameters=HP)
    man = col.read_manifest(root, "qwise")
    assert [e["name"] for e in man["instances"]] == ["tiny", "tiny_pairs"]
    inst = col.load_instance(root, "qwise", "tiny")
    np.testing.assert_array_equal(inst.arrays["X"], tiny_arrays(5)["X"])


def test_object_array_is_rejected(tmp_path):
    path = tmp_path / "pickled.npz"
    arrays = tiny_arrays()
    arrays["delta"] = np.array([1.0, "a"] * 10, dtype=object)
    np.savez(path, **arrays)  # numpy pickles object arrays on save
    with pytest.raises(col.InstanceFormatError) as exc:
        col.load_instance_file(path)
    msg = str(exc.value)
    assert str(path) in msg and "'delta'" in msg and "pickle" in msg


def test_not_an_npz_is_rejected(tmp_path):
    path = tmp_path / "junk.npz"
    path.write_bytes(b"not a zip file")
    with pytest.raises(col.InstanceFormatError, match="junk.npz"):
        col.load_instance_file(path)
    single = tmp_path / "single.npz"
    with open(single, "wb") as f:
        np.save(f, np.zeros(3))
    with pytest.raises(col.InstanceFormatError, match="single array"):
        col.load_instance_file(single)


def _broken(kind):
    a = tiny_arrays(with_pairs=kind.startswith("pairs"))
    if kind == "missing":
        del a["delta"]
    elif kind == "unknown":
        a["pair_label"] = np.ones(3, int)
    elif kind == "float_indices":
        a["quadruplets"] = a["quadruplets"].astype(float)
    elif kind == "int_samples":
        a["X"] = np.round(a["X"]).astype(int)
    elif kind == "shape":
        a["delta"] = np.ones(7)
    elif kind == "width":
        a["quadruplets"] = a["quadruplets"][:, :3]
    elif kind == "nan":
        a["X"][0, 0] = np.nan
    elif kind == "range":
        a["quadruplets"][0, 0] = 99
    elif kind == "pairs_alone":
        del a["pair_labels"]
    elif kind == "pairs_labels":
        a["pair_labels"][0] = 2
    return a


@pytest.mark.parametrize("kind, match", [
    ("missing", "missing array 'delta'"),
    ("unknown", "unknown array"),
    ("float_indices", "'quadruplets' has dtype float64"),
    ("int_samples", "'X' has dtype int64"),
    ("shape", "'delta' has shape"),
    ("width", "'quadruplets' has shape"),
    ("nan", "'X' contains NaN"),
    ("range", "out of range"),
    ("pairs_alone", "together"),
    ("pairs_labels", r"\+1"),
])
def test_invalid_instances_are_rejected(tmp_path, kind, match):
    arrays = _broken(kind)
    hp = HP_PAIRS if kind.startswith("pairs") else HP
    # on write: nothing reaches disk
    with pytest.raises(col.InstanceFormatError, match=match):
        col.write_instance(tmp_path, "qwise", "bad", arrays, hyperparameters=hp)
    assert not (col.problems_dir(tmp_path, "qwise") / "bad.npz").exists()
    # on read: the message names the file
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    with pytest.raises(col.InstanceFormatError, match=match) as exc:
        col.load_instance_file(path, hyperparameters=hp).to_data()
    assert "bad.npz" in str(exc.value)


def test_bad_hyperparameters_are_rejected(tmp_path):
    with pytest.raises(col.InstanceFormatError, match="unknown hyperparameter"):
        col.write_instance(tmp_path, "qwise", "t", tiny_arrays(),
                           hyperparameters={"regulariser": "trace"})
    with pytest.raises(col.InstanceFormatError, match="regularizer"):
        col.write_instance(tmp_path, "qwise", "t", tiny_arrays(),
                           hyperparameters={"regularizer": "nuclear"})
    with pytest.raises(col.InstanceFormatError, match="u <= l"):
        col.write_instance(tmp_path, "qwise", "t", tiny_arrays(with_pairs=True),
                           hyperparameters={**HP_PAIRS, "u": 5.0, "l": 1.0})
    with pytest.raises(col.InstanceFormatError, match="name"):
        col.write_instance(tmp_path, "qwise", "../escape", tiny_arrays(),
                           hyperparameters=HP)


def test_modified_instance_file_is_detected(root):
    path = col.problems_dir(root, "qwise") / "tiny.npz"
    arrays = tiny_arrays()
    arrays["delta"] = 2 * arrays["delta"]
    col.atomic_write_bytes(path, col.npz_bytes(arrays))
    with pytest.raises(col.InstanceFormatError, match="does not match the manifest"):
        col.load_instance(root, "qwise", "tiny")
    with pytest.raises(col.InstanceFormatError, match="tiny.npz"):
        col.load_instance_file(path)


def test_manifest_errors_name_the_field(root):
    man_path = col.problems_dir(root, "qwise") / "manifest.json"
    man = json.loads(man_path.read_text())
    del man["instances"][1]["sha256"]
    man_path.write_text(json.dumps(man))
    with pytest.raises(col.InstanceFormatError,
                       match=r"instances\[1\]: missing field 'sha256'"):
        col.read_manifest(root, "qwise")
    man_path.write_text("{not json")
    with pytest.raises(col.InstanceFormatError, match="invalid JSON"):
        col.read_manifest(root, "qwise")


# ---------------------------------------------------------------------------
# Atomic writes
# ---------------------------------------------------------------------------


def test_atomic_write_leaves_no_temp_files(root, tmp_path):
    folder = col.problems_dir(root, "qwise")
    assert no_temp_files(folder) == []
    target = tmp_path / "out" / "file.bin"
    col.atomic_write_bytes(target, b"one")
    col.atomic_write_bytes(target, b"two")
    assert target.read_bytes() == b"two"
    assert no_temp_files(target.parent) == []


def test_failed_atomic_write_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "file.bin"
    col.atomic_write_bytes(target, b"old")

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(col.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        col.atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"old"
    assert no_temp_files(tmp_path) == []


def test_npz_bytes_refuses_objects():
    with pytest.raises(ValueError, match="object"):
        col.npz_bytes({"a": np.array([None, 1], dtype=object)})


# ---------------------------------------------------------------------------
# References
# ---------------------------------------------------------------------------


@pytest.fixture
def root_with_refs(root):
    outcomes = col.make_references(root, "qwise")
    assert all(o.accepted and o.written for o in outcomes), [
        o.reasons for o in outcomes]
    return root


def test_reference_round_trip(root_with_refs):
    root = root_with_refs
    inst = col.load_instance(root, "qwise", "tiny_pairs")
    ref = col.read_reference(root, inst)
    rec = ref.record
    assert ref.M.shape == (3, 3)
    assert rec["instance"]["sha256"] == inst.sha256
    assert rec["certificate"]["passed"] and rec["certificate"]["solver"] == "CLARABEL"
    assert set(rec["solvers"]) == {"CLARABEL", "SCS"}
    assert rec["agreement"]["rel_diff"] <= REFERENCE_AGREEMENT
    assert rec["agreement"]["tolerance"] == REFERENCE_AGREEMENT
    assert ref.exact_seconds > 0
    assert {"cvxmetric", "cvxpy", "clarabel", "scs"} <= set(rec["versions"])
    # the stored objective is the objective of the stored matrix
    f = inst.spec.objective(inst.to_data(), ref.M)
    assert abs(f - ref.objective) <= TOLERANCES["exact"] * max(1.0, abs(f))
    assert col.reference_status(root, inst)[0] == "current"
    assert no_temp_files(col.reference_dir(root, "qwise")) == []
    # strict JSON: parseable without NaN/Infinity extensions
    json.loads(ref.path.read_text(), parse_constant=lambda c: pytest.fail(c))


def test_stale_reference_after_instance_change(root_with_refs):
    root = root_with_refs
    col.write_instance(root, "qwise", "tiny", tiny_arrays(7), hyperparameters=HP)
    inst = col.load_instance(root, "qwise", "tiny")
    with pytest.raises(col.StaleReferenceError, match="stale reference"):
        col.read_reference(root, inst)
    assert col.reference_status(root, inst)[0] == "stale"
    # the other instance is untouched
    other = col.load_instance(root, "qwise", "tiny_pairs")
    assert col.reference_status(root, other)[0] == "current"


def test_stale_reference_after_hyperparameter_change(root_with_refs):
    root = root_with_refs
    col.write_instance(root, "qwise", "tiny", tiny_arrays(),
                       hyperparameters={**HP, "C_q": 2.0})
    inst = col.load_instance(root, "qwise", "tiny")
    with pytest.raises(col.StaleReferenceError, match="hyperparameters"):
        col.read_reference(root, inst)


def test_missing_and_invalid_references(root_with_refs):
    root = root_with_refs
    inst = col.load_instance(root, "qwise", "tiny")
    folder = col.reference_dir(root, "qwise")
    # a matrix file that no longer matches its record
    col.atomic_write_bytes(folder / "tiny.npz", col.npz_bytes({"M": np.eye(3)}))
    assert col.reference_status(root, inst)[0] == "invalid"
    with pytest.raises(col.ReferenceFormatError, match="matrix.sha256"):
        col.read_reference(root, inst)
    # a record without its objective
    rec = json.loads((folder / "tiny_pairs.json").read_text())
    del rec["objective"]
    (folder / "tiny_pairs.json").write_text(json.dumps(rec))
    other = col.load_instance(root, "qwise", "tiny_pairs")
    with pytest.raises(col.ReferenceFormatError, match="missing field 'objective'"):
        col.read_reference(root, other)
    (folder / "tiny.json").unlink()
    assert col.reference_status(root, inst)[0] == "missing"
    with pytest.raises(col.MissingReferenceError, match="cvxmetric reference"):
        col.read_reference(root, inst)


def test_reference_rejected_when_solvers_disagree(root, monkeypatch):
    spec = col.FAMILIES["qwise"]

    def disagreeing(data, solver, tol):
        res = spec.reference_solve(data, solver, tol)
        if solver == "SCS":
            res.objective *= 1 + 10 * REFERENCE_AGREEMENT
        return res

    monkeypatch.setitem(col.FAMILIES, "qwise",
                        dataclasses.replace(spec, reference_solve=disagreeing))
    outcomes = col.make_references(root, "qwise", only="tiny")
    (o,) = outcomes
    assert not o.accepted and not o.written
    assert any("disagree" in r for r in o.reasons)
    assert not (col.reference_dir(root, "qwise") / "tiny.json").exists()


def test_reference_rejected_when_a_solver_fails(root, monkeypatch):
    spec = col.FAMILIES["qwise"]

    def failing(data, solver, tol):
        if solver == "SCS":
            raise col.SolverError("SCS: no convergence")
        return spec.reference_solve(data, solver, tol)

    monkeypatch.setitem(col.FAMILIES, "qwise",
                        dataclasses.replace(spec, reference_solve=failing))
    (o,) = col.make_references(root, "qwise", only=["tiny"])
    assert not o.accepted and any("SCS" in r for r in o.reasons)


# ---------------------------------------------------------------------------
# Root, registry, JSON
# ---------------------------------------------------------------------------


def test_find_root(tmp_path, monkeypatch):
    monkeypatch.delenv("CVXMETRIC_ROOT", raising=False)
    assert col.find_root(tmp_path) == tmp_path.resolve()
    with pytest.raises(col.CollectionError, match="--root"):
        col.find_root(tmp_path / "nope")
    monkeypatch.setenv("CVXMETRIC_ROOT", str(tmp_path))
    assert col.find_root() == tmp_path.resolve()
    monkeypatch.delenv("CVXMETRIC_ROOT")
    (tmp_path / "problems").mkdir()
    monkeypatch.chdir(tmp_path)
    assert col.find_root() == tmp_path.resolve()
    monkeypatch.chdir(tmp_path / "problems")
    assert col.find_root() == REPO  # the editable install's repository


def test_method_registry():
    assert set(col.METHODS["qwise"]) == {"fast", "subgradient"}
    for name, fn in col.METHODS["qwise"].items():
        assert callable(fn) and name in TOLERANCES


def test_jsonable():
    out = col.jsonable({"a": np.float64(-np.inf), "b": np.arange(2),
                        "c": (np.int32(1), np.bool_(True)), "d": float("nan")})
    assert out == {"a": None, "b": [0, 1], "c": [1, True], "d": None}
    json.dumps(out, allow_nan=False)


# ---------------------------------------------------------------------------
# Bundled instances
# ---------------------------------------------------------------------------


def test_bundled_collection_is_current():
    names = col.instance_names(REPO, "qwise")
    assert len(names) >= 6
    sources = set()
    for inst in col.iter_instances(REPO, "qwise"):
        sources.add(inst.source)
        assert inst.sizes["d"] <= 10 and inst.sizes["n_quadruplets"] <= 500
        status, ref = col.reference_status(REPO, inst)
        assert status == "current", ref
        assert ref.record["agreement"]["rel_diff"] <= REFERENCE_AGREEMENT
        assert ref.record["certificate"]["passed"]
    assert {"synthetic", "iris", "wine", "digits"} <= sources


def test_make_problems_is_deterministic(tmp_path):
    first = col.make_problems(tmp_path, "qwise")
    assert all(o["changed"] for o in first)
    again = col.make_problems(tmp_path, "qwise", check=True)
    assert [o["sha256"] for o in again] == [o["sha256"] for o in first]
    assert not any(o["changed"] for o in again)
    assert no_temp_files(col.problems_dir(tmp_path, "qwise")) == []
    # a user's own instance in the same manifest survives regeneration
    col.write_instance(tmp_path, "qwise", "mine", tiny_arrays(), hyperparameters=HP)
    col.make_problems(tmp_path, "qwise")
    assert "mine" in col.instance_names(tmp_path, "qwise")
    # the digits instance is the exact triplet reduction (i, j, i, k)
    q = col.load_instance(tmp_path, "qwise", "digits_triplets").arrays["quadruplets"]
    np.testing.assert_array_equal(q[:, 0], q[:, 2])
    assert os.path.getsize(col.problems_dir(tmp_path, "qwise") / "manifest.json") > 0

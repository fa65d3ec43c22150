"""Collection files on hostile or unlucky days.

Refused inputs (truncated archives, pickles, decompression bombs, path
traversal, symbolic links), writers killed between the two files of a pair
(an instance ``.npz`` and its manifest entry, a reference ``.npz`` and its
``.json``) and concurrent writers and readers.  Crashes are real: a forked
child is ended with ``os._exit`` just before its k-th rename or unlink, for
every k, and the collection is then read back.
"""

import json
import multiprocessing
import os
import shutil
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from cvxmetric import collection as col
from cvxmetric.cli import main
from cvxmetric.constraints import quadruplets_from_labels

HP = {"regularizer": "trace", "C_q": 1.0}
FORK = multiprocessing.get_context("fork")

pytestmark = pytest.mark.skipif(col.fcntl is None, reason="needs POSIX flock")


def arrays(seed=0, n=12, n_quads=10):
    """``n`` samples in 3 Gaussian classes (d = 3) and class quadruplets."""
    rng = np.random.RandomState(seed)
    y = np.arange(n) % 3
    X = 1.5 * rng.randn(3, 3)[y] + rng.randn(n, 3)
    q = quadruplets_from_labels(y, n_quads, random_state=seed)
    return {"X": X, "quadruplets": q, "delta": np.ones(n_quads)}


def leftovers(folder):
    """Temporary and staged files left in ``folder``."""
    return sorted(p.name for p in Path(folder).iterdir()
                  if p.name.endswith(".tmp") or ".staged-" in p.name)


@pytest.fixture
def root(tmp_path):
    col.write_instance(tmp_path, "qwise", "a", arrays(0), hyperparameters=HP)
    col.write_instance(tmp_path, "qwise", "b", arrays(1), hyperparameters=HP)
    return tmp_path


@pytest.fixture(scope="module")
def root_with_ref(tmp_path_factory):
    """Instances ``a`` and ``b``, a certified reference for ``a``."""
    path = tmp_path_factory.mktemp("refs")
    col.write_instance(path, "qwise", "a", arrays(0), hyperparameters=HP)
    col.write_instance(path, "qwise", "b", arrays(1), hyperparameters=HP)
    (outcome,) = col.make_references(path, "qwise", only="a")
    assert outcome.written, outcome.reasons
    return path


def cli_list(root, capsys):
    code = main(["list", "--root", str(root)])
    out, err = capsys.readouterr()
    return code, out + err


# ---------------------------------------------------------------------------
# Refused files
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("keep", [0.2, 0.5, 0.9, -1])
def test_truncated_instance_is_refused(root, keep):
    path = col.problems_dir(root, "qwise") / "a.npz"
    data = path.read_bytes()
    bare = root / "cut.npz"
    bare.write_bytes(data[:int(keep * len(data))] if keep > 0 else data[:keep])
    with pytest.raises(col.InstanceFormatError) as exc:
        col.load_instance_file(bare)
    assert "cut.npz" in str(exc.value)
    # the same file under its manifest entry: the hash check speaks first
    col.atomic_write_bytes(path, bare.read_bytes())
    with pytest.raises(col.InstanceFormatError, match="a.npz"):
        col.load_instance(root, "qwise", "a")


def test_truncated_reference_matrix_is_refused(root_with_ref, tmp_path):
    root = shutil.copytree(root_with_ref, tmp_path / "c")
    inst = col.load_instance(root, "qwise", "a")
    path = col.reference_dir(root, "qwise") / "a.npz"
    path.write_bytes(path.read_bytes()[:-30])
    status, detail = col.reference_status(root, inst)
    assert status == "invalid" and "a.npz" in detail
    with pytest.raises(col.ReferenceFormatError, match="a.npz"):
        col.read_npz(path, error=col.ReferenceFormatError)


class _Trap:
    """Unpickling it would create the directory ``marker``."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.mkdir, (self.marker,)


def test_pickles_are_never_loaded(tmp_path):
    marker = tmp_path / "unpickled"
    a = arrays()
    a["delta"] = np.array([_Trap(marker)] * len(a["delta"]), dtype=object)
    path = tmp_path / "trap.npz"
    np.savez(path, **a)  # numpy pickles object arrays on save
    with pytest.raises(col.InstanceFormatError) as exc:
        col.load_instance_file(path)
    msg = str(exc.value)
    assert "trap.npz" in msg and "'delta'" in msg and "pickle" in msg
    assert not marker.exists()


def test_decompression_bomb_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "bomb.npz"
    np.savez_compressed(path, X=np.zeros((2000, 1000)), quadruplets=np.zeros(
        (1, 4), dtype=int), delta=np.ones(1))  # 16 MB of zeros
    assert path.stat().st_size < 100_000
    monkeypatch.setattr(col, "MAX_NPZ_BYTES", 1 << 20)
    with pytest.raises(col.InstanceFormatError) as exc:
        col.load_instance_file(path)
    msg = str(exc.value)
    assert "bomb.npz" in msg and "limit of 1048576 bytes" in msg
    # the environment variable lifts (or lowers) the limit
    monkeypatch.setenv("CVXMETRIC_MAX_NPZ_BYTES", str(32 << 20))
    assert col.read_npz(path)["X"].shape == (2000, 1000)
    monkeypatch.setenv("CVXMETRIC_MAX_NPZ_BYTES", "lots")
    with pytest.raises(col.CollectionError, match="CVXMETRIC_MAX_NPZ_BYTES"):
        col.read_npz(path)
    monkeypatch.delenv("CVXMETRIC_MAX_NPZ_BYTES")
    assert col.read_npz(path, max_bytes=32 << 20)["X"].shape == (2000, 1000)


def _lying_npz(path, shape):
    """An archive whose one ``.npy`` header claims ``shape`` over 8 bytes of data."""
    import io

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": "<f8", "fortran_order": False, "shape": shape})
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("X.npy", buf.getvalue() + b"\0" * 8)


def test_array_header_is_bounded_before_allocation(tmp_path, monkeypatch):
    path = tmp_path / "liar.npz"
    _lying_npz(path, (10**12,))  # 8 TB if believed
    with pytest.raises(col.CollectionError) as exc:
        col.read_npz(path)
    assert "liar.npz" in str(exc.value) and "'X'" in str(exc.value)
    assert "limit" in str(exc.value)
    # within the limit but beyond the member's bytes: truncated
    monkeypatch.setattr(col, "MAX_NPZ_BYTES", 10**15)
    with pytest.raises(col.CollectionError, match="truncated or corrupt"):
        col.read_npz(path)


def test_npz_with_foreign_members_is_refused(tmp_path):
    path = tmp_path / "odd.npz"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("readme.txt", b"hello")
    with pytest.raises(col.CollectionError, match="'readme.txt' is not a .npy"):
        col.read_npz(path)


@pytest.mark.parametrize("file", ["../../outside.npz", "sub/a.npz", "/tmp/a.npz",
                                  "..\\a.npz", "..", "a.json"])
def test_manifest_path_traversal_is_refused(root, file):
    man_path = col.problems_dir(root, "qwise") / "manifest.json"
    man = json.loads(man_path.read_text())
    man["instances"][0]["file"] = file
    man_path.write_text(json.dumps(man))
    with pytest.raises(col.InstanceFormatError,
                       match=r"instances\[0\]\.file: .* plain file name"):
        col.load_instance(root, "qwise", "b")


@pytest.mark.parametrize("file", ["../a.npz", "..", "../../problems/qwise/a.npz",
                                  "/etc/hostname", "a.json"])
def test_reference_path_traversal_is_refused(root_with_ref, tmp_path, file):
    root = shutil.copytree(root_with_ref, tmp_path / "c")
    inst = col.load_instance(root, "qwise", "a")
    rec_path = col.reference_dir(root, "qwise") / "a.json"
    rec = json.loads(rec_path.read_text())
    rec["matrix"]["file"] = file
    rec_path.write_text(json.dumps(rec))
    with pytest.raises(col.ReferenceFormatError, match="'matrix.file'"):
        col.read_reference(root, inst)


def test_symlinks_are_refused(root_with_ref, tmp_path):
    root = shutil.copytree(root_with_ref, tmp_path / "c")
    outside = tmp_path / "outside"
    outside.mkdir()
    probs, refs = col.problems_dir(root, "qwise"), col.reference_dir(root, "qwise")
    # an instance file that is a link (here to a copy of itself elsewhere)
    shutil.move(probs / "b.npz", outside / "b.npz")
    (probs / "b.npz").symlink_to(outside / "b.npz")
    with pytest.raises(col.InstanceFormatError, match="b.npz: is a symbolic link"):
        col.load_instance(root, "qwise", "b")
    # a reference matrix and a reference record
    inst = col.load_instance(root, "qwise", "a")
    for name in ("a.npz", "a.json"):
        shutil.move(refs / name, outside / name)
        (refs / name).symlink_to(outside / name)
        status, detail = col.reference_status(root, inst)
        assert status == "invalid" and f"{name}: is a symbolic link" in detail
        (refs / name).unlink()
        shutil.move(outside / name, refs / name)
    assert col.reference_status(root, inst)[0] == "current"
    # a manifest
    shutil.move(probs / "manifest.json", outside / "manifest.json")
    (probs / "manifest.json").symlink_to(outside / "manifest.json")
    with pytest.raises(col.InstanceFormatError, match="is a symbolic link"):
        col.read_manifest(root, "qwise")


# ---------------------------------------------------------------------------
# Writers killed between the files of a pair
# ---------------------------------------------------------------------------


def _die_before(k, fn, *args):
    """In a forked child: run ``fn(*args)``, ending the process with exit code
    17 just before its k-th (0-based) rename or unlink."""
    calls = [0]
    real_replace, real_unlink = os.replace, os.unlink

    def counted(real):
        def op(*a, **kw):
            if calls[0] == k:
                os._exit(17)
            calls[0] += 1
            return real(*a, **kw)
        return op

    os.replace, os.unlink = counted(real_replace), counted(real_unlink)
    fn(*args)
    os._exit(0)


def _crash_runs(template, tmp_path, fn, args_of, check):
    """Run ``fn`` killed before each of its renames/unlinks in turn, on a
    fresh copy of ``template``, and ``check(root, k)`` the copy each time.

    Returns the number of kill points (the child's renames and unlinks).
    """
    for k in range(20):
        root = shutil.copytree(template, tmp_path / f"k{k}")
        child = FORK.Process(target=_die_before, args=(k, fn, *args_of(root)))
        child.start()
        child.join(60)
        assert child.exitcode in (0, 17), child.exitcode
        check(root, k)
        if child.exitcode == 0:
            return k
    pytest.fail("the writer never finished")


def test_killed_instance_rewrite_leaves_old_or_new(root, tmp_path, capsys):
    old, new = arrays(0), arrays(5)
    seen = []

    def check(r, k):
        inst = col.load_instance(r, "qwise", "a")  # never a hash mismatch
        is_new = np.array_equal(inst.arrays["X"], new["X"])
        assert is_new or np.array_equal(inst.arrays["X"], old["X"])
        seen.append(is_new)
        assert col.load_instance(r, "qwise", "b").sha256  # the neighbour
        assert cli_list(r, capsys)[0] == 0
        # the next writer clears what the killed one left
        col.write_instance(r, "qwise", "a", new, hyperparameters=HP)
        assert leftovers(col.problems_dir(r, "qwise")) == []
        assert col.load_instance(r, "qwise", "a").path.name == "a.npz"

    def rewrite(r):
        col.write_instance(r, "qwise", "a", new, hyperparameters=HP)

    n_ops = _crash_runs(root, tmp_path, rewrite, lambda r: (r,), check)
    # staged file, manifest -> staged, a.npz, manifest -> a.npz, unlink
    assert n_ops == 5
    assert seen[0] is False and seen[-1] is True
    assert seen == sorted(seen)  # old ... old, new ... new


def test_killed_new_instance_leaves_collection_readable(root, tmp_path, capsys):
    def add(r):
        col.write_instance(r, "qwise", "c", arrays(2), hyperparameters=HP)

    def check(r, k):
        names = col.instance_names(r, "qwise")
        assert names in (["a", "b"], ["a", "b", "c"])
        for name in names:
            col.load_instance(r, "qwise", name)
        assert cli_list(r, capsys)[0] == 0

    assert _crash_runs(root, tmp_path, add, lambda r: (r,), check) == 2


def test_killed_reference_write_leaves_old_or_new(root_with_ref, tmp_path, capsys):
    inst = col.load_instance(root_with_ref, "qwise", "a")
    old = col.read_reference(root_with_ref, inst)
    record = {k: v for k, v in old.record.items() if k != "matrix"}
    M_new = 2.0 * old.M
    seen = []

    def rewrite(r):
        col.write_reference(r, inst, M_new, record)

    def check(r, k):
        status, ref = col.reference_status(r, col.load_instance(r, "qwise", "a"))
        assert status == "current", ref
        is_new = np.array_equal(ref.M, M_new)
        assert is_new or np.array_equal(ref.M, old.M)
        seen.append(is_new)
        code, out = cli_list(r, capsys)
        assert code == 0 and "invalid" not in out
        col.write_reference(r, inst, M_new, record)
        assert leftovers(col.reference_dir(r, "qwise")) == []

    assert _crash_runs(root_with_ref, tmp_path, rewrite, lambda r: (r,), check) == 5
    assert seen[0] is False and seen[-1] is True and seen == sorted(seen)


def test_failed_second_write_keeps_the_old_pair(root, monkeypatch):
    """In-process: the manifest write raises (disk full) after the new
    ``.npz`` has been written."""
    real = col.atomic_write_bytes
    before = col.load_instance(root, "qwise", "a").sha256

    def full_disk(path, data):
        if Path(path).name == "manifest.json":
            raise OSError("disk full")
        return real(path, data)

    monkeypatch.setattr(col, "atomic_write_bytes", full_disk)
    with pytest.raises(OSError, match="disk full"):
        col.write_instance(root, "qwise", "a", arrays(5), hyperparameters=HP)
    monkeypatch.undo()
    assert col.load_instance(root, "qwise", "a").sha256 == before


# ---------------------------------------------------------------------------
# Concurrent writers and readers
# ---------------------------------------------------------------------------


def _instance_writer(root, w, rounds):
    for i in range(rounds):
        col.write_instance(root, "qwise", f"w{w}_{i}", arrays(i),
                           hyperparameters=HP)
        col.write_instance(root, "qwise", "shared", arrays(100 + w),
                           hyperparameters=HP)


def _join_all(procs, timeout=120):
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout)
    assert [p.exitcode for p in procs] == [0] * len(procs)


def test_concurrent_instance_writers_do_not_lose_entries(root):
    rounds = 6
    _join_all([FORK.Process(target=_instance_writer, args=(root, w, rounds))
               for w in range(3)])
    names = col.instance_names(root, "qwise")
    want = {"a", "b", "shared"} | {f"w{w}_{i}" for w in range(3)
                                    for i in range(rounds)}
    assert set(names) == want and len(names) == len(want)
    for name in names:
        col.load_instance(root, "qwise", name)  # every hash matches
    X = col.load_instance(root, "qwise", "shared").arrays["X"]
    assert any(np.array_equal(X, arrays(100 + w)["X"]) for w in range(3))
    assert leftovers(col.problems_dir(root, "qwise")) == []


def _reference_writer(root, inst, record, M, rounds):
    for _ in range(rounds):
        col.write_reference(root, inst, M, record)


def _reader(root, seconds, errors):
    inst = col.load_instance(root, "qwise", "a")
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        try:
            inst = col.load_instance(root, "qwise", "a")
            status, detail = col.reference_status(root, inst)
            if status not in ("current", "stale"):
                errors.put(f"reference {status}: {detail}")
        except col.CollectionError as exc:
            errors.put(str(exc))
        n += 1
    errors.put(n)


def test_concurrent_writers_and_readers_see_whole_pairs(root_with_ref, tmp_path):
    root = shutil.copytree(root_with_ref, tmp_path / "c")
    inst = col.load_instance(root, "qwise", "a")
    ref = col.read_reference(root, inst)
    record = {k: v for k, v in ref.record.items() if k != "matrix"}
    Ms = [ref.M * (1 + w) for w in range(2)]
    errors = FORK.Queue()
    procs = [FORK.Process(target=_reference_writer,
                          args=(root, inst, record, Ms[w], 15)) for w in range(2)]
    # the instance itself is rewritten too (alternating its two versions),
    # under a reader of both pairs
    a0, a5 = arrays(0), arrays(5)

    def flip(r):
        for i in range(15):
            col.write_instance(r, "qwise", "a", a5 if i % 2 else a0,
                               hyperparameters=HP)
        col.write_instance(r, "qwise", "a", a0, hyperparameters=HP)

    procs.append(FORK.Process(target=flip, args=(root,)))
    procs.append(FORK.Process(target=_reader, args=(root, 1.0, errors)))
    _join_all(procs)
    got = []
    while not errors.empty():
        got.append(errors.get())
    reads = [g for g in got if isinstance(g, int)]
    assert [g for g in got if not isinstance(g, int)] == []
    assert reads and reads[0] > 0
    status, final = col.reference_status(root, col.load_instance(root, "qwise", "a"))
    assert status == "current", final
    assert any(np.array_equal(final.M, M) for M in Ms)
    assert leftovers(col.reference_dir(root, "qwise")) == []
    assert leftovers(col.problems_dir(root, "qwise")) == []

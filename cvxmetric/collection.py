"""The problem collection: instances in ``problems/``, certified answers in ``reference/``.

Layout under a collection root (see ``docs/formats.md`` for the full format)::

    problems/<family>/manifest.json     one entry per instance
    problems/<family>/<name>.npz        the arrays (never pickled)
    reference/<family>/<name>.json      the certified exact answer
    reference/<family>/<name>.npz       its matrix ``M``

An *instance* is numeric arrays plus hyperparameters (in the manifest).  A
*reference* is an exact solution accepted only when two independent conic
solvers (Clarabel and SCS) both certify their point and agree on the
objective to :data:`~cvxmetric._tolerances.REFERENCE_AGREEMENT`.  A reference
records the SHA-256 of the instance file and the hyperparameters it was
computed from; when either changes, the reference is *stale* and is never
used.

Families plug in through :func:`register_family`: a :class:`FamilySpec`
states the arrays and hyperparameters of an instance, how to turn it into the
family's problem data, how to solve it exactly, and (optionally) how to
generate the bundled instances; :data:`METHODS` maps each family to the
methods ``verify`` checks, ``{"qwise": {"fast": f, "subgradient": g}}`` with
``f(data) -> SolverResult``: those of its formulation's registry entry that
state a collection solve (:attr:`cvxmetric.formulations.Method.collection`).

Every file is written atomically (a temporary file in the same directory,
``fsync``, ``os.replace``).  The two-file records -- an instance ``.npz``
with its manifest entry, a reference ``.npz`` with its ``.json`` -- are
switched as a pair: the new ``.npz`` is written under a name no index refers
to, the index (manifest or record) is pointed at it by one ``os.replace``,
and only then is the canonical ``<name>.npz`` rewritten and the index
pointed back, so a writer killed at any moment leaves the old pair or the
new pair.  Writers hold an exclusive ``flock`` on the folder, readers of a
pair a shared one, so concurrent writers never interleave and readers never
see a half-switched pair.  Every ``.npz`` is read with
``allow_pickle=False`` after its declared uncompressed size has been checked
against :data:`MAX_NPZ_BYTES`; files named by an index must be regular files
in the index's folder (no symbolic links).  Instance files are written
byte-for-byte deterministically (fixed zip timestamps), so regenerating an
unchanged instance leaves its hash, and hence its reference, valid.
"""

import contextlib
import dataclasses
import hashlib
import io
import json
import logging
import math
import os
import platform
import re
import tempfile
import threading
import time
import warnings
import zipfile
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import import_module, resources
from pathlib import Path

import numpy as np

from ._settings import _REGENERATION_RTOL, MAX_NPZ_BYTES, PSD_TOL
from ._tolerances import REFERENCE_AGREEMENT, tolerance
from .formulations import Method, formulations
from .result import SolverError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: writes are not locked
    fcntl = None

__all__ = [
    "FORMAT_VERSION",
    "MAX_NPZ_BYTES",
    "PSD_TOL",
    "ArraySpec",
    "FamilySpec",
    "FAMILIES",
    "METHODS",
    "register_family",
    "exact_solves",
    "gaussian_classes",
    "standardize",
    "CollectionError",
    "InstanceFormatError",
    "ReferenceFormatError",
    "MissingReferenceError",
    "StaleReferenceError",
    "Instance",
    "Reference",
    "ReferenceOutcome",
    "VerifyRow",
    "find_root",
    "locate_root",
    "installed_root",
    "BUNDLED_COLLECTION",
    "instance_family",
    "problems_dir",
    "reference_dir",
    "sha256_file",
    "atomic_write_bytes",
    "npz_bytes",
    "read_npz",
    "read_manifest",
    "families",
    "instance_names",
    "load_instance",
    "load_instance_file",
    "iter_instances",
    "write_instance",
    "instance_to_data",
    "write_reference",
    "read_reference",
    "reference_status",
    "compute_reference",
    "make_references",
    "run_method",
    "verify",
    "verify_methods",
    "verify_plan",
    "make_problems",
    "jsonable",
    "library_versions",
]

logger = logging.getLogger("cvxmetric")

#: Version of the on-disk formats written by this module.
FORMAT_VERSION = 1

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_SHA_RE = re.compile(r"^[0-9a-f]{64}$")
# fixed zip timestamp: np.savez stamps the current time, which would change
# the file hash (and stale every reference) on each regeneration
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


class CollectionError(ValueError):
    """A collection file is missing, malformed or inconsistent."""


class InstanceFormatError(CollectionError):
    """An instance file or manifest entry does not follow the format."""


class ReferenceFormatError(CollectionError):
    """A reference file does not follow the format."""


class MissingReferenceError(CollectionError):
    """No reference exists for an instance."""


class StaleReferenceError(CollectionError):
    """A reference was computed from a different instance or hyperparameters."""


# ---------------------------------------------------------------------------
# Family registry
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ArraySpec:
    """One array of an instance file.

    Attributes
    ----------
    name : str
        Key in the ``.npz``.
    kind : {"float", "int"}
        Required dtype kind (``float``: any floating dtype, finite values;
        ``int``: any signed or unsigned integer dtype).
    shape : tuple
        Entries are ints (fixed sizes) or strings (symbolic sizes that must
        agree across the arrays of one file, e.g. ``("N", 4)``).
    required : bool
    doc : str
    """

    name: str
    kind: str
    shape: tuple
    required: bool = True
    doc: str = ""


@dataclass(frozen=True)
class FamilySpec:
    """How a formulation family reads, solves and generates its instances.

    Attributes
    ----------
    name : str
        Folder name under ``problems/`` and ``reference/``.
    arrays : tuple of ArraySpec
    hyperparameters : dict
        Allowed hyperparameter names and their defaults (``None``: optional
        without default).  Unknown names in a manifest are rejected.
    to_data : callable
        ``to_data(arrays, hyperparameters) -> data``; raises ``ValueError``
        on inconsistent input.
    objective : callable
        ``objective(data, M) -> float``, the paper's objective recomputed
        from a matrix (never trusted from the method).
    exact : callable
        ``exact(data) -> SolverResult``, the default certified exact path.
    reference_solve : callable
        ``reference_solve(data, solver, tol) -> SolverResult``: the declared
        model solved by one named solver (used twice by ``reference``).
    sizes : callable
        ``sizes(arrays) -> dict`` of sizes shown by ``cvxmetric list``.
    generate : callable, optional
        ``generate() -> list of dict`` with keys ``name``, ``arrays``,
        ``hyperparameters``, ``description``, ``source`` and optionally
        ``random_state``: the bundled instances (``make-problems``).
    applies : callable, optional
        ``applies(method, hyperparameters) -> bool``: whether a registered
        method solves this kind of instance (e.g. a diagonal-only Newton
        method on a full-matrix instance); ``verify`` skips the others.
        Default: every method applies.
    psd : bool
        Whether the learned matrix is a symmetric PSD metric (default).
        ``verify`` then symmetrises it and rejects a negative eigenvalue;
        families of general matrices (SLR's bilinear ``M``) set ``False``.
    matrix_dim : callable, optional
        ``matrix_dim(arrays) -> int``: the order of the stored matrix when it
        is not ``sizes(arrays)["d"]`` (the Qwise vector model stores
        ``diag([w; b])``, of order ``d + 1``).
    stored : callable, optional
        ``stored(result) -> SolverResult``: a method's result with the
        matrix the family stores when it is not the result's ``M`` (LDML's
        ``blockdiag(M, b)``), applied to the result of each of its
        :data:`METHODS` (``exact`` returns that matrix itself).
    """

    name: str
    arrays: tuple
    hyperparameters: dict
    to_data: object
    objective: object
    exact: object
    reference_solve: object
    sizes: object
    generate: object = None
    applies: object = None
    psd: bool = True
    matrix_dim: object = None
    stored: object = None


class _Registered(MutableMapping):
    """The families registered so far, loaded on first read.

    The first read imports the collection module of every formulation of
    the registry (:attr:`cvxmetric.formulations.Formulation.collection`),
    each of which calls :func:`register_family`; nothing is imported when
    this module is.  Families iterate in the registry's order (those
    registered by other code after them, in registration order).
    """

    def __init__(self):
        self._store = {}

    def __getitem__(self, key):
        _load_families()
        return self._store[key]

    def __iter__(self):
        _load_families()
        order = {f.name: i for i, f in enumerate(formulations())}
        return iter(sorted(self._store, key=lambda k: order.get(k, len(order))))

    def __len__(self):
        _load_families()
        return len(self._store)

    def __setitem__(self, key, value):
        self._store[key] = value

    def __delitem__(self, key):
        del self._store[key]

    def __repr__(self):
        return f"{type(self).__name__}({list(self)})"


#: Registered families, by name (:class:`FamilySpec`).
FAMILIES = _Registered()

#: Methods per family: ``{family: {method: callable(data) -> SolverResult}}``,
#: those of the family's registry entry with a collection solve
#: (:attr:`cvxmetric.formulations.Method.collection`), in its order.
#: ``cvxmetric verify`` judges method ``m`` against ``tolerance(family, m)``.
METHODS = _Registered()

_LOADED = False


def _load_families():
    """Import every formulation's collection module once (they register
    their families); re-entrant, since those modules import this one."""
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    for module in dict.fromkeys(f.collection for f in formulations() if f.collection):
        import_module(module)


@dataclass(frozen=True)
class _CollectionSolve:
    """A method of :data:`METHODS`: its solve -- a registry
    :class:`~cvxmetric.formulations.Method`'s collection solve, imported
    when first run, or a function -- with the family's
    :attr:`FamilySpec.stored` applied to the result."""

    solve: object
    stored: object = None

    def __call__(self, data):
        solve = self.solve
        if isinstance(solve, Method):
            solve = solve.load_collection()
        result = solve(data)
        return result if self.stored is None else self.stored(result)


def _stated_methods(spec):
    """``{name: callable}`` of the methods that the registry entry of
    ``spec``'s formulation gives a collection solve, in its order (none
    when no formulation has the family's name)."""
    entry = next((f for f in formulations() if f.name == spec.name), None)
    return {m.name: _CollectionSolve(m, spec.stored)
            for m in (entry.methods if entry is not None else ())
            if m.collection is not None}


def register_family(spec, methods=None):
    """Register a family and the methods ``verify`` checks on it.

    The methods are those of the registry entry of the formulation called
    ``spec.name`` (as registered when this is called) that state a
    collection solve (:attr:`cvxmetric.formulations.Method.collection`),
    then ``methods``.

    Parameters
    ----------
    spec : FamilySpec
    methods : dict, optional
        ``{name: callable(data) -> SolverResult}``: further methods, for a
        family whose methods are not in a registry entry; every name needs
        an entry ``name`` or ``"family/name"`` in
        :data:`~cvxmetric._tolerances.TOLERANCES` to be verified.

    Raises
    ------
    ValueError
        Naming ``spec.name`` when it is not a valid family name, or
        ``methods`` when one of its names is a method of the registry entry
        already.
    """
    if not _NAME_RE.match(spec.name):
        raise ValueError(f"spec.name: invalid family name {spec.name!r}.")
    stated = _stated_methods(spec)
    extra = {name: _CollectionSolve(solve, spec.stored)
             for name, solve in (methods or {}).items()}
    both = sorted(set(stated) & set(extra))
    if both:
        raise ValueError(f"methods: {both} of family {spec.name!r} have a "
                         f"collection solve in its registry entry already.")
    FAMILIES[spec.name] = spec
    METHODS[spec.name] = {**stated, **extra}


def exact_solves(formulation, *, reference_options=None, after=None):
    """The ``exact`` and ``reference_solve`` of a :class:`FamilySpec` whose
    instances' data go straight to ``formulation``'s certified exact path.

    The path is the registry's (:meth:`cvxmetric.formulations.Formulation.solve_exact`),
    imported on first use.

    Parameters
    ----------
    formulation : str
        A name of :func:`cvxmetric.formulations`.
    reference_options : dict, optional
        Keyword arguments of the exact path for the reference solve only
        (e.g. the declared model without its reduction).
    after : callable, optional
        Applied to each result (e.g. the matrix the family stores).

    Returns
    -------
    exact : callable
        ``exact(data) -> SolverResult``.
    reference_solve : callable
        ``reference_solve(data, solver, tol) -> SolverResult``: the same path
        on one named solver at tolerance ``tol``.
    """
    from .formulations import formulation as lookup

    def solve(data, **options):
        res = lookup(formulation).solve_exact(data, **options)
        return res if after is None else after(res)

    def exact(data):
        return solve(data)

    def reference_solve(data, solver, tol):
        return solve(data, **(reference_options or {}), solvers=(solver,), tol=tol)

    return exact, reference_solve


def _family(name):
    try:
        return FAMILIES[name]
    except KeyError:
        raise CollectionError(
            f"family: unknown family {name!r}; registered: {sorted(FAMILIES)}."
        ) from None


# ---------------------------------------------------------------------------
# Locating the collection, hashing, atomic writes
# ---------------------------------------------------------------------------


#: Folder of the package that holds the collection in a wheel install (the
#: build copies ``problems/`` and ``reference/`` there; see ``setup.py``).
BUNDLED_COLLECTION = "_bundled_collection"


def installed_root():
    """The collection installed with the package, or ``None``.

    A wheel carries ``problems/`` and ``reference/`` as package data under
    ``cvxmetric/_bundled_collection/``; a repository checkout or an editable
    install has none there (it reads the repository's own folders).  Only a
    folder on the file system counts: the collection is read with
    ``flock`` and by path, which a zipped package cannot offer.

    Returns
    -------
    Path or None
    """
    try:
        path = resources.files(__package__) / BUNDLED_COLLECTION
    except (ModuleNotFoundError, TypeError):  # pragma: no cover - not a package
        return None
    if isinstance(path, Path) and (path / "problems").is_dir():
        return path.resolve()
    return None


def locate_root(root=None, *, must_exist=True):
    """Locate the collection root and say how it was found.

    Order: ``root``; the environment variable ``CVXMETRIC_ROOT``; the current
    directory if it has a ``problems/`` folder; the repository root next to
    the package (a checkout or an editable install); the collection
    installed with the package (a wheel, :func:`installed_root`).

    Parameters
    ----------
    root : str or Path, optional
    must_exist : bool
        Require the explicit or environment root to be an existing directory.

    Returns
    -------
    path : Path
    origin : str
        ``"--root"``, ``"CVXMETRIC_ROOT"``, ``"current directory"``,
        ``"package repository"`` or ``"installed package data"``.
    """
    for candidate, origin in ((root, "--root"),
                              (os.environ.get("CVXMETRIC_ROOT"), "CVXMETRIC_ROOT")):
        if candidate:
            path = Path(candidate).expanduser().resolve()
            if must_exist and not path.is_dir():
                raise CollectionError(f"{origin}: {path} is not a directory.")
            return path, origin
    cwd = Path.cwd()
    if (cwd / "problems").is_dir():
        return cwd.resolve(), "current directory"
    repo = Path(__file__).resolve().parent.parent
    if (repo / "problems").is_dir() or (repo / "pyproject.toml").is_file():
        return repo, "package repository"
    installed = installed_root()
    if installed is not None:
        return installed, "installed package data"
    raise CollectionError(
        "no collection root found: pass --root, set CVXMETRIC_ROOT, run from "
        "a directory that has a problems/ folder, or install the package from "
        "its wheel (which carries the collection)."
    )


def find_root(root=None, *, must_exist=True):
    """Locate the collection root (see :func:`locate_root` for the order).

    Parameters
    ----------
    root : str or Path, optional
    must_exist : bool
        Require the explicit or environment root to be an existing directory.

    Returns
    -------
    Path
    """
    return locate_root(root, must_exist=must_exist)[0]


def problems_dir(root, family):
    """``<root>/problems/<family>``."""
    return Path(root) / "problems" / family


def reference_dir(root, family):
    """``<root>/reference/<family>``."""
    return Path(root) / "reference" / family


def sha256_file(path):
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def atomic_write_bytes(path, data):
    """Write ``data`` to ``path`` atomically.

    The bytes go to a temporary file in the same directory (so that the
    final rename stays on one file system), are flushed and fsynced, and the
    file is moved over ``path`` with :func:`os.replace`.  A reader sees the
    old file or the new one, never a partial write; on error the temporary
    file is removed.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    # persist the rename itself (best effort: not every platform allows it)
    with contextlib.suppress(OSError):
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


# Folders this thread holds a lock on: {resolved path: exclusive?}.  A flock
# belongs to an open file description, so a second open() of a folder the
# thread already holds would wait for itself.
_HELD = threading.local()


@contextlib.contextmanager
def _locked(folder, *, exclusive):
    """Hold a ``flock`` on the directory ``folder`` for the ``with`` block.

    Writers take it exclusive, readers of a two-file pair shared: two
    writers never interleave and a reader never sees a half-switched pair.
    Re-entrant within a thread.  Readers proceed unlocked when the folder
    cannot be opened (it does not exist); on platforms without ``fcntl``
    nothing is locked.
    """
    held = getattr(_HELD, "folders", None)
    if held is None:
        held = _HELD.folders = {}
    key = os.path.realpath(folder)
    if key in held:
        if exclusive and not held[key]:
            raise RuntimeError(f"{folder}: shared lock held; cannot write here.")
        yield
        return
    fd = None
    if fcntl is not None:
        try:
            fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError:
            if exclusive:
                raise
    try:
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        held[key] = exclusive
        try:
            yield
        finally:
            del held[key]
    finally:
        if fd is not None:
            os.close(fd)  # releases the flock


def _staged_name(target_name, sha):
    """``<stem>.staged-<16 hex>.npz``: where a new ``.npz`` waits for the switch."""
    return f"{target_name[:-len('.npz')]}.staged-{sha[:16]}.npz"


def _write_pair(folder, target_name, data, sha, point_to, *, target_taken=False):
    """Write ``data`` as ``folder/target_name`` and point its index at it.

    ``point_to(file_name)`` atomically rewrites the index (a manifest or a
    reference record) so that it names ``file_name``.  When ``target_name``
    may still be named by the current index with other bytes, the new bytes
    go first to a staged name, the index switches to it, the canonical file
    is rewritten and the index switches back; each step is one
    ``os.replace``, so a kill at any moment leaves an index naming a file
    that holds the bytes (and hash) it records.  The caller holds the
    folder's exclusive lock.

    Parameters
    ----------
    target_taken : bool
        Another index entry names ``target_name``: it is never rewritten and
        the new bytes keep their staged name.

    Returns
    -------
    str
        The file name the index finally names.
    """
    target = folder / target_name
    if not target_taken:
        if not os.path.lexists(target):
            atomic_write_bytes(target, data)
            point_to(target_name)
            return target_name
        if not target.is_symlink() and target.is_file() and sha256_file(target) == sha:
            point_to(target_name)  # the bytes are already in place
            return target_name
    staged = folder / _staged_name(target_name, sha)
    if os.path.lexists(staged) and (staged.is_symlink() or not staged.is_file()
                                    or sha256_file(staged) != sha):
        # a staged name is content-addressed: other bytes are not ours
        raise CollectionError(
            f"{staged}: exists with other content; move it away and retry."
        )
    atomic_write_bytes(staged, data)
    point_to(staged.name)
    if target_taken:
        return staged.name
    atomic_write_bytes(target, data)
    point_to(target_name)
    os.unlink(staged)
    return target_name


# mkstemp's names in atomic_write_bytes: ".<file name>.<8 random chars>.tmp"
_TMP_RE = re.compile(r"^\.(?P<name>.+)\.[a-z0-9_]{8}\.tmp$")


def _sweep(folder, stem, index_name, keep):
    """Remove what a killed writer of ``stem`` left in ``folder``.

    Staged copies ``<stem>.staged-*.npz`` that no index names (``keep``)
    and the temporary files of ``<stem>.npz``, its staged copies and the
    index.  Called under the folder's exclusive lock, when no other writer
    of these files can be running.
    """
    staged = re.compile(re.escape(stem) + r"\.staged-[0-9a-f]{16}\.npz$")
    own = {f"{stem}.npz", index_name}
    for path in folder.iterdir():
        name = path.name
        m = _TMP_RE.match(name)
        stale = (staged.match(name) is not None and name not in keep) or (
            m is not None and (m["name"] in own or staged.match(m["name"])))
        if stale:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)


def _regular_file(path, error, what):
    """Refuse a symbolic link where a collection names a file of its own."""
    if path.is_symlink():
        raise error(
            f"{path}: is a symbolic link; {what} must be a regular file in "
            f"{path.parent} (links are not followed)."
        )


def _json_bytes(obj):
    return (json.dumps(jsonable(obj), indent=2, allow_nan=False) + "\n").encode()


def jsonable(obj):
    """Plain-JSON copy of ``obj``: arrays to lists, non-finite floats to ``None``.

    Strict JSON has no ``NaN`` / ``Infinity``; an unavailable bound (e.g. a
    dual bound of ``-inf``) is therefore written as ``null``.
    """
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        obj = float(obj)
        return obj if math.isfinite(obj) else None
    if obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, Path):
        return str(obj)
    return str(obj)


def npz_bytes(arrays):
    """Serialise ``arrays`` (dict name -> ndarray) as ``.npz`` bytes.

    Equivalent to :func:`numpy.savez` (stored, not compressed) but with fixed
    zip timestamps, so equal arrays give byte-identical files.  Object arrays
    are refused.
    """
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for key, arr in arrays.items():
            arr = np.ascontiguousarray(arr)
            if arr.dtype.hasobject:
                raise ValueError(f"{key}: object arrays cannot be stored.")
            info = zipfile.ZipInfo(f"{key}.npy", date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_STORED
            info.external_attr = 0o644 << 16
            with zf.open(info, "w", force_zip64=True) as f:
                np.lib.format.write_array(f, arr, allow_pickle=False)
    return buf.getvalue()


def _npz_limit(max_bytes=None):
    """The byte limit of :func:`read_npz`: ``max_bytes``, else the environment
    variable ``CVXMETRIC_MAX_NPZ_BYTES``, else :data:`MAX_NPZ_BYTES`."""
    if max_bytes is not None:
        return int(max_bytes)
    env = os.environ.get("CVXMETRIC_MAX_NPZ_BYTES")
    if env:
        try:
            value = int(env)
        except ValueError:
            value = 0
        if value <= 0:
            raise CollectionError(
                f"CVXMETRIC_MAX_NPZ_BYTES: expected a positive whole number of "
                f"bytes, got {env!r}."
            )
        return value
    return int(MAX_NPZ_BYTES)


def _npy_header(member, version):
    """``(shape, fortran_order, dtype)`` of a ``.npy`` stream after its magic."""
    fmt = np.lib.format
    if version == (1, 0):
        return fmt.read_array_header_1_0(member)
    if version == (2, 0):
        return fmt.read_array_header_2_0(member)
    # version 3.0 (utf-8 field names) has no public reader
    return fmt._read_array_header(member, version)


def _read_npz_stream(f, where, error, limit):
    """Read the arrays of the ``.npz`` open as binary file ``f``.

    Sizes are checked from the zip directory and each array's header before
    anything is decompressed or allocated.
    """
    head = f.read(len(np.lib.format.MAGIC_PREFIX))
    f.seek(0)
    if head == np.lib.format.MAGIC_PREFIX:
        raise error(
            f"{where}: expected an .npz archive of named arrays, got a single "
            f"array; save with numpy.savez(path, X=..., ...)."
        )
    try:
        zf = zipfile.ZipFile(f)
    except Exception as exc:  # BadZipFile, truncated file, ...
        raise error(f"{where}: not a readable .npz file ({exc}).") from None
    limit_hint = ("cvxmetric.collection.MAX_NPZ_BYTES, or the environment "
                  "variable CVXMETRIC_MAX_NPZ_BYTES")
    with zf:
        infos = zf.infolist()
        total = sum(info.file_size for info in infos)
        if total > limit:
            raise error(
                f"{where}: the archive declares {total} bytes of uncompressed "
                f"data, above the limit of {limit} bytes ({limit_hint}); not "
                f"decompressed."
            )
        out = {}
        for info in infos:
            if not info.filename.endswith(".npy"):
                raise error(f"{where}: member {info.filename!r} is not a .npy array.")
            key = info.filename[:-len(".npy")]
            if key in out:
                raise error(f"{where}: array {key!r} is stored twice.")
            try:
                with zf.open(info) as member:
                    shape, _, dtype = _npy_header(
                        member, np.lib.format.read_magic(member))
            except Exception as exc:
                raise error(f"{where}: array {key!r} cannot be read ({exc}).") from None
            if dtype.hasobject:
                raise error(
                    f"{where}: array {key!r} has dtype object (pickled Python "
                    f"objects); cvxmetric never loads pickles. Store plain "
                    f"numeric arrays."
                )
            nbytes = math.prod(shape) * dtype.itemsize
            if nbytes > limit:
                raise error(
                    f"{where}: array {key!r} declares shape {shape} of {dtype} "
                    f"({nbytes} bytes), above the limit of {limit} bytes "
                    f"({limit_hint}); not read."
                )
            if nbytes > info.file_size:
                raise error(
                    f"{where}: array {key!r} declares shape {shape} of {dtype} "
                    f"({nbytes} bytes) but its member holds {info.file_size} "
                    f"bytes; the file is truncated or corrupt."
                )
            try:
                with zf.open(info) as member:
                    out[key] = np.lib.format.read_array(member, allow_pickle=False)
            except Exception as exc:  # bad CRC, short data, ...
                raise error(f"{where}: array {key!r} cannot be read ({exc}).") from None
    return out


def read_npz(path, *, error=CollectionError, max_bytes=None):
    """Read every array of an ``.npz`` file, refusing pickles and bombs.

    Nothing is decompressed before the archive's declared uncompressed size
    (the sum of its members) and each array's ``shape * itemsize`` (from its
    ``.npy`` header) have been checked against the limit; an array whose
    header promises more bytes than its member holds is refused as
    truncated.  Arrays are read with ``allow_pickle=False``.

    Parameters
    ----------
    path : str or Path
    error : type
        Exception class raised (a :class:`CollectionError` subclass).
    max_bytes : int, optional
        Default: ``$CVXMETRIC_MAX_NPZ_BYTES``, else :data:`MAX_NPZ_BYTES`.

    Raises
    ------
    CollectionError (or ``error``)
        Naming the file (and the array) when the file is not a readable
        ``.npz``, is too large once decompressed, is truncated, or holds an
        object (pickled) array.
    """
    path = Path(path)
    if not path.is_file():
        raise error(f"{path}: file not found.")
    limit = _npz_limit(max_bytes)
    with open(path, "rb") as f:
        return _read_npz_stream(f, path, error, limit)


def _read_npz_hashed(path, error, check=None):
    """``(sha256, arrays)`` of one ``.npz``, both from the same open file.

    ``check(sha)``, when given, runs before the arrays are parsed (and may
    raise, e.g. when the hash does not match a manifest).
    """
    limit = _npz_limit()
    with open(path, "rb") as f:
        h = hashlib.sha256()
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
        sha = h.hexdigest()
        if check is not None:
            check(sha)
        f.seek(0)
        return sha, _read_npz_stream(f, path, error, limit)


def _check_arrays(arrays, spec, where):
    """Validate ``arrays`` against ``spec.arrays``; return a normalised copy."""
    allowed = {a.name: a for a in spec.arrays}
    unknown = sorted(set(arrays) - set(allowed))
    if unknown:
        raise InstanceFormatError(
            f"{where}: unknown array(s) {unknown}; a {spec.name!r} instance has "
            f"{sorted(allowed)}."
        )
    sizes = {}
    out = {}
    for a in spec.arrays:
        if a.name not in arrays:
            if a.required:
                raise InstanceFormatError(f"{where}: missing array {a.name!r}.")
            continue
        arr = np.asarray(arrays[a.name])
        if arr.dtype.hasobject:
            raise InstanceFormatError(
                f"{where}: array {a.name!r} has dtype object; expected {a.kind}."
            )
        if a.kind == "float":
            if arr.dtype.kind != "f":
                raise InstanceFormatError(
                    f"{where}: array {a.name!r} has dtype {arr.dtype}; expected a "
                    f"floating dtype (e.g. float64)."
                )
            if not np.all(np.isfinite(arr)):
                raise InstanceFormatError(
                    f"{where}: array {a.name!r} contains NaN or infinite values."
                )
            arr = arr.astype(np.float64, copy=False)
        elif a.kind == "int":
            if arr.dtype.kind not in "iu":
                raise InstanceFormatError(
                    f"{where}: array {a.name!r} has dtype {arr.dtype}; expected an "
                    f"integer dtype (e.g. int64)."
                )
            arr = arr.astype(np.int64, copy=False)
        else:  # pragma: no cover - spec error
            raise ValueError(f"ArraySpec.kind: unknown kind {a.kind!r}.")
        want = "(" + ", ".join(str(s) for s in a.shape) + ")"
        if arr.ndim != len(a.shape):
            raise InstanceFormatError(
                f"{where}: array {a.name!r} has shape {arr.shape}; expected {want}."
            )
        for axis, (s, t) in enumerate(zip(a.shape, arr.shape)):
            if isinstance(s, int):
                ok = s == t
            else:
                ok = sizes.setdefault(s, t) == t
            if not ok:
                bound = {k: v for k, v in sizes.items()}
                raise InstanceFormatError(
                    f"{where}: array {a.name!r} has shape {arr.shape}; expected "
                    f"{want} with {bound}."
                )
        out[a.name] = arr
    return out


def _check_hyperparameters(hp, spec, where):
    if not isinstance(hp, dict):
        raise InstanceFormatError(f"{where}: hyperparameters must be a JSON object.")
    unknown = sorted(set(hp) - set(spec.hyperparameters))
    if unknown:
        raise InstanceFormatError(
            f"{where}: unknown hyperparameter(s) {unknown}; {spec.name!r} has "
            f"{sorted(spec.hyperparameters)}."
        )
    out = dict(spec.hyperparameters)
    out.update(hp)
    return out


# ---------------------------------------------------------------------------
# Instances and manifests
# ---------------------------------------------------------------------------


@dataclass(eq=False)
class Instance:
    """One problem instance: validated arrays plus hyperparameters.

    Attributes
    ----------
    family, name : str
    path : Path
        The ``.npz`` file.
    arrays : dict of ndarray
    hyperparameters : dict
        Complete (defaults filled in).
    description, source : str
    sha256 : str
        Hash of the ``.npz`` file's bytes.
    entry : dict
        The raw manifest entry (empty when loaded without a manifest).
    """

    family: str
    name: str
    path: Path
    arrays: dict
    hyperparameters: dict
    description: str = ""
    source: str = ""
    sha256: str = ""
    entry: dict = field(default_factory=dict)

    @property
    def spec(self):
        return _family(self.family)

    @property
    def sizes(self):
        """Sizes shown by ``cvxmetric list`` (family-specific)."""
        return self.spec.sizes(self.arrays)

    def to_data(self):
        """The family's problem data (e.g. :class:`~cvxmetric.qwise.QwiseData`)."""
        return instance_to_data(self)


def instance_to_data(instance):
    """Turn an :class:`Instance` into its family's problem data.

    Errors from the family's own validation are re-raised naming the file.
    """
    spec = instance.spec
    try:
        return spec.to_data(instance.arrays, instance.hyperparameters)
    except (ValueError, TypeError) as exc:
        raise InstanceFormatError(f"{instance.path}: {exc}") from None


def _manifest_path(root, family):
    return problems_dir(root, family) / "manifest.json"


def _read_json(path, error):
    try:
        with open(path, "rb") as f:
            return json.loads(f.read().decode("utf-8"))
    except FileNotFoundError:
        raise error(f"{path}: file not found.") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise error(f"{path}: invalid JSON ({exc}).") from None


def _check_entry(entry, k, where, spec):
    w = f"{where}: instances[{k}]"
    if not isinstance(entry, dict):
        raise InstanceFormatError(f"{w}: expected a JSON object.")
    for key in ("name", "file", "sha256", "hyperparameters"):
        if key not in entry:
            raise InstanceFormatError(f"{w}: missing field {key!r}.")
    name = entry["name"]
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise InstanceFormatError(
            f"{w}.name: {name!r} is not a valid name (letters, digits, '_', '.', "
            f"'-'; starting with a letter or digit)."
        )
    file = entry["file"]
    if (not isinstance(file, str) or not file.endswith(".npz")
            or "/" in file or "\\" in file or not _NAME_RE.match(file)):
        raise InstanceFormatError(
            f"{w}.file: {file!r} must be a plain file name ending in .npz in the "
            f"manifest's folder."
        )
    if not isinstance(entry["sha256"], str) or not _SHA_RE.match(entry["sha256"]):
        raise InstanceFormatError(f"{w}.sha256: expected 64 lowercase hex digits.")
    for key in ("description", "source"):
        if key in entry and not isinstance(entry[key], str):
            raise InstanceFormatError(f"{w}.{key}: expected a string.")
    _check_hyperparameters(entry["hyperparameters"], spec, f"{w}.hyperparameters")


def read_manifest(root, family):
    """Read and validate ``problems/<family>/manifest.json``.

    Returns
    -------
    dict
        With ``format_version``, ``family`` and ``instances`` (a list of
        entries; names are unique).
    """
    spec = _family(family)
    path = _manifest_path(root, family)
    _regular_file(path, InstanceFormatError, "a manifest")
    man = _read_json(path, InstanceFormatError)
    if not isinstance(man, dict):
        raise InstanceFormatError(f"{path}: expected a JSON object.")
    version = man.get("format_version")
    if version != FORMAT_VERSION:
        raise InstanceFormatError(
            f"{path}: format_version is {version!r}; this cvxmetric reads "
            f"{FORMAT_VERSION}."
        )
    if man.get("family") != family:
        raise InstanceFormatError(
            f"{path}: family is {man.get('family')!r}, expected {family!r}."
        )
    entries = man.get("instances")
    if not isinstance(entries, list):
        raise InstanceFormatError(f"{path}: missing list field 'instances'.")
    seen = set()
    for k, entry in enumerate(entries):
        _check_entry(entry, k, path, spec)
        if entry["name"] in seen:
            raise InstanceFormatError(
                f"{path}: instances[{k}].name: duplicate name {entry['name']!r}."
            )
        seen.add(entry["name"])
    return man


def families(root):
    """Registered families that have a manifest under ``root``."""
    return [f for f in FAMILIES if _manifest_path(root, f).is_file()]


def instance_names(root, family):
    """Instance names of a family, in manifest order."""
    return [e["name"] for e in read_manifest(root, family)["instances"]]


def _entry(man, name, root, family):
    for entry in man["instances"]:
        if entry["name"] == name:
            return entry
    raise CollectionError(
        f"{_manifest_path(root, family)}: no instance named {name!r}; have "
        f"{[e['name'] for e in man['instances']]}."
    )


def _build_instance(family, name, path, arrays, hp, *, description="", source="",
                    sha=None, entry=None):
    spec = _family(family)
    where = str(path)
    arrays = _check_arrays(arrays, spec, where)
    hp = _check_hyperparameters(hp or {}, spec, f"{where}: hyperparameters")
    inst = Instance(
        family=family, name=name, path=Path(path), arrays=arrays,
        hyperparameters=hp, description=description, source=source,
        sha256=sha or "", entry=dict(entry or {}),
    )
    return inst


def load_instance(root, family, name, *, check_hash=True):
    """Load instance ``name`` of ``family`` through its manifest entry.

    Parameters
    ----------
    root : str or Path
    family, name : str
    check_hash : bool
        Compare the file's SHA-256 with the manifest (a mismatch means the
        file was changed without updating the manifest).

    Returns
    -------
    Instance
    """
    folder = problems_dir(root, family)
    with _locked(folder, exclusive=False):  # the manifest and its file as a pair
        man = read_manifest(root, family)
        entry = _entry(man, name, root, family)
        path = folder / entry["file"]
        _regular_file(path, InstanceFormatError, "an instance file")
        if not path.is_file():
            raise InstanceFormatError(
                f"{_manifest_path(root, family)}: instance {name!r}: file {path} "
                f"not found."
            )

        def same_hash(sha):
            if check_hash and sha != entry["sha256"]:
                raise InstanceFormatError(
                    f"{path}: sha256 {sha[:12]}... does not match the manifest's "
                    f"{entry['sha256'][:12]}...; the file changed without its "
                    f"manifest (rewrite it with write_instance or `cvxmetric "
                    f"make-problems`)."
                )

        sha, arrays = _read_npz_hashed(path, InstanceFormatError, same_hash)
    return _build_instance(
        family, name, path, arrays, entry["hyperparameters"],
        description=entry.get("description", ""), source=entry.get("source", ""),
        sha=sha, entry=entry,
    )


def _manifest_entry(path, family):
    """``(entry, family)`` of the manifest beside ``path`` that lists it.

    ``(None, family)`` when there is no manifest, it is of another family
    than ``family`` (when given) or of an unregistered one, or it does not
    list the file.  The caller holds the folder's shared lock.
    """
    man_path = path.parent / "manifest.json"
    if not os.path.lexists(man_path):
        return None, family
    _regular_file(man_path, InstanceFormatError, "a manifest")
    man = _read_json(man_path, InstanceFormatError)
    fam = man.get("family") if isinstance(man, dict) else None
    if fam not in FAMILIES or family not in (None, fam):
        return None, family
    entries = man.get("instances")
    if not isinstance(entries, list):
        raise InstanceFormatError(f"{man_path}: missing list field 'instances'.")
    found = None
    for k, e in enumerate(entries):
        _check_entry(e, k, man_path, _family(fam))
        if e["file"] == path.name:
            found = e
    return (found, fam) if found is not None else (None, family)


def _family_from_arrays(names, where, hyperparameters=None):
    """The registered family whose arrays a file with arrays ``names`` holds.

    A family fits when the file has every array it requires and no array
    it does not know.  When no family fits, the one that knows most of the
    names is taken, so that its own checks say what is wrong (a missing or
    misspelt array); a tie is refused.  The names of the ``hyperparameters``
    given with the file rule out the families without them; families with
    the same required arrays (``qwise`` and ``qwise_vector``) that they do
    not tell apart are read as the first registered (``qwise``: files
    written before the vector model existed keep their meaning).
    """
    names = set(names)
    fits, known = [], {}
    for fam, spec in FAMILIES.items():
        allowed = {a.name for a in spec.arrays}
        required = {a.name for a in spec.arrays if a.required}
        if required <= names <= allowed:
            fits.append(fam)
        known[fam] = len(names & allowed)
    # hyperparameters given with the file rule out the families without them
    hp = {k for k, v in (hyperparameters or {}).items() if v is not None}

    def taking_hp(families):
        return [f for f in families if hp <= set(FAMILIES[f].hyperparameters)]

    fits = taking_hp(fits)
    best = max((k for f, k in known.items() if f in taking_hp(known)), default=0)
    candidates = fits or [f for f in taking_hp(known) if known[f] == best and best > 0]
    required_of = {f: frozenset(a.name for a in FAMILIES[f].arrays if a.required)
                   for f in candidates}
    if len(candidates) > 1 and len(set(required_of.values())) == 1:
        # twins (the same required arrays) that the hyperparameters do not
        # tell apart: the first registered
        candidates = candidates[:1]
    if len(candidates) == 1:
        return candidates[0]
    raise InstanceFormatError(
        f"{where}: cannot tell the family from the arrays {sorted(names)} "
        f"(they fit {sorted(candidates) or 'no family'}; each family's arrays "
        f"are in docs/formats.md); name it (command line: --family)."
    )


def _npz_array_names(path):
    """Array names of an ``.npz`` from its zip directory (nothing decompressed);
    a file that is not a readable archive raises :func:`read_npz`'s error."""
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
    except Exception:  # not a zip: read_npz names the problem
        read_npz(path, error=InstanceFormatError)
        raise InstanceFormatError(f"{path}: not a readable .npz file.") from None
    return [n[:-len(".npy")] for n in names if n.endswith(".npy")]


def instance_family(path, family=None):
    """The family of the instance file ``path``.

    ``family`` when given; else the family of the ``manifest.json`` beside
    the file when it lists the file; else the one registered family whose
    arrays the file holds, judged by the array names
    (:class:`FamilySpec` ``arrays``): ``X`` with ``quadruplets`` and
    ``delta`` is Qwise, ``X`` with ``y`` is SLR, and so on.

    Parameters
    ----------
    path : str or Path
    family : str, optional

    Returns
    -------
    str

    Raises
    ------
    CollectionError
        Naming the file when it is missing or unreadable, when its arrays
        fit several families or none, or when ``family`` is not registered.
    """
    if family is not None:
        return _family(family).name
    path = Path(path).resolve()
    if not path.is_file():
        raise InstanceFormatError(f"{path}: file not found.")
    with _locked(path.parent, exclusive=False):
        entry, fam = _manifest_entry(path, None)
    if entry is not None:
        return fam
    return _family_from_arrays(_npz_array_names(path), path)


def load_instance_file(path, *, family=None, hyperparameters=None):
    """Load an instance from its ``.npz`` path.

    The family and hyperparameters come from a ``manifest.json`` beside the
    file when it lists the file; ``family`` and ``hyperparameters`` override
    (or, without a manifest entry, supply) them.

    Parameters
    ----------
    path : str or Path
    family : str, optional
        Default: the manifest's, else the family whose arrays the file
        holds (see :func:`instance_family`).
    hyperparameters : dict, optional
        Entries override the manifest's (``None`` values are ignored).

    Returns
    -------
    Instance
    """
    path = Path(path).resolve()
    if not path.is_file():
        raise InstanceFormatError(f"{path}: file not found.")
    man_path = path.parent / "manifest.json"
    with _locked(path.parent, exclusive=False):  # the file and its entry as a pair
        sha, arrays = _read_npz_hashed(path, InstanceFormatError)
        entry, family = _manifest_entry(path, family)
    if entry is not None and entry["sha256"] != sha:
        raise InstanceFormatError(
            f"{path}: sha256 {sha[:12]}... does not match {man_path}'s "
            f"{entry['sha256'][:12]}...; the file changed without its manifest."
        )
    if family is None:
        family = _family_from_arrays(arrays, path, hyperparameters)
    hp = dict(entry["hyperparameters"]) if entry else {}
    hp.update({k: v for k, v in (hyperparameters or {}).items() if v is not None})
    return _build_instance(
        family, entry["name"] if entry else path.stem, path, arrays, hp,
        description=entry.get("description", "") if entry else "",
        source=entry.get("source", "") if entry else "",
        sha=sha, entry=entry,
    )


def iter_instances(root, family=None, only=None):
    """Yield the instances of ``family`` (default: every family present).

    Parameters
    ----------
    family : str or sequence of str, optional
        One family or several (in the order given).
    only : str or sequence of str, optional
        Restrict to these names; an unknown name raises.
    """
    if isinstance(family, str):
        fams = [family]
    else:
        fams = list(family) if family else families(root)
    if isinstance(only, str):
        only = [only]
    wanted = set(only or ())
    found = set()
    for fam in fams:
        for name in instance_names(root, fam):
            if only and name not in wanted:
                continue
            found.add(name)
            yield load_instance(root, fam, name)
    missing = wanted - found
    if missing:
        raise CollectionError(f"only: no instance named {sorted(missing)} in {fams}.")


def write_instance(root, family, name, arrays, *, hyperparameters, description="",
                   source="", extra=None):
    """Write (or replace) an instance and its manifest entry, atomically as a pair.

    The arrays are validated and turned into the family's problem data
    before anything is written, so an invalid instance never reaches disk.
    The manifest is read, changed and written under the folder's exclusive
    lock, so concurrent writers do not lose each other's entries; when
    ``<name>.npz`` is replaced by other bytes the new file is first staged
    and the manifest switched to it (:func:`_write_pair`), so a writer
    killed at any moment leaves the old instance or the new one, each with
    a file that matches its manifest hash.

    Parameters
    ----------
    root : str or Path
    family, name : str
    arrays : dict of array_like
    hyperparameters : dict
    description, source : str
    extra : dict, optional
        More JSON fields for the manifest entry (e.g. ``random_state``).

    Returns
    -------
    Instance
    """
    spec = _family(family)
    if not _NAME_RE.match(name):
        raise InstanceFormatError(f"name: {name!r} is not a valid instance name.")
    folder = problems_dir(root, family)
    path = folder / f"{name}.npz"
    inst = _build_instance(family, name, path, arrays, hyperparameters,
                           description=description, source=source)
    instance_to_data(inst)  # the family's own checks, before writing
    # store exactly the declared arrays, in spec order, with canonical dtypes
    data = npz_bytes({a.name: inst.arrays[a.name] for a in spec.arrays
                      if a.name in inst.arrays})
    sha = hashlib.sha256(data).hexdigest()
    man_path = folder / "manifest.json"
    entry = {
        "name": name,
        "file": path.name,
        "description": description,
        "source": source,
        "hyperparameters": inst.hyperparameters,
        "sizes": inst.sizes,
        "sha256": sha,
    }
    entry.update(extra or {})
    folder.mkdir(parents=True, exist_ok=True)
    # one writer at a time: the manifest is read, changed and written whole
    with _locked(folder, exclusive=True):
        if os.path.lexists(man_path):
            man = read_manifest(root, family)
        else:
            man = {"format_version": FORMAT_VERSION, "family": family,
                   "instances": []}
        old = [e["name"] for e in man["instances"]]
        others = [e for e in man["instances"] if e["name"] != name]
        where = old.index(name) if name in old else len(others)

        def point_to(file_name):
            entry["file"] = file_name
            man["instances"] = others[:where] + [entry] + others[where:]
            atomic_write_bytes(man_path, _json_bytes(man))

        taken = {e["file"] for e in others}
        final = _write_pair(folder, path.name, data, sha, point_to,
                            target_taken=path.name in taken)
        _sweep(folder, name, man_path.name, keep=taken | {final})
    inst.path = folder / final
    inst.sha256 = sha
    inst.entry = entry
    return inst


# ---------------------------------------------------------------------------
# References
# ---------------------------------------------------------------------------


@dataclass(eq=False)
class Reference:
    """A stored certified answer.

    Attributes
    ----------
    family, name : str
    path : Path
        The ``.json`` record.
    record : dict
        The parsed record (see ``docs/formats.md``).
    M : ndarray of shape (d, d)
    """

    family: str
    name: str
    path: Path
    record: dict
    M: np.ndarray

    @property
    def objective(self):
        return float(self.record["objective"])

    @property
    def instance_sha256(self):
        return self.record["instance"]["sha256"]

    @property
    def exact_seconds(self):
        return float(self.record["exact_seconds"])


_REFERENCE_FIELDS = {
    "format_version": int,
    "family": str,
    "name": str,
    "instance": dict,
    "hyperparameters": dict,
    "objective": float,
    "certificate": dict,
    "solvers": dict,
    "agreement": dict,
    "exact_seconds": float,
    "versions": dict,
    "matrix": dict,
}


def library_versions():
    """Versions of the libraries a reference depends on."""
    import cvxpy
    import scipy

    from . import __version__

    out = {"cvxmetric": __version__, "cvxpy": cvxpy.__version__,
           "numpy": np.__version__, "scipy": scipy.__version__,
           "python": platform.python_version()}
    for mod in ("clarabel", "scs"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:  # pragma: no cover - informative only
            out[mod] = "unknown"
    return out


def write_reference(root, instance, M, record):
    """Write ``reference/<family>/<name>.{npz,json}`` atomically, as a pair.

    The JSON record names the matrix file and holds its hash; it is the
    switch.  A new matrix is written under a staged name first, the record
    is pointed at it, then the canonical ``<name>.npz`` is rewritten and the
    record pointed back (see :func:`_write_pair`), all under the folder's
    exclusive lock: a writer killed at any moment leaves the old reference or
    the new one, never a record with a matrix that is not its own.

    Parameters
    ----------
    root : str or Path
    instance : Instance
    M : ndarray of shape (d, d)
    record : dict
        Everything but ``matrix`` (filled in here).

    Returns
    -------
    Reference
    """
    folder = reference_dir(root, instance.family)
    M = np.asarray(M, dtype=np.float64)
    data = npz_bytes({"M": M})
    sha = hashlib.sha256(data).hexdigest()
    record = dict(record)
    json_path = folder / f"{instance.name}.json"

    def point_to(file_name):
        record["matrix"] = {"file": file_name, "shape": list(M.shape), "sha256": sha}
        atomic_write_bytes(json_path, _json_bytes(record))

    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder, exclusive=True):
        final = _write_pair(folder, f"{instance.name}.npz", data, sha, point_to)
        _sweep(folder, instance.name, json_path.name, keep={final})
    return Reference(instance.family, instance.name, json_path,
                     json.loads(_json_bytes(record)), M)


def _read_reference_files(folder, json_path, instance):
    """The validated record and matrix of a reference (see :func:`read_reference`)."""
    _regular_file(json_path, ReferenceFormatError, "a reference record")
    if not json_path.is_file():
        raise MissingReferenceError(
            f"{json_path}: no reference for instance {instance.name!r} (run "
            f"`cvxmetric reference --family {instance.family} --only "
            f"{instance.name}`)."
        )
    rec = _read_json(json_path, ReferenceFormatError)
    if not isinstance(rec, dict):
        raise ReferenceFormatError(f"{json_path}: expected a JSON object.")
    for key, typ in _REFERENCE_FIELDS.items():
        if key not in rec:
            raise ReferenceFormatError(f"{json_path}: missing field {key!r}.")
        val = rec[key]
        ok = (isinstance(val, (int, float)) and not isinstance(val, bool)
              and math.isfinite(val)) if typ is float else isinstance(val, typ)
        if not ok:
            raise ReferenceFormatError(
                f"{json_path}: field {key!r} must be {typ.__name__}, got "
                f"{type(val).__name__}."
            )
    if rec["format_version"] != FORMAT_VERSION:
        raise ReferenceFormatError(
            f"{json_path}: format_version is {rec['format_version']!r}; this "
            f"cvxmetric reads {FORMAT_VERSION}."
        )
    sha = rec["instance"].get("sha256")
    if not isinstance(sha, str) or not _SHA_RE.match(sha):
        raise ReferenceFormatError(
            f"{json_path}: field 'instance.sha256' must be 64 lowercase hex digits."
        )
    mat = rec["matrix"]
    file = mat.get("file", f"{instance.name}.npz")
    if (not isinstance(file, str) or not file.endswith(".npz")
            or not _NAME_RE.match(file)):
        raise ReferenceFormatError(
            f"{json_path}: field 'matrix.file': {file!r} must be a plain file "
            f"name ending in .npz in the record's folder."
        )
    npz_path = folder / file
    _regular_file(npz_path, ReferenceFormatError, "a reference matrix")
    if not npz_path.is_file():
        raise ReferenceFormatError(f"{json_path}: matrix file {npz_path} not found.")

    def same_hash(sha):
        if sha != mat.get("sha256"):
            raise ReferenceFormatError(
                f"{npz_path}: sha256 does not match {json_path}'s field "
                f"'matrix.sha256'; the two files are out of step."
            )

    _, arrays = _read_npz_hashed(npz_path, ReferenceFormatError, same_hash)
    if set(arrays) != {"M"}:
        raise ReferenceFormatError(
            f"{npz_path}: expected exactly one array 'M', got {sorted(arrays)}."
        )
    M = arrays["M"]
    if M.dtype.kind != "f" or M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ReferenceFormatError(
            f"{npz_path}: array 'M' must be a square float matrix, got dtype "
            f"{M.dtype} and shape {M.shape}."
        )
    if not np.all(np.isfinite(M)):
        raise ReferenceFormatError(f"{npz_path}: array 'M' has non-finite values.")
    return rec, M


def read_reference(root, instance, *, check=True):
    """Read the reference of ``instance``.

    Parameters
    ----------
    root : str or Path
    instance : Instance
    check : bool
        Raise :class:`StaleReferenceError` when the reference was computed
        from a different instance file or different hyperparameters.

    Raises
    ------
    MissingReferenceError, ReferenceFormatError, StaleReferenceError
    """
    folder = reference_dir(root, instance.family)
    json_path = folder / f"{instance.name}.json"
    with _locked(folder, exclusive=False):  # the record and its matrix as a pair
        rec, M = _read_reference_files(folder, json_path, instance)
    ref = Reference(instance.family, instance.name, json_path, rec, M)
    if check:
        _check_current(ref, instance)
    return ref


def _canonical_hp(hp):
    return json.loads(json.dumps(jsonable(hp), sort_keys=True))


def _check_current(ref, instance):
    if ref.instance_sha256 != instance.sha256:
        raise StaleReferenceError(
            f"{ref.path}: stale reference: computed from an instance with sha256 "
            f"{ref.instance_sha256[:12]}..., but {instance.path} has "
            f"{instance.sha256[:12]}... (recompute it with `cvxmetric reference "
            f"--family {instance.family} --only {instance.name}`)."
        )
    if _canonical_hp(ref.record["hyperparameters"]) != _canonical_hp(
            instance.hyperparameters):
        raise StaleReferenceError(
            f"{ref.path}: stale reference: computed with hyperparameters "
            f"{ref.record['hyperparameters']}, the manifest now has "
            f"{jsonable(instance.hyperparameters)}."
        )
    spec = instance.spec
    d = (spec.sizes(instance.arrays).get("d") if spec.matrix_dim is None
         else spec.matrix_dim(instance.arrays))
    if d is not None and ref.M.shape != (d, d):
        raise StaleReferenceError(
            f"{ref.path}: stale reference: M has shape {ref.M.shape}, the "
            f"instance has d={d}."
        )


def reference_status(root, instance):
    """``(status, detail)`` with status in current / missing / stale / invalid."""
    try:
        ref = read_reference(root, instance)
    except MissingReferenceError as exc:
        return "missing", str(exc)
    except StaleReferenceError as exc:
        return "stale", str(exc)
    except ReferenceFormatError as exc:
        return "invalid", str(exc)
    return "current", ref


@dataclass(eq=False)
class ReferenceOutcome:
    """Result of :func:`compute_reference` for one instance.

    Attributes
    ----------
    instance : Instance
    accepted : bool
        Both certificates passed and the objectives agree.
    reasons : list of str
        Why not, when not accepted.
    record : dict
        The JSON record (written only when accepted).
    M : ndarray or None
        Clarabel's matrix.
    written : bool
    """

    instance: Instance
    accepted: bool
    reasons: list
    record: dict
    M: object
    written: bool = False


def _solver_summary(res, seconds):
    cert = res.certificate
    return {
        "status": res.status,
        "objective": float(res.objective),
        "rel_gap": float(cert.rel_gap),
        "max_violation": float(cert.max_violation),
        "passed": bool(cert.passed),
        "n_iter": int(res.n_iter),
        "seconds": float(seconds),
        "solver_version": cert.solver_version,
        "tolerances": cert.tolerances,
    }


def compute_reference(instance, *, tol=1e-9, scs_tol=None):
    """Solve ``instance`` with Clarabel and, independently, with SCS.

    Both solve the family's declared model (for Qwise
    ``solve_exact(data, reduce=False, solvers=(name,))``).  The reference is
    accepted when both certificates pass and
    ``|f_clarabel - f_scs| / max(1, |f_clarabel|) <= REFERENCE_AGREEMENT``;
    its objective and matrix are Clarabel's.

    Parameters
    ----------
    instance : Instance
    tol : float
        Clarabel's tolerance.
    scs_tol : float, optional
        SCS's tolerance (default ``tol``).

    Returns
    -------
    ReferenceOutcome
    """
    spec = instance.spec
    data = instance.to_data()
    runs, reasons = {}, []
    for solver, t in (("CLARABEL", tol), ("SCS", scs_tol or tol)):
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                # cvxpy's "solution may be inaccurate" is judged by the certificate
                warnings.simplefilter("ignore", UserWarning)
                res = spec.reference_solve(data, solver, t)
        except SolverError as exc:
            reasons.append(f"{solver}: {exc}")
            continue
        seconds = time.perf_counter() - t0
        if not res.certificate.passed:
            reasons.append(
                f"{solver}: certificate fails (rel_gap {res.certificate.rel_gap:.3g}, "
                f"violation {res.certificate.max_violation:.3g})."
            )
            continue
        runs[solver] = (res, seconds)
    record = {
        "format_version": FORMAT_VERSION,
        "family": instance.family,
        "name": instance.name,
        "instance": {"file": f"problems/{instance.family}/{instance.path.name}",
                     "sha256": instance.sha256},
        "hyperparameters": instance.hyperparameters,
        "model": "declared (reduce=False)",
        "solvers": {s: _solver_summary(r, t) for s, (r, t) in runs.items()},
        "versions": library_versions(),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    M = None
    if len(runs) == 2:
        f_c = runs["CLARABEL"][0].objective
        f_s = runs["SCS"][0].objective
        rel = abs(f_c - f_s) / max(1.0, abs(f_c))
        record["agreement"] = {"rel_diff": rel, "tolerance": REFERENCE_AGREEMENT,
                               "passed": rel <= REFERENCE_AGREEMENT}
        if rel > REFERENCE_AGREEMENT:
            reasons.append(
                f"objectives disagree: CLARABEL {f_c:.10g}, SCS {f_s:.10g} "
                f"(relative difference {rel:.3g} > {REFERENCE_AGREEMENT:g})."
            )
        res_c, sec_c = runs["CLARABEL"]
        record["objective"] = float(res_c.objective)
        record["certificate"] = res_c.certificate.as_dict()
        record["exact_seconds"] = float(sec_c)
        M = res_c.M
    return ReferenceOutcome(instance, not reasons, reasons, record, M)


def make_references(root, family=None, only=None, *, tol=1e-9, scs_tol=None,
                    write=True, progress=None, out=None):
    """Compute (and write the accepted) references of a collection.

    Parameters
    ----------
    root : str or Path
    family : str, optional
    only : str or sequence of str, optional
    tol, scs_tol : float
        See :func:`compute_reference`.
    write : bool
        Write accepted references.
    progress : callable, optional
        Called with each :class:`ReferenceOutcome` as it is done.
    out : str or Path, optional
        Collection root the references are written to (under
        ``out/reference/<family>/``); default ``root``.  The instances are
        always read from ``root``.

    Returns
    -------
    list of ReferenceOutcome
    """
    outcomes = []
    for inst in iter_instances(root, family, only):
        outcome = compute_reference(inst, tol=tol, scs_tol=scs_tol)
        if outcome.accepted and write:
            write_reference(root if out is None else out, inst, outcome.M,
                            outcome.record)
            outcome.written = True
        outcomes.append(outcome)
        if progress is not None:
            progress(outcome)
    return outcomes


# ---------------------------------------------------------------------------
# Verification of the fast methods
# ---------------------------------------------------------------------------


@dataclass
class VerifyRow:
    """One line of ``cvxmetric verify``.

    Attributes
    ----------
    family, instance, method : str
    objective : float
        The method's objective, recomputed from its matrix.
    reference : float
        The reference objective.
    gap : float
        ``(objective - reference) / max(1, |reference|)``.
    tolerance : float
        ``tolerance(family, method)``.
    psd_violation : float
        ``max(0, -min_eig(M))``.
    seconds : float
        Wall-clock time of the method.
    exact_seconds : float
        Wall-clock time of the instance's exact solve in the same run of
        :func:`verify` (NaN when the exact path was not run there).
    speedup : float
        ``exact_seconds / seconds`` for a method other than ``"exact"``
        (NaN when the exact path was not run in the same call, or failed):
        both times are measured on the same machine in the same run, never
        against the reference's stored time.
    status : str
        The method's status word.
    passed : bool
    error : str or None
        Why the row failed when not because of the gap.
    """

    family: str
    instance: str
    method: str
    objective: float = float("nan")
    reference: float = float("nan")
    gap: float = float("nan")
    tolerance: float = float("nan")
    psd_violation: float = float("nan")
    seconds: float = float("nan")
    exact_seconds: float = float("nan")
    speedup: float = float("nan")
    status: str = ""
    passed: bool = False
    error: object = None

    def as_dict(self):
        return jsonable(dataclasses.asdict(self))


def run_method(family, method, data):
    """Run a registered fast method (``ConvergenceWarning`` silenced: the
    status word says it)."""
    methods = METHODS.get(family, {})
    if method not in methods:
        raise CollectionError(
            f"method: {method!r} is not registered for family {family!r}; have "
            f"{sorted(methods)}."
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return methods[method](data)


def _run_exact(inst, data):
    """The family's certified exact path (``UserWarning`` silenced: the
    certificate and the comparison with the reference judge it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return inst.spec.exact(data)


def _verify_one(inst, ref, method):
    row = VerifyRow(inst.family, inst.name, method, reference=ref.objective)
    try:
        row.tolerance = float(tolerance(inst.family, method))
    except KeyError:
        row.error = f"no tolerance for method {method!r} in TOLERANCES"
        return row
    try:
        data = inst.to_data()
    except CollectionError as exc:  # one unreadable instance is one failed row
        row.error = f"instance invalid: {exc}"
        return row
    t0 = time.perf_counter()
    try:
        if method == "exact":
            res = _run_exact(inst, data)
        else:
            res = run_method(inst.family, method, data)
    except Exception as exc:  # a crashing method is a failed row, not a crash
        row.seconds = time.perf_counter() - t0
        row.error = f"{type(exc).__name__}: {exc}"
        return row
    row.seconds = time.perf_counter() - t0
    row.status = str(res.status)
    M = np.asarray(res.M, dtype=float)
    d = ref.M.shape[0]
    if M.shape != (d, d) or not np.all(np.isfinite(M)):
        row.error = f"returned M of shape {M.shape} (finite: {np.isfinite(M).all()})"
        return row
    if inst.spec.psd:
        M = 0.5 * (M + M.T)
        row.psd_violation = max(0.0, -float(np.linalg.eigvalsh(M)[0]))
    else:
        row.psd_violation = 0.0
    row.objective = float(inst.spec.objective(data, M))
    scale = max(1.0, abs(row.reference))
    row.gap = (row.objective - row.reference) / scale
    if row.psd_violation > PSD_TOL * scale:
        row.error = f"M is not PSD (min eigenvalue {-row.psd_violation:.3g})"
    elif abs(row.gap) > row.tolerance:
        row.error = (f"gap {row.gap:.3g} exceeds tolerance {row.tolerance:g}"
                     if row.gap > 0 else
                     f"objective below the certified reference by {-row.gap:.3g}")
    row.passed = row.error is None
    return row


def verify_methods(family):
    """The methods :func:`verify` runs on ``family`` by default: its
    registered fast methods, else (a family without one, e.g. OMDML, whose
    online algorithm is not a solver of the batch problem) its exact path.
    """
    return list(METHODS.get(family, {})) or ["exact"]


def verify_plan(root, family=None, methods=None, only=None, *, with_exact=False):
    """The runs :func:`verify` makes, without running them.

    Returns
    -------
    list of (Instance, list of str)
        Each selected instance and the methods run on it (``"exact"``
        first when it is among them); instances no selected method applies
        to are left out.
    """
    plan = []
    for inst in iter_instances(root, family, only):
        names = list(methods) if methods else verify_methods(inst.family)
        if with_exact and "exact" not in names:
            names.insert(0, "exact")
        known = ["exact"] + list(METHODS.get(inst.family, {}))
        names = [m for m in names if m in known]
        if inst.spec.applies is not None:
            names = [m for m in names
                     if m == "exact" or inst.spec.applies(m, inst.hyperparameters)]
        names.sort(key=lambda m: m != "exact")  # stable: exact first
        if names:
            plan.append((inst, names))
    return plan


def verify(root, family=None, methods=None, only=None, *, with_exact=False,
           progress=False):
    """Run every registered fast method on every instance against its reference.

    Parameters
    ----------
    root : str or Path
    family : str or sequence of str, optional
    methods : sequence of str, optional
        ``"exact"`` (the family's certified exact path) and registered
        method names; a name a family does not have is skipped there.
        Default: :func:`verify_methods` of each family (its fast methods,
        else its exact path).
    only : str or sequence of str, optional
        Instance names.
    with_exact : bool
        Also run the exact path of every instance, so that ``speedup``
        compares times measured in this run.
    progress : bool
        Show a tqdm progress bar on stderr; it counts the rows returned.

    Returns
    -------
    list of VerifyRow
        A row fails when ``|gap| > tolerance(family, method)``, ``M`` is not PSD,
        the method raised, or the reference is missing, stale or invalid
        (one row with ``method="-"``).

    Raises
    ------
    ValueError
        When the selection holds no run (no selected instance has one of
        ``methods``).
    """
    from tqdm import tqdm

    jobs = []
    for inst, names in verify_plan(root, family, methods, only,
                                   with_exact=with_exact):
        status, ref = reference_status(root, inst)
        jobs.append((inst, names, status, ref))
    if not jobs:
        raise ValueError(
            "methods: nothing to verify; no selected instance"
            + (f" of family {family!r}" if isinstance(family, str) else "")
            + (f" has method(s) {list(methods)}" if methods else "")
            + " (`cvxmetric solve FILE --list-methods` lists a family's methods).")
    # one bar step per row returned: a stale reference is one row
    total = sum(len(n) if status == "current" else 1 for _, n, status, _ in jobs)
    rows = []
    with tqdm(total=total, disable=not progress, unit="run", leave=False) as bar:
        for inst, names, status, ref in jobs:
            if status != "current":
                rows.append(VerifyRow(inst.family, inst.name, "-", status=status,
                                      error=f"reference {status}: {ref}"))
                bar.update(1)
                continue
            inst_rows = []
            for method in names:
                bar.set_description(f"{inst.name}/{method}")
                inst_rows.append(_verify_one(inst, ref, method))
                bar.update(1)
            exact = next((r for r in inst_rows if r.method == "exact"
                          and r.error is None and np.isfinite(r.seconds)), None)
            if exact is not None:  # both times of this run
                for r in inst_rows:
                    r.exact_seconds = exact.seconds
                    if r.method != "exact" and np.isfinite(r.seconds):
                        r.speedup = exact.seconds / max(r.seconds, 1e-12)
            rows.extend(inst_rows)
    return rows


# ---------------------------------------------------------------------------
# Bundled instances
# ---------------------------------------------------------------------------


def gaussian_classes(rng, n, d, n_classes, separation):
    """``(X, y)``: ``n`` points in ``d`` dims, ``n_classes`` balanced
    Gaussian classes with means of scale ``separation`` (instance
    generators; ``rng`` a ``RandomState``)."""
    y = np.arange(n) % n_classes
    means = rng.normal(scale=separation, size=(n_classes, d))
    return means[y] + rng.normal(size=(n, d)), y


def standardize(X):
    """Columns of ``X`` centred and scaled to unit variance (instance
    generators)."""
    return (X - X.mean(axis=0)) / X.std(axis=0)


def _same_arrays(stored, generated):
    """Whether ``generated`` equals the ``stored`` arrays up to rounding:
    the same names, shapes and dtype kinds, integers equal, floats within
    :data:`_REGENERATION_RTOL` of the largest stored magnitude."""
    if set(stored) != set(generated):
        return False
    for key, a in stored.items():
        b = np.asarray(generated[key])
        if a.shape != b.shape or a.dtype.kind != b.dtype.kind:
            return False
        if a.dtype.kind == "f":
            scale = float(np.max(np.abs(a))) if a.size else 0.0
            if not np.all(np.abs(a - b) <= _REGENERATION_RTOL * max(scale, 1e-300)):
                return False
        elif not np.array_equal(a, b):
            return False
    return True


def make_problems(root, family="qwise", *, check=False):
    """(Re)generate the bundled instances of ``family`` deterministically.

    Entries of other (user-added) instances in the manifest are kept.

    Parameters
    ----------
    root : str or Path
    family : str
    check : bool
        Write nothing; compare the generated bytes with the files on disk.

    Returns
    -------
    list of dict
        Per instance: ``name``, ``sha256``, ``changed`` (differs from the
        file on disk) and ``sizes``.
    """
    spec = _family(family)
    if spec.generate is None:
        raise CollectionError(f"family: {family!r} has no bundled instances.")
    man_path = _manifest_path(root, family)
    current = {}
    if man_path.is_file():
        current = {e["name"]: e for e in read_manifest(root, family)["instances"]}
    out = []
    for item in spec.generate():
        name = item["name"]
        # the file the manifest names (a staged name when a writer was killed
        # mid-switch), else where the instance will be written
        path = problems_dir(root, family) / current.get(name, {}).get(
            "file", f"{name}.npz")
        arrays = item["arrays"]
        stored = (read_npz(path) if path.is_file() and not path.is_symlink()
                  else None)
        if stored is not None and _same_arrays(stored, arrays):
            # Transcendental functions (np.exp, np.log) differ in the last
            # bit between CPUs (SIMD dispatch): keep the stored bytes when
            # they match the generator to rounding, so the hash -- and the
            # reference tied to it -- stays valid on every machine.
            arrays = stored
        inst = _build_instance(family, name, path, arrays, item["hyperparameters"])
        data = npz_bytes({a.name: inst.arrays[a.name] for a in spec.arrays
                          if a.name in inst.arrays})
        sha = hashlib.sha256(data).hexdigest()
        on_disk = sha256_file(path) if path.is_file() else None
        changed = on_disk != sha or current.get(name, {}).get("sha256") != sha
        if not check:
            extra = {"random_state": item["random_state"]} \
                if "random_state" in item else None
            write_instance(root, family, name, arrays,
                           hyperparameters=item["hyperparameters"],
                           description=item.get("description", ""),
                           source=item.get("source", ""), extra=extra)
        out.append({"name": name, "sha256": sha, "changed": changed,
                    "sizes": inst.sizes})
    return out

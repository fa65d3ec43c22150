"""Array back ends: where a fast solver's hot loops run.

The fast solvers are written for NumPy.  Their hot loops -- dense products
over samples or pairs, symmetric eigendecompositions, Cholesky solves --
can also run on any namespace of the array API standard (PyTorch or CuPy
arrays on a GPU, ``array-api-strict`` in the tests, ``dask.array`` for data
that outgrows one machine) through ``array-api-compat``, an optional
dependency (``pip install cvxmetric[array-api]``).

The rules this module serves:

- NumPy stays the default: with NumPy input nothing here imports
  ``array_api_compat``, torch, cupy or dask.
- The data stay where they are given: a solver asks :func:`namespace` for
  the namespace of its input and runs its hot loops there.
- Everything else -- line-search bookkeeping, small dense factorizations,
  the CVXPY exact path, the result -- runs on the host, and every move
  between host and device goes through :class:`Transfers`, which counts
  it, so a run reports how many transfers it made and of how many bytes.
- Certificates are computed in float64 on whichever device holds the
  data (:func:`float64`); a certificate passes only when that float64
  computation passes.
"""

import importlib
import sys
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "Cluster",
    "Device",
    "OnDevice",
    "Transfers",
    "device_of",
    "float64",
    "is_dask",
    "is_numpy",
    "loaded_backends",
    "namespace",
    "require",
    "to_numpy",
]

#: The optional extra that installs the array-API back ends.
EXTRA = "array-api"


def require(module):
    """Import an optional dependency, or raise a clear ``ImportError``.

    Parameters
    ----------
    module : str
        ``"array_api_compat"``, ``"dask.array"``, ``"distributed"``...
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"{module} is needed to run on non-NumPy arrays; install it with "
            f"`pip install cvxmetric[{EXTRA}]`.") from exc


def _module_of(x):
    return type(x).__module__.split(".", 1)[0]


def is_numpy(*arrays):
    """Whether every array given is a NumPy array (or a Python scalar).

    Decided from the types alone: nothing is imported.
    """
    return all(x is None or isinstance(x, (np.ndarray, np.generic, int, float))
               for x in arrays)


def is_dask(x):
    """Whether ``x`` is a ``dask.array.Array`` (without importing dask)."""
    return _module_of(x) == "dask" and type(x).__name__ == "Array"


def namespace(*arrays):
    """The array namespace of the arrays given: ``(xp, numpy_like)``.

    ``numpy_like`` is True for NumPy arrays, where ``xp`` is ``numpy``
    itself and nothing is imported; otherwise ``xp`` is
    ``array_api_compat``'s namespace of the arrays (all of one library).

    Raises
    ------
    ImportError
        For non-NumPy arrays when ``array-api-compat`` is not installed.
    TypeError
        When the arrays come from different libraries.
    """
    arrays = [x for x in arrays if x is not None]
    if is_numpy(*arrays):
        return np, True
    compat = require("array_api_compat")
    try:
        xp = compat.array_namespace(*arrays)
    except TypeError as exc:
        names = sorted({_module_of(x) for x in arrays})
        raise TypeError(f"arrays from different libraries ({', '.join(names)}): "
                        "give all of one library.") from exc
    return xp, False


def check_host_input(x, name, what):
    """Refuse an array of another namespace where ``what`` runs on NumPy
    only, rather than converting it silently (lists and NumPy pass).

    Raises
    ------
    TypeError
        Naming ``name`` and ``what``.
    """
    if is_numpy(x) or isinstance(x, (list, tuple)):
        return
    raise TypeError(f"{name}: {what} runs on NumPy arrays only; got a "
                    f"{_module_of(x)} array. Convert it with numpy.asarray, or use a "
                    f"method with an array-API back end (docs/backends.md).")


def device_of(x):
    """The device holding ``x`` (``"cpu"`` for NumPy)."""
    if is_numpy(x):
        return "cpu"
    return require("array_api_compat").device(x)


def float64(x, xp=None):
    """``x`` as float64 on the device that holds it.

    Certificates are evaluated in float64 whatever the input's precision;
    namespaces without float64 on the device (Apple's MPS) raise.
    """
    if xp is None:
        xp, _ = namespace(x)
    if x.dtype == xp.float64:
        return x
    return xp.astype(x, xp.float64)


def to_numpy(x):
    """``x`` as a NumPy array on the host, without counting (see
    :meth:`Transfers.to_host` for the counted move)."""
    if is_numpy(x):
        return np.asarray(x)
    if is_dask(x):
        return np.asarray(x.compute())
    mod = _module_of(x)
    if mod == "torch":
        return x.detach().cpu().numpy()
    if mod == "cupy":
        return x.get()
    # array-api-strict and other namespaces implement the buffer or
    # __array__ protocol on the CPU device
    return np.asarray(x)


@dataclass
class Transfers:
    """Counted moves between the host and the device of one run.

    Attributes
    ----------
    to_host_count, to_device_count : int
        Number of arrays moved each way.
    to_host_bytes, to_device_bytes : int
        Their sizes in bytes.
    """

    to_host_count: int = 0
    to_host_bytes: int = 0
    to_device_count: int = 0
    to_device_bytes: int = 0

    def to_host(self, x):
        """``x`` as a NumPy array; counted when it leaves a device."""
        if is_numpy(x):
            return np.asarray(x)
        out = to_numpy(x)
        self.to_host_count += 1
        self.to_host_bytes += int(out.nbytes)
        return out

    def to_device(self, a, xp, device=None):
        """The NumPy array ``a`` in namespace ``xp`` (on ``device``);
        counted unless ``xp`` is NumPy."""
        if xp is np:
            return np.asarray(a)
        a = np.ascontiguousarray(a)
        self.sent(a)
        if device is None:
            return xp.asarray(a)
        return xp.asarray(a, device=device)

    def as_dict(self):
        """The counts, for a result's ``info`` and the trace."""
        return {"to_host": self.to_host_count, "to_host_bytes": self.to_host_bytes,
                "to_device": self.to_device_count,
                "to_device_bytes": self.to_device_bytes}

    def add(self, other):
        """Add the counts of ``other`` to these: parts of one run that
        counted apart (an estimator's scaling, a data's construction),
        reported as one."""
        self.to_host_count += other.to_host_count
        self.to_host_bytes += other.to_host_bytes
        self.to_device_count += other.to_device_count
        self.to_device_bytes += other.to_device_bytes

    def sent(self, *arrays):
        """Count host arrays that left for a device or a cluster by another
        road (a Dask task's argument); returns them."""
        for a in arrays:
            self.to_device_count += 1
            self.to_device_bytes += int(np.asarray(a).nbytes)
        return arrays

    def gathered(self, *arrays):
        """Count arrays that arrived on the host by another road (a Dask
        ``compute``); returns them."""
        for a in arrays:
            self.to_host_count += 1
            self.to_host_bytes += int(np.asarray(a).nbytes)
        return arrays


@dataclass(eq=False)
class Device:
    """Where a problem's arrays live -- a namespace and its device -- and
    the counted moves to and from there.

    NumPy (the default) moves nothing.  Another namespace (PyTorch, CuPy,
    ``array-api-strict``) keeps the large arrays on its device; what
    crosses goes through :meth:`dev` and :meth:`host` and is counted in
    ``transfers``.  The families' data classes subclass it with the
    operations their solvers need on the device.
    """

    xp: object = np
    device: object = None
    transfers: Transfers = field(default_factory=Transfers)

    @classmethod
    def of(cls, X, transfers=None):
        """The device holding the array ``X``: its namespace and device,
        the moves counted in ``transfers`` (a new count when None)."""
        xp, _ = namespace(X)
        return cls(xp, device_of(X), Transfers() if transfers is None else transfers)

    @property
    def on_host(self):
        """Whether the namespace is NumPy's."""
        return self.xp is np

    def dev(self, a, dtype=None):
        """The host (NumPy) array ``a`` (as ``dtype``) on the device,
        counted; device arrays and ``None`` as they are."""
        if a is None or not is_numpy(a):
            return a
        a = np.asarray(a, dtype=dtype)
        return self.transfers.to_device(a, self.xp, self.device)

    def host(self, x):
        """The device array ``x`` as NumPy, counted; NumPy arrays and
        ``None`` as they are."""
        return None if x is None else self.transfers.to_host(x)

    def scalars(self, *values):
        """0-d arrays as Python floats: one move for all of them."""
        if self.xp is np:
            return tuple(float(v) for v in values)
        xp = self.xp
        both = self.host(xp.stack([xp.astype(v, xp.float64) for v in values]))
        return tuple(float(v) for v in both)

    def info(self):
        """``backend``, ``device`` and ``transfers`` for a result's ``info``."""
        return {"backend": getattr(self.xp, "__name__", str(self.xp)),
                "device": str(self.device or "cpu"),
                "transfers": self.transfers.as_dict()}


@dataclass(eq=False)
class Cluster(Device):
    """A Dask cluster as a :class:`Device`: the data are its ``dask.array``
    chunks, the passes its tasks.

    The host side of the tasks is NumPy (``xp``): what the solver keeps
    and what :meth:`dev` and :meth:`host` see are NumPy arrays, moved by
    no one.  What crosses is a task's argument or a gathered result,
    counted by :meth:`Transfers.sent` and :meth:`Transfers.gathered`.
    A result reports ``backend`` and ``device`` ``"dask"``; ``device``
    itself is None, the device of those NumPy arrays.
    """

    @property
    def on_host(self):
        """False: the data are on the cluster (a host-only step, such as
        an interior-point fallback, does not run on them)."""
        return False

    def info(self):
        """``backend`` and ``device`` ``"dask"``, and the counted moves."""
        return {"backend": "dask", "device": "dask",
                "transfers": self.transfers.as_dict()}


class OnDevice:
    """What data whose arrays live on a :class:`Device` -- their ``where``
    attribute -- answer about them: the namespace, whether it is NumPy's,
    the counted moves and what a result reports of them.  The families'
    data classes mix it in instead of each spelling these out."""

    @property
    def xp(self):
        """The array namespace of the data (``numpy`` on the host)."""
        return self.where.xp

    @property
    def on_host(self):
        """Whether the data are NumPy arrays (nothing moves)."""
        return self.where.on_host

    @property
    def transfers(self):
        """The counted moves between the host and the device
        (:class:`Transfers`)."""
        return self.where.transfers

    def backend_info(self):
        """``{"backend", "device", "transfers"}`` for a result's ``info``."""
        return self.where.info()


def loaded_backends():
    """The optional array libraries imported so far (for tests of the rule
    that NumPy input imports none of them)."""
    names = ("array_api_compat", "array_api_strict", "torch", "cupy", "dask")
    return sorted(n for n in names if n in sys.modules)

"""Input validation shared by every formulation, solver and estimator.

Every check raises ``ValueError`` (or ``TypeError`` for a wrong type) whose
message names the offending argument, so that a user knows what to fix.
Nothing is silently coerced: integer indices must be integers, floats must be
finite, shapes must match.
"""

import numbers

import numpy as np

__all__ = [
    "check_samples",
    "check_indices",
    "check_finite",
    "check_scalar",
    "check_psd_matrix",
    "check_instance",
    "check_option",
    "check_pair_labels",
    "check_int",
    "describe",
]


def check_int(value, name, *, low=None, high=None):
    """Validate an integer (a Python or NumPy integer, not a bool) within
    optional bounds; the message names ``name`` and never prints an array.

    Parameters
    ----------
    value : object
    name : str
        The argument's name, for the message.
    low, high : int, optional
        Inclusive bounds.

    Returns
    -------
    int
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name}: expected an integer, got {describe(value)}.")
    value = int(value)
    if low is not None and value < low:
        raise ValueError(f"{name}: must be >= {low}, got {value}.")
    if high is not None and value > high:
        raise ValueError(f"{name}: must be <= {high}, got {value}.")
    return value


def describe(value):
    """A short description of a bad argument, for an error message.

    The repr of a scalar, ``None`` or a short string; otherwise the type and
    shape (or length): never the values of an array, whose repr can run to
    thousands of characters.

    Parameters
    ----------
    value : object

    Returns
    -------
    str
    """
    if value is None or isinstance(value, (bool, numbers.Number, np.generic)):
        text = repr(value)
        if len(text) <= 40:
            return text
    if isinstance(value, (str, bytes)):
        text = repr(value)
        return text if len(text) <= 40 else \
            f"a {type(value).__name__} of length {len(value)}"
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple):
        return f"{type(value).__name__} of shape {shape}"
    try:
        return f"{type(value).__name__} of length {len(value)}"
    except TypeError:
        return type(value).__name__


def check_finite(a, name, *, ndim=None, shape=None, dtype=float):
    """Return ``a`` as a finite float array, or raise naming ``name``.

    Parameters
    ----------
    a : array_like
        Values to check.
    name : str
        Argument name used in error messages.
    ndim : int, optional
        Required number of dimensions.
    shape : tuple, optional
        Required shape; ``None`` entries are free.
    dtype : dtype
        Target floating dtype.
    """
    try:
        arr = np.asarray(a)
    except Exception as exc:  # ragged lists and the like
        raise ValueError(f"{name}: cannot be read as an array ({exc}).") from None
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or arr.dtype == bool
    ):
        raise ValueError(f"{name}: expected numbers, got dtype {arr.dtype}.")
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise ValueError(f"{name}: complex values are not supported.")
    arr = arr.astype(dtype, copy=False)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name}: expected a {ndim}-D array, got shape {arr.shape}.")
    if shape is not None:
        if len(shape) != arr.ndim or any(
            s is not None and s != t for s, t in zip(shape, arr.shape)
        ):
            want = tuple("*" if s is None else s for s in shape)
            raise ValueError(f"{name}: expected shape {want}, got {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise ValueError(f"{name}: contains {bad} NaN or infinite value(s).")
    return arr


def check_samples(X, name="X"):
    """Validate a sample matrix ``X`` of shape (n_samples, n_features)."""
    X = check_finite(X, name, ndim=2)
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{name}: empty sample matrix with shape {X.shape}.")
    return X


def check_indices(idx, name, n_samples, *, width=None):
    """Validate integer indices into ``n_samples`` rows.

    Parameters
    ----------
    idx : array_like of int, shape (n_tuples, width)
    name : str
    n_samples : int
    width : int, optional
        Required number of columns (2 for pairs, 3 for triplets, 4 for
        quadruplets).
    """
    try:
        arr = np.asarray(idx)
    except Exception as exc:  # ragged lists and the like
        raise ValueError(f"{name}: cannot be read as an array ({exc}).") from None
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        if arr.size == 0:
            arr = arr.astype(np.intp)
        else:
            raise ValueError(
                f"{name}: indices must be integers, got dtype {arr.dtype}."
            )
    if arr.ndim != 2 or (width is not None and arr.shape[1] != width):
        want = f"(n, {width})" if width is not None else "(n, k)"
        raise ValueError(f"{name}: expected shape {want}, got {arr.shape}.")
    if arr.shape[0] == 0:
        raise ValueError(f"{name}: the constraint set is empty.")
    if arr.min() < 0:
        raise ValueError(f"{name}: negative index {int(arr.min())}.")
    if arr.max() >= n_samples:
        raise ValueError(
            f"{name}: index {int(arr.max())} is out of range for "
            f"{n_samples} samples."
        )
    return arr.astype(np.intp, copy=False)


def check_scalar(x, name, *, low=None, high=None, low_inclusive=True):
    """Validate a finite real scalar within optional bounds."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name}: expected a real number, got {type(x).__name__}.")
    x = float(x)
    if not np.isfinite(x):
        raise ValueError(f"{name}: must be finite, got {x}.")
    if low is not None and (x < low or (x == low and not low_inclusive)):
        op = ">=" if low_inclusive else ">"
        raise ValueError(f"{name}: must be {op} {low}, got {x}.")
    if high is not None and x > high:
        raise ValueError(f"{name}: must be <= {high}, got {x}.")
    return x


def check_psd_matrix(A, name, d, *, tol=1e-10, definite=False):
    """Validate a symmetric PSD (or positive definite) ``d x d`` matrix."""
    A = check_finite(A, name, shape=(d, d))
    scale = max(1.0, float(np.max(np.abs(A))))
    if np.max(np.abs(A - A.T)) > tol * scale:
        raise ValueError(f"{name}: matrix is not symmetric.")
    A = 0.5 * (A + A.T)
    lam_min = float(np.linalg.eigvalsh(A)[0])
    if lam_min < -tol * scale:
        raise ValueError(
            f"{name}: matrix is not positive semidefinite "
            f"(smallest eigenvalue {lam_min:.3g})."
        )
    if definite and lam_min <= tol * scale:
        raise ValueError(
            f"{name}: matrix is singular or nearly so "
            f"(smallest eigenvalue {lam_min:.3g}); a positive definite "
            f"matrix is required."
        )
    return A


def check_instance(value, cls, name):
    """``value`` itself when it is a ``cls``; a TypeError naming ``name`` otherwise."""
    if not isinstance(value, cls):
        raise TypeError(f"{name}: expected {cls.__name__}, got {type(value).__name__}.")
    return value


def check_option(value, name, allowed):
    """Validate that ``value`` is one of ``allowed`` (strings)."""
    if value not in allowed:
        raise ValueError(
            f"{name}: unknown option {value!r}; expected one of "
            f"{', '.join(repr(a) for a in allowed)}."
        )
    return value


def check_pair_labels(y, n_pairs, name="y"):
    """``y`` as an int array of +1 (similar) / -1 (dissimilar), one per pair.

    Raises
    ------
    ValueError
        Naming ``name`` when the shape or a value is wrong (booleans, strings
        and other numbers are refused, not converted; the message shows at
        most five distinct values, never the array).
    """
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n_pairs:
        raise ValueError(f"{name}: expected shape ({n_pairs},) (one label per pair), "
                         f"got {y.shape}.")
    if y.dtype == object or y.dtype.kind not in "iuf" or not np.all(np.isin(y, (-1, 1))):
        shown = list(dict.fromkeys(y.ravel().tolist()))[:5]
        raise ValueError(f"{name}: must be +1 (similar) or -1 (dissimilar), got "
                         f"values {shown}.")
    return y.astype(int)

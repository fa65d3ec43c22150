"""Input validation: every bad input is refused with a message naming it.

Covers :mod:`cvxmetric._validation` directly and the validation done when a
Qwise problem is assembled (:meth:`QwiseData.from_sets`): regulariser option,
``u > l``, ``A_S`` that is not symmetric / PSD, wrong scalar types.
"""

import re

import numpy as np
import pytest

from cvxmetric._validation import (
    check_finite,
    check_indices,
    check_int,
    check_option,
    check_psd_matrix,
    check_samples,
    check_scalar,
    describe,
)
from cvxmetric.constraints import LabeledPairs
from cvxmetric.qwise import QwiseData


def raises_naming(exc, name):
    """``pytest.raises`` whose message must start with ``name:``."""
    return pytest.raises(exc, match=r"^" + re.escape(name) + r"\b")


# ---------------------------------------------------------------------------
# check_finite / check_samples
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_check_samples_rejects_non_finite(bad):
    X = np.ones((4, 2))
    X[2, 1] = bad
    with raises_naming(ValueError, "X"):
        check_samples(X)
    with raises_naming(ValueError, "Z"):
        check_samples(X, "Z")


@pytest.mark.parametrize(
    "X", [np.ones(5), np.ones((2, 2, 2)), np.ones((0, 3)), np.ones((3, 0)), 3.0],
    ids=["1d", "3d", "no-rows", "no-cols", "scalar"],
)
def test_check_samples_rejects_wrong_shapes(X):
    with raises_naming(ValueError, "X"):
        check_samples(X)


@pytest.mark.parametrize(
    "bad", [np.array([["a", "b"]]), np.array([[1 + 1j, 2]]),
            np.array([[None, 1.0]], dtype=object), [[1.0, 2.0], [3.0]]],
    ids=["strings", "complex", "object", "ragged"],
)
def test_check_finite_rejects_non_numeric(bad):
    with raises_naming(ValueError, "A"):
        check_finite(bad, "A")


def test_check_finite_shape_and_cast():
    out = check_finite([[1, 2], [3, 4]], "A", shape=(2, None))
    assert out.dtype == float and out.shape == (2, 2)
    with raises_naming(ValueError, "A"):
        check_finite(np.ones((2, 3)), "A", shape=(2, 2))
    with raises_naming(ValueError, "A"):
        check_finite(np.ones(3), "A", shape=(3, 1))


# ---------------------------------------------------------------------------
# check_indices
# ---------------------------------------------------------------------------


def test_check_indices_accepts_and_returns_intp():
    out = check_indices([[0, 1], [2, 3]], "pairs", 4, width=2)
    assert out.dtype == np.intp
    np.testing.assert_array_equal(out, [[0, 1], [2, 3]])


@pytest.mark.parametrize(
    "idx",
    [np.array([[0.0, 1.0]]), np.array([[0.5, 1.0]]), np.array([[True, False]])],
    ids=["integral-floats", "floats", "bools"],
)
def test_check_indices_rejects_non_integer(idx):
    with raises_naming(ValueError, "pairs"):
        check_indices(idx, "pairs", 5, width=2)


@pytest.mark.parametrize(
    "idx, why",
    [
        ([[0, -1]], "negative"),
        ([[0, 5]], "out of range"),
        ([[0, 1, 2]], "expected shape"),
        ([0, 1], "expected shape"),
        (np.zeros((0, 2), int), "empty"),
        (np.zeros((0, 2)), "empty"),
        ([], "expected shape"),
    ],
    ids=["negative", "out-of-range", "wrong-width", "1d", "empty-int",
         "empty-float", "empty-list"],
)
def test_check_indices_rejects_bad(idx, why):
    with raises_naming(ValueError, "pairs") as info:
        check_indices(idx, "pairs", 5, width=2)
    assert why in str(info.value)


def test_check_indices_ragged_names_argument():
    with raises_naming(ValueError, "pairs"):
        check_indices([[0, 1], [2]], "pairs", 5, width=2)


# ---------------------------------------------------------------------------
# check_scalar / check_option / check_psd_matrix
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("x", ["1", None, True, [1.0], 1 + 0j],
                         ids=["str", "None", "bool", "list", "complex"])
def test_check_scalar_type_errors(x):
    with raises_naming(TypeError, "C"):
        check_scalar(x, "C")


@pytest.mark.parametrize(
    "x, kw",
    [(np.nan, {}), (np.inf, {}), (-1.0, {"low": 0}), (0.0, {"low": 0,
     "low_inclusive": False}), (2.0, {"high": 1})],
    ids=["nan", "inf", "below", "at-exclusive-low", "above"],
)
def test_check_scalar_value_errors(x, kw):
    with raises_naming(ValueError, "C"):
        check_scalar(x, "C", **kw)


def test_check_scalar_accepts_numpy_scalars():
    assert check_scalar(np.float64(2.5), "C") == 2.5
    assert check_scalar(np.int64(3), "C", low=0) == 3.0
    assert check_scalar(0.0, "C", low=0) == 0.0


def test_check_option():
    assert check_option("trace", "regularizer", ("trace", "frobenius")) == "trace"
    with raises_naming(ValueError, "regularizer") as info:
        check_option("nuclear", "regularizer", ("trace", "frobenius"))
    assert "'nuclear'" in str(info.value) and "'trace'" in str(info.value)


def test_check_psd_matrix():
    A = np.array([[2.0, 1.0], [1.0, 2.0]])
    np.testing.assert_array_equal(check_psd_matrix(A, "A", 2), A)
    with raises_naming(ValueError, "A") as info:
        check_psd_matrix(np.array([[1.0, 2.0], [0.0, 1.0]]), "A", 2)
    assert "symmetric" in str(info.value)
    with raises_naming(ValueError, "A") as info:
        check_psd_matrix(np.diag([1.0, -1.0]), "A", 2)
    assert "positive semidefinite" in str(info.value)
    with raises_naming(ValueError, "A"):
        check_psd_matrix(np.eye(3), "A", 2)
    with raises_naming(ValueError, "A"):
        check_psd_matrix(np.diag([1.0, np.nan]), "A", 2)
    # singular is PSD but not definite
    check_psd_matrix(np.diag([1.0, 0.0]), "A", 2)
    with raises_naming(ValueError, "A"):
        check_psd_matrix(np.diag([1.0, 0.0]), "A", 2, definite=True)


# ---------------------------------------------------------------------------
# QwiseData.from_sets: options, bounds, A_S, scalar types
# ---------------------------------------------------------------------------


def test_from_sets_unknown_regularizer(quads):
    with raises_naming(ValueError, "regularizer"):
        QwiseData.from_sets(quads, regularizer="nuclear")


@pytest.mark.parametrize("name", ["C_q", "C_p"])
def test_from_sets_bad_weights(quads, name):
    with raises_naming(ValueError, name):
        QwiseData.from_sets(quads, **{name: -1.0})
    with raises_naming(ValueError, name):
        QwiseData.from_sets(quads, **{name: np.nan})
    with raises_naming(TypeError, name):
        QwiseData.from_sets(quads, **{name: "1"})


def test_from_sets_u_greater_than_l(quads, pairs):
    with pytest.raises(ValueError, match=r"^u, l\b"):
        QwiseData.from_sets(quads, pairs, u=3.0, l=1.0)
    # u == l is allowed
    QwiseData.from_sets(quads, pairs, u=2.0, l=2.0)


def test_from_sets_pairs_need_bounds(quads, pairs):
    with pytest.raises(ValueError, match=r"^u, l\b"):
        QwiseData.from_sets(quads, pairs)
    with pytest.raises(ValueError, match=r"^u, l\b"):
        QwiseData.from_sets(quads, pairs, u=1.0)


@pytest.mark.parametrize("name, kw", [("u", {"u": "1", "l": 2.0}),
                                      ("l", {"u": 1.0, "l": [2.0]})])
def test_from_sets_bound_types(quads, pairs, name, kw):
    with raises_naming(TypeError, name):
        QwiseData.from_sets(quads, pairs, **kw)


@pytest.mark.parametrize("name", ["u", "l"])
def test_from_sets_bound_non_finite(quads, pairs, name):
    kw = {"u": 1.0, "l": 2.0}
    kw[name] = np.nan
    with raises_naming(ValueError, name):
        QwiseData.from_sets(quads, pairs, **kw)


def test_from_sets_wrong_types(quads, pairs, X):
    with raises_naming(TypeError, "quadruplets"):
        QwiseData.from_sets(quads.indices)
    with raises_naming(TypeError, "pairs"):
        QwiseData.from_sets(quads, pairs.indices, u=1.0, l=2.0)


def test_from_sets_pairs_over_other_X(quads, pairs):
    other = LabeledPairs.create(pairs.X + 1.0, pairs.indices, pairs.labels)
    with raises_naming(ValueError, "pairs"):
        QwiseData.from_sets(quads, other, u=1.0, l=2.0)


@pytest.mark.parametrize(
    "A_S, why",
    [
        (np.array([[1.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]),
         "symmetric"),
        (np.diag([1.0, -0.5, 1.0]), "positive semidefinite"),
        (np.eye(2), "shape"),
        (np.diag([1.0, np.inf, 1.0]), "NaN or infinite"),
    ],
    ids=["non-symmetric", "indefinite", "wrong-shape", "non-finite"],
)
def test_from_sets_bad_A_S(quads, A_S, why):
    with raises_naming(ValueError, "A_S") as info:
        QwiseData.from_sets(quads, regularizer="similar", A_S=A_S)
    assert why in str(info.value)


def test_quadruplets_data_is_canonical(quads, pairs, u_l):
    """The canonical constraints reproduce Eq. 11's hinge arguments."""
    u, l = u_l
    data = QwiseData.from_sets(quads, pairs, C_q=2.0, C_p=0.5, u=u, l=l)
    nq, ns = len(quads), len(pairs.similar)
    assert data.n_constraints == nq + len(pairs.indices)
    np.testing.assert_array_equal(data.c_q[:nq], 2.0)
    np.testing.assert_array_equal(data.c_q[nq:], 0.5)
    np.testing.assert_array_equal(data.delta_q[nq:nq + ns], -u)
    np.testing.assert_array_equal(data.delta_q[nq + ns:], l)
    rng = np.random.RandomState(0)
    B = rng.randn(3, 3)
    M = B @ B.T
    D = lambda i, j: (data.X[i] - data.X[j]) @ M @ (data.X[i] - data.X[j])
    want = [quads.delta[t] + D(*q[:2]) - D(*q[2:])
            for t, q in enumerate(quads.indices)]
    want += [D(i, j) - u for i, j in pairs.similar]
    want += [l - D(i, j) for i, j in pairs.dissimilar]
    np.testing.assert_allclose(data.margins(M), want, rtol=1e-12, atol=1e-12)



# ---------------------------------------------------------------------------
# check_int, describe
# ---------------------------------------------------------------------------


def test_check_int_accepts_python_and_numpy_integers():
    assert check_int(3, "n") == 3 and type(check_int(np.int64(3), "n")) is int
    assert check_int(0, "n", low=0, high=0) == 0


@pytest.mark.parametrize("value, match", [
    (True, "n: expected an integer, got True"),
    (2.0, "n: expected an integer, got 2.0"),
    ("3", "n: expected an integer, got '3'"),
    (np.arange(500), r"n: expected an integer, got ndarray of shape \(500,\)"),
    (1, "n: must be >= 2, got 1"),
    (9, "n: must be <= 8, got 9"),
])
def test_check_int_refuses(value, match):
    with pytest.raises(ValueError, match=match):
        check_int(value, "n", low=2, high=8)


def test_describe_never_prints_an_array():
    assert describe(np.arange(10 ** 4)) == "ndarray of shape (10000,)"
    assert describe(list(range(10 ** 4))) == "list of length 10000"
    assert describe("x" * 100) == "a str of length 100"
    assert describe(object()) == "object"
    assert describe(None) == "None" and describe(2.5) == "2.5" and describe("ab") == "'ab'"

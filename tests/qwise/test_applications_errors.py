"""Bad arguments of the Qwise applications (Sec. 5-7) and of their
measures are refused with a ValueError naming the argument, and the
message never prints the values of an array."""

import numpy as np
import pytest

from cvxmetric import metrics
from cvxmetric.qwise import (
    LateFusionSVM,
    attribute_constraints,
    make_page_versions,
    pairwise_constraints,
    qwsl_constraints,
    taxonomy_quadruplets,
    temporal_quadruplets,
)

BIG = np.arange(1000.0).reshape(100, 10)
Y = np.repeat(np.arange(4), 5)
X = np.random.RandomState(0).rand(20, 2)
TREE = {0: "a", 1: "a", 2: "b", 3: "b"}

CASES = {
    "n_versions": lambda: temporal_quadruplets(BIG, 2),
    "gamma": lambda: temporal_quadruplets(30, BIG),
    "nonnegative": lambda: LateFusionSVM(nonnegative=BIG).fit(np.arange(4.0),
                                                              [1, 1, -1, -1]),
    "size": lambda: make_page_versions(20, size=BIG),
    "n_type1": lambda: taxonomy_quadruplets(X, Y, TREE, n_type1=BIG, n_type2=0),
    "k": lambda: taxonomy_quadruplets(X, Y, TREE, n_type1=5, n_type2=5, k=BIG),
    "same_anchor": lambda: taxonomy_quadruplets(X, Y, TREE, n_type1=5, n_type2=5,
                                                same_anchor=BIG),
    "p": lambda: qwsl_constraints(Y, [0, 1, 2, 3], p=BIG),
    "method": lambda: attribute_constraints(Y, {"a": [0, 1, 2, 3]}, method=BIG),
    "equivalences": lambda: pairwise_constraints(Y, [0, 1, 2, 3], equivalences=BIG),
    "n_class_pairs": lambda: qwsl_constraints(Y, [0, 1, 2, 3], n_class_pairs=BIG),
    "b": lambda: metrics.mean_class_accuracy([1.0, 2.0], [True, False], BIG),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_array_argument_is_named_not_printed(name):
    with pytest.raises(ValueError) as info:
        CASES[name]()
    message = str(info.value)
    assert message.startswith(f"{name}: "), message
    assert "ndarray of shape (100, 10)" in message, message
    assert "999" not in message and len(message) < 200, message


@pytest.mark.parametrize("call, match", [
    (lambda: make_page_versions(20, size=5), "size: must be >= 10"),
    (lambda: taxonomy_quadruplets(X, Y, TREE, n_type1=-1, n_type2=0),
     "n_type1: must be >= 0"),
    (lambda: qwsl_constraints(Y, [0, 1, 2, 3], p=0), "p: must be >= 1"),
    (lambda: temporal_quadruplets(30, np.float64(2.5)), r"gamma: expected an integer"),
])
def test_bounds_and_types_are_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()

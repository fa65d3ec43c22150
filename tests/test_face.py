"""The one face polish (cvxmetric._face.polish_on_faces): the loop every
family that polishes runs, on toy faces whose candidates are known."""

import math

from cvxmetric._face import polish_on_faces
from cvxmetric._solver import Deadline


def _toy(scores):
    """A face per threshold (its key the threshold's face name), solved
    into the score listed for it; the solves are logged."""
    solved = []

    def read(t):
        return None if t is None else (t, t)

    def solve(face):
        solved.append(face)
        return None if scores[face] is None else (face, scores[face])

    return read, solve, (lambda cand: cand[1]), solved


def test_best_kept_and_ladder_order():
    read, solve, judge, solved = _toy({"a": 3.0, "b": 1.0, "c": 2.0})
    out = polish_on_faces(["a", "b", None, "c"], read, solve, judge)
    assert solved == ["a", "b", "c"]  # no face at the third threshold
    assert out.first() == ("b", 1.0) and out.n_solved == 3
    assert out.key == ("a", "b", None, "c")


def test_keep_ranks_and_first_of_equals_wins():
    read, solve, judge, _ = _toy({"a": 2.0, "b": 1.0, "c": 2.0, "d": 0.5})
    out = polish_on_faces("abcd", read, solve, judge, keep=3)
    assert [cand[0] for _, cand in out.best[0]] == ["d", "b", "a"]


def test_repeated_face_solved_once_and_target_stops():
    read, solve, judge, solved = _toy({"a": 5.0, "b": 1e-12, "c": 0.0})
    out = polish_on_faces(["a", "a", "b", "c"], read, solve, judge, target=1e-10)
    assert solved == ["a", "b"] and out.first()[0] == "b"


def test_unsolvable_face_ends_its_threshold_only():
    read, solve, judge, solved = _toy({"a": None, "b": 1.0})
    out = polish_on_faces("ab", read, solve, judge)
    assert solved == ["a", "b"] and out.n_solved == 1


def test_corrections_until_consistent_or_repeated():
    # a -> a1 -> a2 -> a1 (repeats: stops); the second threshold reads a1
    # again (solved already: skipped)
    scores = {"a": 3.0, "a1": 2.0, "a2": 2.5}
    nxt = {"a": "a1", "a1": "a2", "a2": "a1"}
    read, solve, judge, solved = _toy(scores)
    out = polish_on_faces(["a", "a1"], read, solve, judge, rounds=5,
                          correct=lambda face, cand: (nxt[face], nxt[face]))
    assert solved == ["a", "a1", "a2"] and out.first()[0] == "a1"
    rounds = polish_on_faces(["a"], *_toy(scores)[:3], rounds=2,
                             correct=lambda face, cand: (nxt[face], nxt[face]))
    assert rounds.n_solved == 2


def test_components_judged_apart():
    # a primal objective (lower) and a dual value (higher: negated) kept apart
    cands = {"a": (1.0, 5.0), "b": (2.0, 7.0), "c": (math.nan, math.nan)}

    def judge(cand):
        f, g = cands[cand[0]]
        return (math.inf if math.isnan(f) else f, math.inf if math.isnan(g) else -g)

    read, solve, _, _ = _toy(dict.fromkeys(cands, 0.0))
    out = polish_on_faces("abc", read, solve, judge)
    assert out.first(0)[0] == "a" and out.first(1)[0] == "b"


def test_deadline_and_last_key():
    read, solve, judge, solved = _toy({"a": 1.0})
    out = polish_on_faces("a", read, solve, judge, deadline=Deadline(0.0, start=-1.0))
    assert solved == [] and out.first() is None and out.key == ("a",)
    again = polish_on_faces("a", read, solve, judge, last_key=out.key)
    assert solved == [] and again.n_solved == 0 and again.key == out.key
    assert polish_on_faces("a", read, solve, judge).n_solved == 1

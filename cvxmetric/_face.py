"""The one face polish: solve on the face of a point, judge, keep the best.

An iterative method's point (or an interior-point method's) often sits
close to the optimum's *face* -- which constraints are active, which lie
on their margin, which are inactive, and the rank or support of ``M`` --
long before it is close to the optimum itself: at a degenerate optimum
the iterates converge like the square root of the gap.  With the face
known the optimality conditions become smooth equations (or an equality
constrained quadratic program), which Newton's method solves to
round-off.  Every family that polishes does it the same way:

1. a *ladder* of thresholds, declared once per family as a named,
   documented setting (the band within which a constraint counts as on
   its margin, the eigenvalues that count as zero);
2. at each threshold the family reads the face off its point
   (``read``);
3. it solves on the face (``solve``: Newton's method, an equality QP,
   the reduced conic model);
4. it judges the candidate (``judge``: the certified gap, the objective
   and the dual value, or the KKT residual; lower is better);
5. optionally it corrects the face from the candidate (``correct``: a
   multiplier with the wrong sign leaves the margin set, a constraint the
   candidate violates joins it) and solves again, up to ``rounds`` solves
   per threshold.

What differs between families is the face and the solve; the loop is this
module's: keep the best candidates, skip a face solved already (two
thresholds that read the same face, or a correction that returns to one),
stop when a candidate meets the target or when the deadline expires.
Nothing found here is trusted: a wrong face (a threshold too loose or too
tight, a degenerate optimum) costs a small solve, never accuracy, because
every candidate is judged -- and the caller certifies what it keeps.
"""

import math
from typing import NamedTuple

__all__ = ["FacePolish", "polish_on_faces"]


class FacePolish(NamedTuple):
    """The outcome of :func:`polish_on_faces`.

    Attributes
    ----------
    best : tuple of list
        Per component of the judge's score, the kept candidates (at most
        ``keep``), the best first: ``[(score, candidate), ...]``.  A
        candidate replaces a kept one only when its score is strictly
        lower, so among equal scores the first found wins.
    key : tuple
        The keys of the faces read at the thresholds of the ladder, in
        order (``None`` where none was read): a caller that polishes again
        and again passes it back as ``last_key`` to skip a ladder it has
        tried already.
    n_solved : int
        Faces solved.
    """

    best: tuple
    key: tuple
    n_solved: int

    def first(self, component=0):
        """The best candidate by score ``component``, or ``None``."""
        kept = self.best[component] if self.best else []
        return kept[0][1] if kept else None


def _scores(value):
    return tuple(value) if isinstance(value, tuple) else (value,)


def _keep(kept, score, candidate, keep):
    """Insert ``(score, candidate)`` into the ranked list ``kept`` (in
    place): after every kept one it is not strictly better than."""
    at = next((i for i, (s, _) in enumerate(kept) if score < s), len(kept))
    if at < keep:
        kept.insert(at, (score, candidate))
        del kept[keep:]


def polish_on_faces(ladder, read, solve, judge, *, correct=None, rounds=1,
                    target=-math.inf, keep=1, deadline=None, last_key=None):
    """Solve on the faces read off a point at each threshold of ``ladder``.

    Parameters
    ----------
    ladder : sequence
        The thresholds, in the order tried (the family's declared setting;
        an entry may also name a rule of the family's, e.g. "the largest
        gap of the spectrum").
    read : callable
        ``read(threshold) -> (key, face)`` or ``None`` (no face at that
        threshold): the face read off the point, and a hashable key that
        identifies it (two faces with the same key give the same
        candidate).  Every threshold is read before the first solve.
    solve : callable
        ``solve(face) -> candidate`` or ``None`` (the face cannot be
        solved: too large, singular); ``None`` ends that threshold.
    judge : callable
        ``judge(candidate) -> score``, a float or a tuple of floats, lower
        is better; each component keeps its own best candidates (a primal
        objective and a dual value are judged apart: the best pair may
        come from two faces).
    correct : callable, optional
        ``correct(face, candidate) -> (key, face)`` or ``None``: the face
        corrected from the candidate, solved next (within ``rounds``).
    rounds : int
        Solves per threshold (the first face and its corrections).
    target : float
        Stop as soon as a candidate's first score is at most ``target``.
    keep : int
        Candidates kept per score component.
    deadline : object with ``expired()``, optional
        Checked before every solve (:class:`~cvxmetric._solver.Deadline`).
    last_key : tuple, optional
        When the faces read equal it (:attr:`FacePolish.key` of an
        earlier call), nothing is solved.

    Returns
    -------
    FacePolish
    """
    faces = [read(threshold) for threshold in ladder]
    key = tuple(None if face is None else face[0] for face in faces)
    if key == last_key:
        return FacePolish((), key, 0)
    best, n_solved = None, 0
    for candidate in _solved(faces, solve, correct, rounds, deadline):
        n_solved += 1
        scores = _scores(judge(candidate))
        best = best or tuple([] for _ in scores)
        for kept, score in zip(best, scores):
            _keep(kept, score, candidate, keep)
        if scores[0] <= target:
            break  # before the face is corrected from it
    return FacePolish(best or (), key, n_solved)


def _solved(faces, solve, correct, rounds, deadline):
    """The candidates of each threshold's face and its corrections (see
    :func:`polish_on_faces`), each face solved once, until the deadline."""
    seen = set()
    for face in faces:
        for _ in range(rounds):
            if face is None or face[0] in seen:
                break
            seen.add(face[0])
            if deadline is not None and deadline.expired():
                return
            candidate = solve(face[1])
            if candidate is None:
                break
            yield candidate
            face = None if correct is None else correct(face[1], candidate)

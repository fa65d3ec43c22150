"""Reductions: transformations of a problem composed around a solver.

Modelled on CVXPY's reductions (``cvxpy/reductions/reduction.py``): a
reduction turns the problem a solver is given into an equivalent one the
iterations run on, and maps the solution of that one back.

* :meth:`Reduction.accepts` -- whether it applies to ``data``;
* :meth:`Reduction.apply` -- ``(data, init) -> (data', init', inverse_data)``:
  the reduced problem, the warm start in its coordinates (``None``: the
  solver's default start) and what :meth:`~Reduction.invert` needs;
* :meth:`Reduction.invert` -- ``(solution, inverse_data) -> solution``: the
  reduced problem's solution in the coordinates of the problem given to
  :meth:`~Reduction.apply`.

A solver declares its reductions by :meth:`IterativeSolver.reductions
<cvxmetric._solver.IterativeSolver.reductions>` (a list, built per run from
the data); :meth:`IterativeSolver.run <cvxmetric._solver.IterativeSolver.run>`
applies them in order before ``init_state``, runs the iterations on the
reduced problem, inverts them in reverse order on
:meth:`~cvxmetric._solver.IterativeSolver.solution` and certifies the point
on the problem it was given.  Everything a run needs to go back lives in
``inverse_data`` (returned, never stored on the reduction or the solver), so
one reduction object and one solver object can serve any number of solves.
Each applied reduction is a stage of the trace (kind ``"reduction"``).
"""

import time

from ._trace import record

__all__ = ["Reduction", "apply_reductions", "invert_reductions"]


class Reduction:
    """A transformation with an inverse (the base class; it does nothing).

    Subclasses set :attr:`name` (the stage's name in the trace) and override
    :meth:`apply` and :meth:`invert`; :meth:`accepts` defaults to ``True``.
    A reduction keeps no per-run state: what :meth:`invert` needs is in the
    ``inverse_data`` :meth:`apply` returns.
    """

    #: The stage's name in the trace.
    name = "identity"

    def accepts(self, data):
        """Whether the reduction applies to ``data``.

        Parameters
        ----------
        data : problem data

        Returns
        -------
        bool
        """
        return True

    def apply(self, data, init):
        """Reduce ``data`` and map the warm start ``init`` along.

        Parameters
        ----------
        data : problem data
        init : object or None
            The warm start (what the next reduction or the solver's
            ``init_state`` takes); ``None`` for the default start.

        Returns
        -------
        tuple
            ``(reduced data, reduced init or None, inverse_data)``.
        """
        return data, init, None

    def invert(self, solution, inverse_data):
        """Map a solution of the reduced problem back.

        Parameters
        ----------
        solution : object
            What the solver (or the next reduction's :meth:`invert`) gives:
            a point of the reduced problem.
        inverse_data : object
            As returned by :meth:`apply` for that problem.

        Returns
        -------
        object
            The solution of the problem :meth:`apply` was given.
        """
        return solution


def apply_reductions(reductions, data, init):
    """Apply ``reductions`` in order, each recorded as a stage.

    Parameters
    ----------
    reductions : sequence of Reduction
    data : problem data
    init : object or None

    Returns
    -------
    tuple
        ``(data, init, applied)``: the reduced problem, its warm start, and
        ``applied``, the list of ``(reduction, inverse_data)`` that
        :func:`invert_reductions` takes.

    Raises
    ------
    ValueError
        When a reduction does not accept the data it is given.
    """
    applied = []
    for reduction in reductions:
        if not reduction.accepts(data):
            raise ValueError(f"data: the reduction {reduction.name!r} does not "
                             f"apply to {type(data).__name__}.")
        t0 = time.perf_counter()
        data, init, inverse_data = reduction.apply(data, init)
        record(reduction.name, "reduction", seconds=time.perf_counter() - t0,
               status="applied")
        applied.append((reduction, inverse_data))
    return data, init, applied


def invert_reductions(applied, solution):
    """Invert the reductions of :func:`apply_reductions`, last first.

    Parameters
    ----------
    applied : list of (Reduction, inverse_data)
    solution : object
        A solution of the last reduced problem.

    Returns
    -------
    object
        The solution of the problem the first reduction was given.
    """
    for reduction, inverse_data in reversed(applied):
        solution = reduction.invert(solution, inverse_data)
    return solution

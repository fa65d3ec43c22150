"""One wall-clock budget for a whole LDML fit.

``max_time`` bounds the iterations of each solver, but a fit also runs
phases that are not iterations of one solver: the certificate's repair and
SDPs, the Newton polish, the attainment check, LDML*'s rounds.  Each of
them asks :func:`expired` before it starts (and inside its loops) and,
when the budget is spent, is skipped: the certificate then claims only what
was computed (the status says ``time_limit_reached``).  :func:`budget` sets
the budget for everything called inside it; an inner budget never extends
an outer one.
"""

import contextvars
import math
import time
from contextlib import contextmanager

__all__ = ["budget", "expired", "remaining"]

_END = contextvars.ContextVar("cvxmetric_ldml_deadline", default=math.inf)


@contextmanager
def budget(max_time):
    """Everything inside runs within ``max_time`` seconds from now (``None``:
    no new limit)."""
    end = _END.get()
    if max_time is not None:
        end = min(end, time.perf_counter() + float(max_time))
    token = _END.set(end)
    try:
        yield
    finally:
        _END.reset(token)


def remaining():
    """Seconds left in the current budget (``inf`` without one)."""
    end = _END.get()
    return math.inf if end == math.inf else end - time.perf_counter()


def expired():
    """Whether the current budget is spent."""
    return remaining() <= 0.0

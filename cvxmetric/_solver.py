"""The contract every hand-written solver follows.

Modelled on jaxopt's iterative solvers: hyperparameters are dataclass fields,
``init_state`` builds the starting point and a small state (a named tuple with
at least ``iter_num`` and ``error``), ``update`` performs one iteration, and
``run`` loops until ``error <= tol``, ``maxiter`` or ``max_time`` and returns
the same :class:`~cvxmetric.result.SolverResult` as the exact path.  A solver
that iterates on a transformed problem (other coordinates, a restriction,
another formulation) declares the :mod:`reductions <cvxmetric._reductions>`
that ``run`` composes around the iterations; everything a run needs lives
in its state, the reductions' inverse data and its context, so a solver
object holds only its settings.

Status has one meaning (see :class:`~cvxmetric.result.Status`): ``optimal``
exactly when the certificate of the final iterate passes at the package's
tolerance.  A run whose certificate does not pass gets ``max_iter_reached``,
``time_limit_reached`` or, when its own stopping rule was met at a loosened
``tol``, ``optimal_inaccurate``, and a ``ConvergenceWarning`` quoting the
certified gap; why the loop stopped is kept in ``raw_status``.  Progress goes
to the ``cvxmetric`` logger.

Hyperparameters are checked on construction against the class's
``_parameter_constraints`` table (scikit-learn's format): a bad value raises
a ``ValueError`` naming the field.
"""

import contextvars
import functools
import logging
import math
import os
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, fields
from numbers import Integral, Real

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, validate_parameter_constraints
from threadpoolctl import ThreadpoolController, threadpool_limits

from ._reductions import apply_reductions, invert_reductions
from ._settings import (
    _LOAD_REUSE,
    _LOAD_SAMPLE,
    BUSY_CORES,
    PROGRESS_EVERY,
    THREADED_FLOPS,
)
from ._trace import record, recording
from .result import SolverResult, Status

__all__ = ["IterativeSolver", "Deadline", "stop_message", "blas_threads",
           "forced_blas_threads", "fit_threads", "verbose_logging",
           "conic_verbose", "FitScopeMixin", "THREADED_FLOPS", "PROGRESS_EVERY"]

logger = logging.getLogger("cvxmetric")

# ---------------------------------------------------------------------------
# BLAS threading policy
# ---------------------------------------------------------------------------

_load_cache = [-math.inf, None]  # (when, busy cores)

_forced = None  # set by forced_blas_threads
# BLAS threads in force when the outermost fit_threads scope began (the
# user's setting), restored by the phases that decide to thread; None
# outside any scope, where a threaded phase leaves BLAS as it is
_outer = None


def _cpu_times():
    """``(busy, total)`` jiffies of all cores, or ``None`` off Linux."""
    try:
        with open("/proc/stat") as fh:
            vals = [int(v) for v in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
    return sum(vals) - idle, sum(vals)


def _others_busy_cores():
    """Cores kept busy by other processes during a short sample (Linux),
    ``None`` when it cannot be measured; a sample is reused for
    :data:`_LOAD_REUSE` seconds."""
    now = time.perf_counter()
    if now - _load_cache[0] <= _LOAD_REUSE:
        return _load_cache[1]
    _load_cache[1] = busy = _sample_busy_cores()
    _load_cache[0] = time.perf_counter()
    return busy


def _sample_busy_cores():
    t0, c0 = _cpu_times(), time.process_time()
    if t0 is None:
        return None
    w0 = time.perf_counter()
    time.sleep(_LOAD_SAMPLE)
    t1 = _cpu_times()
    wall = time.perf_counter() - w0
    if t1 is None or t1[1] == t0[1]:
        return None
    n_cpu = os.cpu_count() or 1
    # busy fraction of all cores, times their number, minus this process
    busy = (t1[0] - t0[0]) / (t1[1] - t0[1]) * n_cpu
    return max(0.0, busy - (time.process_time() - c0) / max(wall, 1e-9))


def blas_threads(flops):
    """``threadpool_limits`` for a phase whose BLAS calls cost ``flops`` each.

    One thread below :data:`THREADED_FLOPS` or on a loaded machine (other
    processes keep :data:`BUSY_CORES` busy), else BLAS's own setting (the
    user's limit, if any, stays in force).  Inside
    :func:`forced_blas_threads` the forced count wins.  Long solvers call
    it per phase (a working-set round, a run, a certificate), so a load
    that starts or ends during a solve is seen at the next phase.
    """
    if _forced is not None:
        return threadpool_limits(limits=_forced, user_api="blas")
    threaded = flops >= THREADED_FLOPS
    if threaded:
        busy = _others_busy_cores()
        threaded = busy is None or busy < BUSY_CORES
        logger.debug("BLAS policy: %.2g flops per call, other processes busy "
                     "%s cores: %s", flops, busy, "threaded" if threaded else "1 thread")
    return threadpool_limits(limits=_outer if threaded else 1, user_api="blas")


def _call_flops(arrays):
    """Flops of the largest BLAS call data preparation makes on ``arrays``:
    a Gram product or factorization of an (m, d) array costs ``m d^2``
    (``size * shape[-1]``); non-float arrays (indices, labels) cost none."""
    flops = 0.0
    for a in arrays:
        if isinstance(a, np.ndarray) and a.ndim >= 2 and a.dtype.kind == "f":
            flops = max(flops, float(a.size) * a.shape[-1])
    return flops


_controller = []  # one ThreadpoolController, built on first use (it scans
                  # the loaded libraries, ~10 ms; reading counts is ~2 us)


def _blas_thread_count():
    """Threads of the loaded BLAS now (``None`` when there is none)."""
    if not _controller:
        _controller.append(ThreadpoolController())
    info = _controller[0].select(user_api="blas").info()
    return max((lib["num_threads"] for lib in info), default=None)


@contextmanager
def fit_threads(*arrays):
    """The policy of :func:`blas_threads` for a whole fit.

    Everything a fit does outside a solver's own phases -- validation,
    whitening, Gram products and factorizations of the data, certificates,
    the threshold's calibration -- runs under the decision for the largest
    BLAS call on ``arrays`` (``m d^2`` for an (m, d) float array): one
    thread below :data:`THREADED_FLOPS` or on a loaded machine.  A solver
    phase inside still decides for its own calls, and when it threads it
    gets back the thread count in force when the fit began (the user's
    setting), not the fit scope's.
    """
    global _outer
    old = _outer
    if _outer is None and _forced is None:
        _outer = _blas_thread_count()
    try:
        with blas_threads(_call_flops(arrays)):
            yield
    finally:
        _outer = old


# ---------------------------------------------------------------------------
# Verbosity
# ---------------------------------------------------------------------------


def conic_verbose(verbose):
    """Whether a conic solver (Clarabel, SCS through CVXPY) prints its own
    log: from ``verbose = 2`` on."""
    return int(verbose) >= 2


@contextmanager
def verbose_logging(verbose):
    """What an estimator's ``verbose`` means, in every estimator.

    ``0`` / ``False``: nothing beyond warnings.  ``1`` / ``True``: the
    ``cvxmetric`` logger at INFO -- the fast solvers' progress lines
    (iteration, objective, error or gap, elapsed seconds; see
    :data:`PROGRESS_EVERY`) and a line per phase.  ``2``: also the conic
    solvers' own logs (:func:`conic_verbose`).  ``3`` and more: DEBUG.
    When neither the ``cvxmetric`` logger nor the root logger has a
    handler, one writing to standard error is attached for the scope, so
    ``verbose=True`` shows something without configuring ``logging``; an
    application's own configuration is used as it is.
    """
    verbose = int(verbose or 0)
    if verbose <= 0:
        yield
        return
    level = logging.DEBUG if verbose >= 3 else logging.INFO
    old_level = logger.level
    handler = None
    if not logger.hasHandlers():
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[cvxmetric] %(message)s"))
        logger.addHandler(handler)
    # never quieter than the application set it
    logger.setLevel(min(level, logger.getEffectiveLevel()))
    try:
        yield
    finally:
        logger.setLevel(old_level)
        if handler is not None:
            logger.removeHandler(handler)


def _scoped(method):
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        arrays = []
        for a in (*args, *kwargs.values(), getattr(self, "preprocessor", None)):
            # a list or tuple of arrays: the views of a multi-modal learner
            arrays.extend(a if isinstance(a, (list, tuple)) else [a])
        verbose = getattr(self, "verbose", 0)
        with fit_threads(*(a for a in arrays if isinstance(a, np.ndarray))), \
                verbose_logging(verbose if isinstance(verbose, (bool, Integral)) else 0), \
                recording() as stages:
            out = method(self, *args, **kwargs)
            result = getattr(self, "result_", None)
            if isinstance(result, SolverResult) and stages:
                # every stage of the fit, the data preparation's solves too
                result.trace = tuple(stages)
            return out

    wrapper._cvxmetric_policy = True
    return wrapper


class FitScopeMixin:
    """Runs every ``fit``, ``partial_fit`` and ``calibrate_threshold`` a
    subclass defines (or inherits) in the scope every fit shares, as
    scikit-learn's ``_SetOutputMixin`` wraps ``transform``:

    * :func:`fit_threads` of its array arguments (and of an array
      ``preprocessor``): data preparation, certificates and calibration
      follow the same threading policy as the solvers' phases;
    * :func:`verbose_logging` of the estimator's ``verbose`` (when it has
      one): one meaning of ``verbose`` in every estimator;
    * :func:`cvxmetric._trace.recording`: the stages that ran in the fit
      become its result's ``trace`` (``result_.trace``).

    Each ``fit`` gets all three without having to ask for them.
    """

    _POLICY_METHODS = ("fit", "partial_fit", "calibrate_threshold")

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in cls._POLICY_METHODS:
            method = getattr(cls, name, None)  # inherited ones too
            if callable(method) and not getattr(method, "_cvxmetric_policy", False):
                setattr(cls, name, _scoped(method))


@contextmanager
def forced_blas_threads(n_threads):
    """Run every solver phase on ``n_threads`` BLAS threads (benchmarks:
    the policy's time against fixed counts)."""
    global _forced
    old = _forced
    _forced = int(n_threads)
    try:
        with threadpool_limits(limits=_forced, user_api="blas"):
            yield
    finally:
        _forced = old


class Deadline:
    """A wall-clock budget that long inner loops check (``expired()``).

    ``Deadline(None)`` never expires.  Solvers whose one iteration can be
    long (an inner CG, a line search, a working-set round) call
    :meth:`expired` inside it, so that ``max_time`` is honoured within one
    inner step's cost.
    """

    def __init__(self, max_time, start=None):
        self.start = time.perf_counter() if start is None else start
        self.max_time = max_time
        self.hit = False

    def expired(self):
        """Whether the budget is spent (remembered in :attr:`hit`)."""
        if self.max_time is not None and time.perf_counter() - self.start > self.max_time:
            self.hit = True
        return self.hit

    def remaining(self):
        """Seconds left (``inf`` without a budget)."""
        if self.max_time is None:
            return math.inf
        return self.max_time - (time.perf_counter() - self.start)


@dataclass
class IterativeSolver:
    """Base class: subclasses define ``init_state``, ``update``, ``finalize``.

    Attributes
    ----------
    maxiter : int
        Maximum number of iterations.
    tol : float
        Stop when ``state.error <= tol``; the meaning of ``error`` is the
        subclass's (documented there).
    max_time : float, optional
        Wall-clock budget in seconds, checked between iterations and, through
        :attr:`deadline`, inside long inner loops; a run that exhausts it
        ends with status ``time_limit_reached``.
    """

    maxiter: int = 1000
    tol: float = 1e-6
    max_time: float = None

    name = "iterative"

    #: Allowed values of each field (scikit-learn's ``_parameter_constraints``
    #: format); subclasses extend it with their own fields.
    _parameter_constraints = {
        "maxiter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_time": [Interval(Real, 0, None, closed="left"), None],
    }

    def __post_init__(self):
        self.validate_params()

    def validate_params(self):
        """Check every field against :attr:`_parameter_constraints`.

        Raises
        ------
        ValueError
            Naming the field, for a value of the wrong type or out of range
            (NaN and infinite values included where the range is open).
        """
        names = [f.name for f in fields(self)]
        missing = sorted(set(names) - set(self._parameter_constraints))
        if missing:  # pragma: no cover - a developer error
            raise TypeError(f"{type(self).__name__}: fields without constraints: "
                            f"{missing}")
        params = {name: getattr(self, name) for name in names}
        for name, value in params.items():
            # Interval(Real, 0, None) admits inf and rejects nan only for
            # closed bounds: refuse both explicitly
            if isinstance(value, Real) and not isinstance(value, bool) \
                    and not math.isfinite(value):
                raise ValueError(f"{type(self).__name__}: {name} must be finite, "
                                 f"got {value!r}.")
        validate_parameter_constraints(self._parameter_constraints, params,
                                       caller_name=type(self).__name__)

    def blas_flops(self, data):
        """Flops of one BLAS call of an iteration (the threading policy,
        :func:`blas_threads`).  Default 0: iterations of eigendecompositions
        and small products, on one thread."""
        return 0.0

    def init_state(self, data, init=None):  # pragma: no cover - interface
        """Return ``(M, state)``."""
        raise NotImplementedError

    def update(self, M, state, data):  # pragma: no cover - interface
        """One iteration: return ``(M, state)``."""
        raise NotImplementedError

    def finalize(self, M, state, data):  # pragma: no cover - interface
        """Return ``(M, certificate, info)`` for the final iterate."""
        raise NotImplementedError

    def converged(self, state):
        """Whether ``state`` meets the stopping rule."""
        return state.error <= self.tol

    # -- per-run hooks (defaults: none) ---------------------------------------

    def check_data(self, data):
        """Refuse ``data`` this solver cannot run on (``TypeError`` /
        ``ValueError`` naming ``data``); called first by :meth:`run`."""

    def trivial_result(self, data):
        """A result known without iterating (e.g. the certified optimum of
        degenerate data), returned by :meth:`run` at once; ``None`` (the
        default) to iterate."""
        return None

    def reductions(self, data):
        """The reductions composed around the iterations on ``data``.

        Returns
        -------
        list of cvxmetric._reductions.Reduction
            Applied in order before :meth:`init_state` (which, like
            :meth:`update`, then sees the reduced problem and the reduced
            warm start), inverted in reverse order on :meth:`solution`;
            :meth:`finalize` gets the inverted point and the problem
            :meth:`run` was given.  Default: none.
        """
        return []

    def solution(self, M, state):
        """The point of the reduced problem that :meth:`run` maps back
        through the reductions and hands to :meth:`finalize`; default the
        last iterate ``M``."""
        return M

    #: Re-emit the warnings raised during a run from :meth:`run` itself, so
    #: that they point at its caller (not at the line inside the package).
    reemit_warnings = False

    @property
    def deadline(self):
        """The :class:`Deadline` of this solver's run in progress (in the
        current context); outside a run, one that never expires.  It lives
        in the run's context, not on the solver, so one solver object can
        run any number of solves, one after another or nested."""
        return _RUN_DEADLINES.get().get(id(self)) or Deadline(None)

    @deadline.setter
    def deadline(self, value):
        # for a solver that runs its own loop outside :meth:`run`: the
        # deadline of that loop, in the current context
        _RUN_DEADLINES.set({**_RUN_DEADLINES.get(), id(self): value})

    def run(self, data, init=None, *, warn=True):
        """Iterate from ``init`` (a previous result, or the default start).

        :meth:`check_data` first, then :meth:`trivial_result`; otherwise
        the :meth:`reductions` are applied (a stage each in the trace), the
        iterations run on the reduced problem until :meth:`converged`,
        ``maxiter`` or ``max_time``, the reductions are inverted on
        :meth:`solution` and :meth:`finalize` certifies the point on
        ``data``.  Everything the run needs lives in its state, the
        reductions' inverse data and its context (:attr:`deadline`).

        Parameters
        ----------
        data : problem data (e.g. :class:`~cvxmetric.qwise.QwiseData`)
        init : SolverResult, optional
            Warm start.
        warn : bool
            Emit a ``ConvergenceWarning`` when ``maxiter`` is reached.

        Returns
        -------
        SolverResult
        """
        self.check_data(data)
        result = self.trivial_result(data)
        if result is not None:
            return result
        t0 = time.perf_counter()
        deadline = Deadline(self.max_time, t0)
        token = _RUN_DEADLINES.set({**_RUN_DEADLINES.get(), id(self): deadline})
        try:
            with _caught(self.reemit_warnings) as caught:
                result = self._run(data, init, deadline)
        finally:
            _RUN_DEADLINES.reset(token)
        for w in caught:  # re-emitted so that they point at the caller
            warnings.warn(w.message, w.category, stacklevel=2)
        logger.info("%s done: %s after %d iterations, objective %.10g, relative "
                    "gap %.3g, %.2f s", self.name, result.status, result.n_iter,
                    result.objective, result.certificate.rel_gap, result.time)
        if result.status != Status.OPTIMAL and warn:
            warnings.warn(stop_message(self.name, result, self.max_time),
                          ConvergenceWarning, stacklevel=2)
        return result

    def _run(self, data, init, deadline):
        """:meth:`run` inside its deadline: reductions, iterations, inverse,
        certificate, the stage of the trace."""
        t0 = deadline.start
        with recording() as stages, blas_threads(self.blas_flops(data)):
            reduced, init, applied = apply_reductions(self.reductions(data), data, init)
            M, state = self.init_state(reduced, init)
            M, state = self._iterate(M, state, reduced, deadline)
            point = invert_reductions(applied, self.solution(M, state))
            M, cert, info = self.finalize(point, state, data)
            if self.converged(state):
                raw = Status.OPTIMAL
            else:
                raw = Status.TIME_LIMIT if deadline.hit else Status.MAX_ITER
            info.setdefault("final_error", float(state.error))
            cert.times["total"] = time.perf_counter() - t0
            record(self.name, "iterative", iterations=state.iter_num,
                   seconds=cert.times["total"], gap=cert.rel_gap, status=raw)
        return SolverResult(
            M=M, status=raw, objective=cert.objective, n_iter=state.iter_num,
            certificate=cert, method=self.name, info=info,
            time=cert.times["total"], raw_status=raw, trace=tuple(stages),
        )

    def _iterate(self, M, state, data, deadline):
        """The loop of :meth:`run`: :meth:`update` until :meth:`converged`,
        ``maxiter`` or the deadline, with the progress lines."""
        t0 = last_log = deadline.start
        while not self.converged(state) and state.iter_num < self.maxiter:
            if deadline.expired():
                break
            M, state = self.update(M, state, data)
            now = time.perf_counter()
            if state.iter_num <= 1 or now - last_log >= PROGRESS_EVERY:
                _progress(self.name, state, now - t0)
                last_log = now
        return M, state


#: The deadlines of the runs in progress in this context, by solver
#: (``id``): :attr:`IterativeSolver.deadline`.
_RUN_DEADLINES = contextvars.ContextVar("cvxmetric_run_deadlines", default={})


@contextmanager
def _caught(catch):
    """Record every warning of the scope (when ``catch``), to re-emit."""
    if not catch:
        yield []
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught


def _progress(name, state, elapsed):
    """The progress line of one iteration (INFO): the objective where the
    state carries one (``f`` or ``best_f``), the solver's ``error`` (its
    stopping measure: a certified gap for most, documented per state)."""
    objective = next((getattr(state, k) for k in ("f", "best_f")
                      if isinstance(getattr(state, k, None), Real)), None)
    logger.info("%s iter %d%s error %.3e elapsed %.2f s", name, state.iter_num,
                "" if objective is None else f" objective {float(objective):.10g}",
                state.error, elapsed)


def stop_message(name, result, max_time=None):
    """Why ``result`` is not certified optimal, in one sentence."""
    cert = result.certificate
    if result.raw_status == Status.TIME_LIMIT:
        why = f"stopped at its time limit (within {max_time:g} s)"
    elif result.raw_status == Status.MAX_ITER:
        why = f"stopped in {result.n_iter} iterations (maxiter)"
    else:
        why = f"met its stopping rule after {result.n_iter} iterations"
    return (f"{name} did not converge: {why} without a certified optimum: relative duality gap "
            f"{cert.rel_gap:.3g} (the package certifies at {cert.tol_gap:.3g}), "
            f"violation {cert.max_violation:.3g}; status {result.status!r}.")

"""The ``cvxmetric`` command.

Subcommands::

    cvxmetric list            [--family F]
    cvxmetric verify          [--family F] [--method M ...] [--only NAME ...]
                              [--with-exact]
    cvxmetric solve FILE      [--method M] [--json] [the family's options]
    cvxmetric solve [FILE]    --list-methods [--family F]
    cvxmetric reference       [--family F] [--only NAME ...] [--scs-tol T]
                              (--in-place | --out DIR | --dry-run)
    cvxmetric make-problems   [FAMILY ...] (--in-place | --out DIR | --check)
    cvxmetric bench           [--family F,...] [--only NAME ...] [--methods M,...]
    cvxmetric bench           --family F,... (synthetic; Qwise: --sizes DxN,...)
    cvxmetric bench           --suite real [--family F,...] [--seeds S,...] [...]
    cvxmetric bench           --contended | --scaling [--family F,...]

Every option value is checked when the command line is read (argparse
``type`` functions): a malformed number, an empty list or an unknown name
ends with exit status 2 and a message naming the option, before anything
runs; so does a selection that holds no run.

``solve`` derives the family of ``FILE`` (the manifest beside it, else its
array names) and offers that family's methods and hyperparameter options:
``cvxmetric solve FILE --help`` shows them, ``--list-methods`` prints them.
``reference`` and ``make-problems`` write only into a collection named on
the command line (``--root DIR`` or ``--out DIR``) or, with ``--in-place``,
into the one found by default.

Every subcommand takes ``--root DIR`` (else ``$CVXMETRIC_ROOT``, else the
current directory if it has ``problems/``, else the repository next to the
package -- a checkout or an editable install --, else the collection
installed with the package from its wheel).  Exit codes: 0 success, 1 a check failed (``verify``,
``reference``, ``make-problems --check``, a failed run of ``bench``'s
collection suite, a run of a synthetic or scaling benchmark that ended with
an error), 2 bad input or a solver error.  :func:`main` returns the exit
status, argparse's usage errors and ``--help`` included.
Tables go to stdout; progress and diagnostics to stderr.
"""

import argparse
import json
import logging
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import collection as col
from ._settings import _SEED_MAX
from .bench import format_columns as _table
from .formulations import formulations
from .result import SolverError

__all__ = ["main", "build_parser"]


def _num(x, spec=".2e"):
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "-"
    return format(x, spec)


def _root(args, must_exist=True):
    return col.find_root(args.root or args.root_global, must_exist=must_exist)


def _err(msg):
    print(f"cvxmetric: error: {msg}", file=sys.stderr)


def _note(msg):
    print(f"cvxmetric: {msg}", file=sys.stderr)


# ---------------------------------------------------------------------------
# Argument types: a malformed value ends with exit status 2 and a message
# naming the option (argparse prefixes "argument --OPTION: ")
# ---------------------------------------------------------------------------


def _int_type(low=None, high=None):
    """An argparse ``type``: an integer in ``[low, high]``."""
    def parse(text):
        text = str(text).strip()
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be an integer, got {text!r}.") from None
        if low is not None and value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}.")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"must be <= {high}, got {value}.")
        return value
    return parse


def _positive_float(text):
    """An argparse ``type``: a finite float > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}.") from None
    if not np.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be finite, got {text!r}.")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}.")
    return value


def _list_type(item=None, choices=None, what="value"):
    """An argparse ``type``: a comma-separated, non-empty list without empty
    items or repeats; each item parsed by ``item`` and, with ``choices``
    (a sequence, or a callable returning one), among them."""
    def parse(text):
        parts = [t.strip() for t in str(text).split(",")]
        if not any(parts):
            raise argparse.ArgumentTypeError(
                f"must list at least one {what}, got {text!r}.")
        if not all(parts):
            raise argparse.ArgumentTypeError(
                f"an empty item in {text!r} (comma-separated {what}s).")
        out = []
        for t in parts:
            try:
                out.append(item(t) if item else t)
            except argparse.ArgumentTypeError as exc:
                raise argparse.ArgumentTypeError(f"{what} {t!r}: {exc}") from None
        repeated = sorted({str(v) for k, v in enumerate(out) if v in out[:k]})
        if repeated:
            raise argparse.ArgumentTypeError(f"given twice: {repeated}.")
        known = choices() if callable(choices) else choices
        if known is not None:
            unknown = [v for v in out if v not in known]
            if unknown:
                raise argparse.ArgumentTypeError(
                    f"unknown {unknown}; choose {what}s among "
                    f"{', '.join(known)}.")
        return out
    return parse


def _choice_type(choices, what):
    """An argparse ``type``: one name among ``choices`` (the message lists
    them; argparse's ``choices`` would too, but without saying what they
    are)."""
    def parse(text):
        if text not in choices:
            raise argparse.ArgumentTypeError(
                f"unknown {what} {text!r}; choose among {', '.join(choices)}.")
        return text
    return parse


def _sizes_type(text):
    """An argparse ``type``: ``"20x1000,100x1e5"`` -> ``[(20, 1000), (100,
    100000)]``, each ``D`` and ``N`` an integer >= 1."""
    parts = [t.strip().lower() for t in str(text).split(",")]
    if not any(parts):
        raise argparse.ArgumentTypeError(
            f"must list at least one size DxN, got {text!r}.")
    out = []
    for item in parts:
        try:
            d, n = (float(v) for v in item.split("x"))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"cannot read {item!r}; expected DxN, e.g. 20x1000 or 100x1e5."
            ) from None
        if not all(np.isfinite(v) and v == int(v) and v >= 1 for v in (d, n)):
            raise argparse.ArgumentTypeError(
                f"{item!r}: D and N must be integers >= 1 (DxN, e.g. 20x1000).")
        out.append((int(d), int(n)))
    return out


def _show_default(value):
    """A default as the help prints it (``None``: not set; never JSON's
    ``null``)."""
    if value is None:
        return "not set"
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(col.jsonable(value))


# ---------------------------------------------------------------------------
# The hyperparameter options of ``solve``, per family
# ---------------------------------------------------------------------------

#: The estimator (a name in :mod:`cvxmetric`) whose declared
#: ``_parameter_constraints`` each family's ``solve`` options obey (from the
#: registry of formulations: ``Formulation.options_estimator``).  A family
#: without one gets the checks its ``FamilySpec.to_data`` makes.
_ESTIMATORS = {f.name: f.options_estimator for f in formulations()
               if f.options_estimator}


@dataclass(frozen=True)
class _Option:
    """One hyperparameter option of ``solve``.

    Attributes
    ----------
    family, name : str
        The family and its hyperparameter (``FamilySpec.hyperparameters``).
    flag : str
        ``"--" + name`` with ``_`` as ``-`` (``C_q`` -> ``--C-q``).
    kind : {"float", "int", "bool", "str"}
    constraints : tuple
        scikit-learn constraint objects the value must satisfy (one of).
    default : object
        The family's default (the manifest's value wins over it).
    """

    family: str
    name: str
    flag: str
    kind: str
    constraints: tuple
    default: object

    @property
    def dest(self):
        return "hp__" + self.name

    def describe(self):
        """The accepted values, in words."""
        if self.kind == "bool":
            return "true or false"
        if not self.constraints:
            return f"a finite {self.kind}" if self.kind != "str" else "a str"
        return " or ".join(_describe_constraint(c) for c in self.constraints)


def _describe_constraint(c):
    options = getattr(c, "options", None)
    if isinstance(options, (set, frozenset)):  # StrOptions: a stable order
        return "a str among {" + ", ".join(repr(o) for o in sorted(options)) + "}"
    return str(c)


def _family_options(family):
    """The ``solve`` options of ``family``, in ``FamilySpec.hyperparameters`` order."""
    from numbers import Integral

    from sklearn.utils._param_validation import Interval, StrOptions, make_constraint

    import cvxmetric

    spec = col.FAMILIES[family]
    cls = getattr(cvxmetric, _ESTIMATORS.get(family, ""), None)
    declared = getattr(cls, "_parameter_constraints", {}) or {}
    out = []
    for name, default in spec.hyperparameters.items():
        raw = [c for c in declared.get(name, ()) if c is not None]
        cons = tuple(make_constraint(c) for c in raw)
        if "boolean" in raw or isinstance(default, bool):
            kind = "bool"
        elif any(isinstance(c, StrOptions) for c in cons) or isinstance(default, str):
            kind = "str"
        elif (any(isinstance(c, Interval) and c.type is Integral for c in cons)
              or isinstance(default, int)):
            kind = "int"
        else:
            kind = "float"
        out.append(_Option(family, name, "--" + name.replace("_", "-"), kind,
                           () if kind == "bool" else cons, default))
    return out


def _all_options():
    """``{flag: [_Option per family that has it]}`` over every family."""
    out = {}
    for fam in col.FAMILIES:
        for opt in _family_options(fam):
            out.setdefault(opt.flag, []).append(opt)
    return out


def _check_option(opt, value):
    """Refuse a value the family's estimator would refuse; the message names
    the option and never holds more than the value given."""
    from ._validation import check_scalar

    if opt.kind in ("float", "int"):
        check_scalar(value, opt.flag)  # finite
    if opt.constraints and not any(c.is_satisfied_by(value) for c in opt.constraints):
        raise ValueError(f"{opt.flag}: must be {opt.describe()}, got {value!r}.")


def _solve_overrides(args, family):
    """The hyperparameters given on the command line, checked against
    ``family``'s options.

    Returns
    -------
    dict
        ``{name: value}``.
    """
    mine = {o.flag: o for o in _family_options(family)}
    hp = {}
    for flag, opts in _all_options().items():
        value = getattr(args, opts[0].dest, None)
        if value is None:
            continue
        opt = mine.get(flag)
        if opt is None:
            raise ValueError(
                f"{flag}: not an option of family {family!r} (its options: "
                f"{', '.join(mine) or 'none'}; `cvxmetric solve FILE "
                f"--list-methods` lists them)."
            )
        _check_option(opt, value)
        hp[opt.name] = value
    return hp


def _family_methods(family):
    """``["exact", <registered fast methods>...]``."""
    return ["exact"] + list(col.METHODS.get(family, {}))


def _method_applies(inst, method):
    applies = inst.spec.applies
    return method == "exact" or applies is None or applies(method, inst.hyperparameters)


# ---------------------------------------------------------------------------
# Subcommands
# ---------------------------------------------------------------------------


def _regularizer(hp):
    """The regulariser an instance solves with, as ``list`` shows it: a
    family's ``regularizer`` is weighted by ``lam``, and ``lam = 0`` means
    none (LDML's ``*_noreg`` instances store ``regularizer="trace"``, the
    family's default, beside ``lam=0``)."""
    reg = hp.get("regularizer")
    if reg is None:
        return "-"
    lam = hp.get("lam")
    if lam is not None and lam == 0:
        return "none (lam=0)"
    return str(reg)


def _cmd_list(args):
    root = _root(args)
    fams = [args.family] if args.family else col.families(root)
    rows = []
    for fam in fams:
        for inst in col.iter_instances(root, fam):
            status, ref = col.reference_status(root, inst)
            s = inst.sizes
            hp = inst.hyperparameters
            rows.append([
                fam, inst.name, s.get("n", "-"), s.get("d", "-"),
                s.get("n_quadruplets", "-"), s.get("n_pairs", "-"),
                _regularizer(hp), inst.source or "-", status,
                _num(ref.exact_seconds, ".3f") if status == "current" else "-",
                _num(ref.objective, ".8g") if status == "current" else "-",
            ])
    print(f"collection root: {root}")
    print(_table(["family", "instance", "n", "d", "N", "P", "regularizer", "source",
                  "reference", "exact s", "objective"], rows))
    return 0


def _cmd_verify(args):
    root = _root(args)
    methods = args.method or None
    if args.family and methods:
        own = _family_methods(args.family)
        wrong = [m for m in methods if m not in own]
        if wrong:
            raise ValueError(f"--method: {wrong[0]!r} is not a method of family "
                             f"{args.family!r}; choose from {', '.join(own)}.")
    rows = col.verify(root, args.family, methods, args.only or None,
                      with_exact=args.with_exact, progress=not args.no_progress)
    # the speedup column only where exact and a fast method ran in this run
    timed = any(np.isfinite(r.speedup) for r in rows)
    has_fast = any(r.method not in ("exact", "-") for r in rows)
    if args.json:
        print(json.dumps([r.as_dict() for r in rows], indent=2))
    else:
        body = []
        for r in rows:
            line = [r.family, r.instance, r.method, _num(r.gap),
                    _num(r.tolerance, ".0e"), _num(r.psd_violation, ".1e"),
                    _num(r.seconds, ".3f")]
            if timed:
                line.append(_num(r.speedup, ".2f")
                            + ("x" if np.isfinite(r.speedup) else ""))
            line += [r.status or "-", "ok" if r.passed else f"FAIL: {r.error}"]
            body.append(line)
        print(_table(["family", "instance", "method", "rel gap", "tol", "psd viol",
                      "seconds"] + (["speedup"] if timed else [])
                     + ["status", "result"], body))
        n_fail = sum(not r.passed for r in rows)
        print(f"\n{len(rows) - n_fail}/{len(rows)} passed"
              + ("" if not n_fail else f"; {n_fail} failed"))
        print("rel gap = (f - f_ref) / max(1, |f_ref|), f_ref the stored "
              "certified reference")
        if timed:
            print("speedup = the exact path's seconds / the method's seconds, "
                  "both measured in this run")
        elif has_fast:
            print("speedup: not shown, the exact path was not run in this "
                  "invocation (--with-exact runs it beside the fast methods)")
        verified_exact = sorted({r.family for r in rows if r.method == "exact"
                                 and not col.METHODS.get(r.family)})
        if verified_exact and not methods:
            print(f"{', '.join(verified_exact)}: no fast method is registered; "
                  f"its exact path was verified")
    return 1 if any(not r.passed for r in rows) else 0


def _list_methods(args):
    """``solve --list-methods``: the methods and options of a family (of FILE)."""
    inst = None
    if args.file:
        family = col.instance_family(args.file, args.family)
        inst = col.load_instance_file(args.file, family=family)
        fams = [family]
        where = f"{inst.path}: family {family}"
    else:
        fams = [args.family] if args.family else list(col.FAMILIES)
        where = None
    for k, fam in enumerate(fams):
        if k:
            print()
        print(where or f"family {fam}")
        rows = []
        for m in _family_methods(fam):
            note = "certified exact solve (default)" if m == "exact" else "fast"
            if inst is not None and not _method_applies(inst, m):
                note += "; does not apply to this instance"
            rows.append([m, note])
        print(_table(["method", "kind"], rows))
        rows = []
        for opt in _family_options(fam):
            value = inst.hyperparameters.get(opt.name) if inst else opt.default
            rows.append([opt.flag, opt.describe(), _show_default(value)])
        print()
        print(_table(["option", "accepts", "value for this file" if inst else
                      "default"], rows))
    return 0


def _cmd_solve(args):
    if args.list_methods:
        return _list_methods(args)
    if not args.file:
        raise ValueError("FILE: an instance .npz is required (or --list-methods).")
    family = col.instance_family(args.file, args.family)
    methods = _family_methods(family)
    if args.method not in methods:
        raise ValueError(f"--method: {args.method!r} is not a method of family "
                         f"{family!r}; choose from {', '.join(methods)}.")
    hp = _solve_overrides(args, family)
    inst = col.load_instance_file(args.file, family=family, hyperparameters=hp)
    if not _method_applies(inst, args.method):
        raise ValueError(f"--method: {args.method!r} does not apply to this "
                         f"{family} instance (hyperparameters "
                         f"{col.jsonable(inst.hyperparameters)}).")
    try:
        data = inst.to_data()
    except col.CollectionError as exc:
        if not hp:
            raise
        given = " ".join(f"{o.flag}={hp[o.name]!r}" for o in _family_options(family)
                         if o.name in hp)
        raise ValueError(f"{exc} (options given: {given})") from None
    from ._trace import format_trace, recording

    with recording() as stages:
        if args.method == "exact":
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # judged by the certificate
                res = inst.spec.exact(data)
        else:
            res = col.run_method(inst.family, args.method, data)
    if stages:
        res.trace = tuple(stages)
    cert = res.certificate
    # compare with the stored reference when the file belongs to a collection
    ref_info = None
    path = inst.path
    if path.parent.parent.name == "problems" and path.parent.name == inst.family:
        root = path.parent.parent.parent
        try:
            if (col.problems_dir(root, inst.family) / "manifest.json").is_file() \
                    and inst.entry:
                status, ref = col.reference_status(root, inst)
                ref_info = {"status": status}
                if status == "current":
                    f_ref = ref.objective
                    # the family's objective of M, as `cvxmetric verify` compares
                    M = np.asarray(res.M, dtype=float)
                    f = float(inst.spec.objective(
                        data, 0.5 * (M + M.T) if inst.spec.psd else M))
                    ref_info.update(objective=f_ref,
                                    rel_gap=(f - f_ref) / max(1.0, abs(f_ref)))
        except col.CollectionError as exc:  # informative only
            ref_info = {"status": "invalid", "detail": str(exc)}
    doc = {
        "instance": {"file": str(path), "family": inst.family, "name": inst.name,
                     "sha256": inst.sha256, "sizes": inst.sizes,
                     "hyperparameters": inst.hyperparameters},
        "method": res.method,
        "status": res.status,
        "objective": res.objective,
        "n_iter": res.n_iter,
        "time": res.time,
        "certificate": cert.as_dict(),
        "reference": ref_info,
        "trace": [stage.as_dict() for stage in res.trace],
        "M": np.asarray(res.M),
    }
    if args.json:
        print(json.dumps(col.jsonable(doc), indent=2, allow_nan=False))
        return 0
    print(f"instance   {inst.name} ({inst.family}, {path})")
    print(f"sizes      {inst.sizes}")
    print(f"method     {res.method}   status {res.status}   iterations {res.n_iter}")
    print(f"objective  {res.objective:.10g}")
    print(f"certificate: rel_gap {cert.rel_gap:.3g}  max_violation "
          f"{cert.max_violation:.3g}  min_eig {cert.min_eig:.3g}  solver "
          f"{cert.solver}  passed {cert.passed}")
    print(f"time       {res.time:.3f} s")
    if args.trace:
        print("trace:")
        print("\n".join("  " + line for line in format_trace(res.trace).splitlines()))
    if ref_info and ref_info.get("status") == "current":
        print(f"reference  {ref_info['objective']:.10g}  (rel gap "
              f"{ref_info['rel_gap']:.3g})")
    elif ref_info:
        print(f"reference  {ref_info['status']}")
    M = np.asarray(res.M, dtype=float)
    s = np.linalg.svd(M, compute_uv=False)
    rank = int(np.sum(s > 1e-8 * max(1.0, s[0]))) if s.size else 0
    print(f"M          {M.shape[0]}x{M.shape[1]}, rank {rank}, trace "
          f"{np.trace(M):.6g}")
    return 0


_ORIGINS = {
    "CVXMETRIC_ROOT": "named by $CVXMETRIC_ROOT",
    "current directory": "found in the current directory",
    "package repository": "the repository of the installed package",
    "installed package data": "the collection installed with the package",
}


def _write_target(args, command, folder):
    """The collection root ``command`` reads and the one it writes into.

    The target is ``--out DIR``, else a root named with ``--root DIR``, else
    (with ``--in-place``) the root found by default.  Without any of them the
    command refuses: the default root is usually the repository itself.

    Returns
    -------
    root, target : Path
    """
    explicit = args.root or args.root_global
    root, origin = col.locate_root(explicit, must_exist=command != "make-problems")
    if args.out:
        target = Path(args.out).expanduser().resolve()
        if target.exists() and not target.is_dir():
            raise ValueError(f"--out: {target} is not a directory.")
        return root, target
    if origin == "installed package data":
        raise ValueError(
            f"{command}: refusing to write into {root / folder}/ "
            f"({_ORIGINS[origin]}: rewriting it would break the installation); "
            f"pass --out DIR to write into another collection.")
    if explicit or args.in_place:
        return root, root
    raise ValueError(
        f"{command}: refusing to write into {root / folder}/ ({_ORIGINS[origin]}) "
        f"without --in-place; pass --in-place to update that collection, or "
        f"--out DIR (or --root DIR) to write into another one."
    )


def _cmd_reference(args):
    if args.scs_tol is not None:
        from ._validation import check_scalar

        check_scalar(args.scs_tol, "--scs-tol", low=0, low_inclusive=False)
    if args.dry_run:
        if args.in_place or args.out:
            raise ValueError("--dry-run: writes nothing; drop --in-place / --out.")
        root = target = _root(args)
    else:
        root, target = _write_target(args, "reference", "reference")
    fams = [args.family] if args.family else col.families(root)
    if args.dry_run:
        _note(f"reference: dry run, nothing is written (instances from {root})")
    else:
        for fam in fams:
            _note(f"reference: writing accepted references of {fam} to "
                  f"{col.reference_dir(target, fam)}")

    def report(o):
        s = o.record.get("solvers", {})
        agree = o.record.get("agreement", {}).get("rel_diff")
        line = [o.instance.family, o.instance.name,
                _num(s.get("CLARABEL", {}).get("objective"), ".10g"),
                _num(s.get("SCS", {}).get("objective"), ".10g"), _num(agree),
                _num(s.get("CLARABEL", {}).get("seconds"), ".3f"),
                _num(s.get("SCS", {}).get("seconds"), ".3f"),
                ("written" if o.written else "accepted") if o.accepted
                else "REJECTED"]
        rows.append(line)
        print(f"{o.instance.name}: {line[-1]}", file=sys.stderr)
        for reason in o.reasons:
            print(f"  {reason}", file=sys.stderr)

    rows = []
    outcomes = col.make_references(root, args.family, args.only or None,
                                   scs_tol=args.scs_tol, write=not args.dry_run,
                                   progress=report, out=target)
    print(_table(["family", "instance", "CLARABEL", "SCS", "agreement", "CLARABEL s",
                  "SCS s", "result"], rows))
    written = sorted({o.instance.family for o in outcomes if o.written})
    for fam in written:
        print(f"written to {col.reference_dir(target, fam)}")
    if args.dry_run:
        print("dry run: nothing written")
    bad = [o for o in outcomes if not o.accepted]
    for o in bad:
        print(f"{o.instance.name}: not written: " + " ".join(o.reasons))
    return 1 if bad else 0


def _cmd_make_problems(args):
    if args.check:
        if args.in_place:
            raise ValueError("--check: writes nothing; drop --in-place.")
        target = (Path(args.out).expanduser().resolve() if args.out
                  else _root(args, must_exist=False))
    else:
        _, target = _write_target(args, "make-problems", "problems")
    fams = args.family or [f for f, s in col.FAMILIES.items() if s.generate]
    for fam in fams:
        if fam not in col.FAMILIES:
            raise ValueError(f"FAMILY: unknown family {fam!r}; choose from "
                             f"{', '.join(sorted(col.FAMILIES))}.")
    changed = False
    for fam in fams:
        if not args.check:
            _note(f"make-problems: writing {fam} instances to "
                  f"{col.problems_dir(target, fam)}")
        out = col.make_problems(target, fam, check=args.check)
        rows = [[o["name"], o["sizes"].get("n", "-"), o["sizes"].get("d", "-"),
                 o["sizes"].get("n_quadruplets", "-"), o["sizes"].get("n_pairs", "-"),
                 o["sha256"][:12], "changed" if o["changed"] else "unchanged"]
                for o in out]
        changed |= any(o["changed"] for o in out)
        print(f"{fam}: {col.problems_dir(target, fam)}"
              + (" (check only, nothing written)" if args.check else " (written)"))
        print(_table(["instance", "n", "d", "N", "P", "sha256", "vs disk"], rows))
    if changed and not args.check:
        print(f"instances changed: regenerate their references with "
              f"`cvxmetric reference --root {target}`.")
    return 1 if (args.check and changed) else 0


# bench options that belong to one suite: (argparse dest, option)
_SYNTHETIC_OPTIONS = (("sizes", "--sizes"),
                      ("skip_straightforward", "--skip-straightforward"),
                      ("subgradient_maxiter", "--subgradient-maxiter"))
_REAL_OPTIONS = (("datasets", "--datasets"), ("seeds", "--seeds"),
                 ("estimators", "--estimators"))
#: The Qwise benchmark's own options: the other families' synthetic
#: benchmarks run fixed cases and take none of them.
_QWISE_OPTIONS = _SYNTHETIC_OPTIONS + (("methods", "--methods"),)


def _given(args, options):
    return [opt for dest, opt in options if getattr(args, dest) not in (None, False)]


def _bench_family_option(args):
    """Fold the deprecated ``--families`` into ``--family``; remember the
    spelling the user gave (``args.family_flag``) for the messages."""
    args.family_flag = "--family"
    if args.families_alias is not None:
        if args.family is not None:
            raise ValueError("--families: a deprecated spelling of --family; "
                             "give one of them.")
        _note("bench: --families is deprecated; use --family (it takes a "
              "comma-separated list too)")
        args.family, args.family_flag = args.families_alias, "--families"
    if args.family is not None:
        repeated = sorted({f for k, f in enumerate(args.family)
                           if f in args.family[:k]})
        if repeated:
            raise ValueError(f"{args.family_flag}: families given twice: "
                             f"{repeated}.")


def _bench_suite(args):
    """The suite ``bench`` runs: ``--suite``, else ``synthetic`` when
    ``--family`` or a synthetic-only option is given, else ``collection``."""
    if args.suite:
        return args.suite
    if args.family or _given(args, _SYNTHETIC_OPTIONS):
        return "synthetic"
    return "collection"


def _refuse(options, why):
    if options:
        raise ValueError(f"{options[0]}: {why}")


def _refuse_families(args, known, where):
    """``--family`` names only families of ``known`` (those ``where`` has)."""
    unknown = [f for f in args.family or () if f not in known]
    if unknown:
        raise ValueError(f"{args.family_flag}: {where} has no case of "
                         f"{', '.join(unknown)}; its families: "
                         f"{', '.join(known)}.")


def _synthetic_takes(family, name):
    """Whether ``family``'s ``run_bench`` takes the keyword ``name``."""
    import importlib
    import inspect

    mod = importlib.import_module(f".bench.{family}", __package__)
    params = inspect.signature(mod.run_bench).parameters
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _check_bench_options(args, suite):
    """Refuse an option the chosen suite does not use (never ignore it)."""
    collection_only = [o for d, o in (("only", "--only"), ("repeat", "--repeat"))
                       if getattr(args, d) is not None]
    if suite != "real":
        _refuse(_given(args, _REAL_OPTIONS), "only with --suite real.")
    if suite != "collection":
        _refuse(collection_only, "only with the collection suite (the default; "
                                 "with --family F add --suite collection).")
    if suite == "collection":
        _refuse(_given(args, _SYNTHETIC_OPTIONS + (
            ("no_isolate", "--no-isolate"), ("max_seconds", "--max-seconds"),
            ("seed", "--seed"))),
            "not used by the collection suite (the default); the synthetic "
            "benchmarks take it: --family F or --suite synthetic.")
        return
    if args.no_isolate and args.max_seconds is not None:
        raise ValueError("--max-seconds: needs isolated runs (a run in this "
                         "process cannot be stopped safely); drop --no-isolate.")
    if suite == "synthetic":
        _check_synthetic_options(args)
    else:
        _check_real_options(args)


def _check_synthetic_options(args):
    """``bench --family F``: the families' benchmarks and their options."""
    families = args.family or ["qwise"]
    bench_families = _bench_families()
    missing = [f for f in families if f not in bench_families]
    if missing:
        raise ValueError(
            f"{args.family_flag}: {missing[0]} has no synthetic benchmark "
            f"(those of {', '.join(bench_families)}); `--suite collection "
            f"--family {missing[0]}` times its collection instances.")
    others = [f for f in families if f != "qwise"]
    if others:
        _refuse(_given(args, _QWISE_OPTIONS),
                f"only for the Qwise benchmark (--family qwise); the "
                f"benchmark of {others[0]} runs its fixed cases.")
    if args.no_isolate:
        _refuse(["--no-isolate" for f in others
                 if not _synthetic_takes(f, "isolate")],
                "the benchmark of this family always isolates its runs.")
    if args.methods and "qwise" in families:
        from .bench import qwise as qbench

        unknown = [m for m in args.methods if m not in qbench.BENCH_METHODS]
        if unknown:
            raise ValueError(f"--methods: unknown {unknown} for the Qwise "
                             f"benchmark; its methods: "
                             f"{', '.join(qbench.BENCH_METHODS)}.")


def _check_real_options(args):
    """``bench --suite real``: its options, and a selection that runs something."""
    from .bench import conformance

    _refuse(_given(args, _SYNTHETIC_OPTIONS),
            "only with the synthetic benchmarks (--family F).")
    _refuse(["--seed"] if args.seed is not None else [],
            "not used by --suite real; --seeds lists its seeds.")
    _refuse_families(args, tuple(conformance.FAMILIES), "--suite real")
    known = sorted({m for f in conformance.FAMILIES for m in conformance.METHODS[f]})
    unknown = [m for m in args.methods or () if m not in known]
    if unknown:
        raise ValueError(f"--methods: unknown {unknown} for --suite real; "
                         f"its methods: {', '.join(known)}.")
    fams = args.family or tuple(conformance.FAMILIES)
    cases = conformance.cases(
        args.datasets or conformance.DATASETS,
        args.seeds or conformance.DEFAULT_SEEDS,
        fams, methods=args.methods, estimators=args.estimators)
    if not cases:
        raise ValueError(
            "--suite real: the selection has no case, nothing to run ("
            + "; ".join(f"{f}: estimators {', '.join(conformance.FAMILIES[f])}"
                        f", methods {', '.join(conformance.METHODS[f])}"
                        for f in fams)
            + (f"; --estimators {','.join(args.estimators)}"
               if args.estimators else "")
            + (f"; --methods {','.join(args.methods)}" if args.methods else "")
            + ").")


#: Every ``bench`` option, ``(dest, flag)``: what a mode refuses unless it
#: takes it.
_BENCH_OPTIONS = _SYNTHETIC_OPTIONS + _REAL_OPTIONS + (
    ("suite", "--suite"), ("family", "--family"), ("only", "--only"),
    ("methods", "--methods"), ("repeat", "--repeat"), ("no_isolate", "--no-isolate"),
    ("contended", "--contended"), ("scaling", "--scaling"))


def _bench_mode(args, mode, takes, known):
    """Check the options of ``bench --<mode>`` and return its families.

    ``takes``: the dests of :data:`_BENCH_OPTIONS` the mode uses besides
    ``--max-seconds``, ``--seed`` and ``--json``; any other option given is
    refused (naming it).  ``--family`` selects among ``known`` (all of them
    by default).
    """
    flags = dict(_BENCH_OPTIONS)
    flags["family"] = args.family_flag
    others = [flags[dest] for dest, _ in _BENCH_OPTIONS
              if dest not in takes and dest != mode
              and getattr(args, dest) not in (None, False)]
    _refuse(others, f"not used with --{mode} (its options: "
                    + ", ".join([flags[d] for d in takes]
                                + ["--max-seconds", "--seed", "--json"]) + ").")
    _refuse_families(args, tuple(known), f"--{mode}")
    return tuple(args.family) if args.family else tuple(known)


def _cmd_contended(args):
    from .bench.contended import CASES, format_contended, run_contended

    families = _bench_mode(args, "contended", ("family", "repeat"), CASES)
    _note("bench: threads under the BLAS policy vs 1 and all threads, idle then "
          "contended (a few minutes)")
    rows = run_contended(
        families, max_seconds=args.max_seconds or 300.0,
        seed=0 if args.seed is None else args.seed, repeat=args.repeat or 1,
        callback=lambda r: print(f"done: {r['family']} {r['condition']}: ratio "
                                 f"{r['ratio']:.2f}", file=sys.stderr))
    if args.json:
        print(json.dumps(col.jsonable(rows), indent=2))
    else:
        print(format_contended(rows))
        print("\nratio: the policy's seconds over the best of 1 and all BLAS "
              "threads in the same condition (target <= 1.1); a run killed at "
              "--max-seconds counts as that budget.")
    return _failed_runs(rows)


def _failed_runs(rows, what="runs"):
    """Exit status 1 and a line on stderr when a run ended with an error."""
    failed = [r for r in rows if r.get("status") == "error"]
    if failed:
        _note(f"bench: {len(failed)} of {len(rows)} {what} failed (status "
              f"error): " + "; ".join(str(r.get("error")) for r in failed[:3])
              + ("; ..." if len(failed) > 3 else ""))
    return 1 if failed else 0


def _cmd_scaling(args):
    from .bench.scaling import GRIDS, format_scaling, run_scaling

    families = _bench_mode(args, "scaling", ("family",), GRIDS)
    _note("bench: each family's fast solver over its size grid, one process and "
          "one BLAS thread per run (several minutes)")
    result = run_scaling(
        families, max_seconds=args.max_seconds or 300.0,
        seed=0 if args.seed is None else args.seed,
        callback=lambda r: print(
            f"done: {r['family']} " + " ".join(f"{k}={v:g}" for k, v in
                                               r["sizes"].items())
            + f": {_num(r['seconds'], '.3g')} s, {r['status']}", file=sys.stderr))
    if args.json:
        print(json.dumps(col.jsonable(result), indent=2))
    else:
        print(format_scaling(result))
        print("\nslope: least-squares slope of log(seconds) against log(size) "
              "along the axis (runs that errored or timed out left out). s/iter: "
              "seconds / iterations; floor s/iter: the iteration's dense linear "
              "algebra at this machine's single-thread DGEMM rate (GF/s) and "
              "eigh time (qwise, mmc, slr; see cvxmetric.bench.scaling); x floor: "
              "s/iter / floor. Every run on one BLAS thread.")
    return _failed_runs(result.get("runs", []))


def _cmd_bench(args):
    from . import bench

    _bench_family_option(args)
    if args.scaling:
        return _cmd_scaling(args)
    if args.contended:
        return _cmd_contended(args)
    suite = _bench_suite(args)
    _check_bench_options(args, suite)
    if suite == "real":
        from .bench import conformance

        args.families = args.family  # conformance.run_cli's name
        return conformance.run_cli(args, json_stdout=args.json)

    if suite == "collection":
        root = _root(args)
        methods = args.methods
        known = ["exact"] + sorted({m for f in col.METHODS.values() for m in f})
        unknown = [m for m in methods or () if m not in known]
        if unknown:
            raise ValueError(f"--methods: unknown {unknown}; the collection's "
                             f"methods are {', '.join(known)}.")
        try:
            plan = bench.plan_collection_bench(root, args.family, methods,
                                               args.only or None)
        except ValueError as exc:  # an empty selection: name the options
            given = [f for f, v in ((args.family_flag, args.family),
                                    ("--methods", methods), ("--only", args.only))
                     if v]
            why = str(exc).removeprefix("methods: ")
            raise ValueError(f"{'/'.join(given) or 'bench'}: {why}") from None
        n_runs = sum(len(names) for _, names in plan)
        _note(f"bench: {n_runs} runs on {len(plan)} instances of the collection "
              f"in {root}"
              + (f" (family {', '.join(args.family)})" if args.family else ""))
        rows = bench.run_collection_bench(
            root, args.family, methods, args.only or None, repeat=args.repeat or 1,
            callback=lambda r: print(
                f"done: {r['family']}/{r['instance']} {r['method']}: "
                f"{_num(r['seconds'], '.3f')} s, {r['status']}", file=sys.stderr))
        if args.json:
            print(json.dumps(col.jsonable(rows), indent=2))
        else:
            print(bench.format_collection_table(rows))
            print("\ngap: (f - f_ref) / max(1, |f_ref|), f recomputed from M as "
                  "`cvxmetric verify` does, f_ref the stored reference (or this "
                  "run's exact solve); x exact: the exact row's seconds / the "
                  "row's, both measured in this run.")
        return 1 if any(r["error"] for r in rows) else 0

    rows = []
    qwise_rows = False
    for family in args.family or ["qwise"]:
        if family == "qwise":
            rows += _run_qwise_bench(args)
            qwise_rows = True
        else:
            rows += _run_family_bench(args, family)
    if args.json:
        print(json.dumps(col.jsonable(rows), indent=2))
    else:
        print(bench.format_table(rows))
        if qwise_rows:
            print("\ngap: (f - f_ref) / max(1, |f_ref|) when kind is 'vs exact' "
                  "or 'vs fast' (f_ref: the exact optimum, or above 1e4 "
                  "constraints the fast solver's optimum certified to 1e-6); "
                  "the solver's certified relative duality gap when "
                  "'certified'. x exact / x declared: seconds of the default "
                  "exact path (margin-set reduction, its guess from a fast "
                  "solve) / of the declared CVXPY model, divided by the row's. "
                  "peak/base MB: ru_maxrss of the run's process (base: before "
                  "the solve).")
    return _failed_runs(rows)


def _run_family_bench(args, family):
    """``family``'s synthetic benchmark (``cvxmetric/bench/<family>.py``,
    ``run_bench(max_seconds=, seed=, callback=[, isolate=]) -> rows``)."""
    import importlib

    mod = importlib.import_module(f".bench.{family}", __package__)
    _note(f"bench: the {family} synthetic benchmark at its fixed cases")
    kw = {"isolate": False} if args.no_isolate else {}
    return mod.run_bench(max_seconds=args.max_seconds,
                         seed=0 if args.seed is None else args.seed,
                         callback=lambda r: print(
                             f"done: {r['problem']} {r['method']}: "
                             f"{_num(r['seconds'], '.2f')} s, {r['status']}",
                             file=sys.stderr), **kw)


def _run_qwise_bench(args):
    """The Qwise scaling benchmark (``cvxmetric/bench/qwise.py``)."""
    from .bench import qwise as qbench

    methods = args.methods or qbench.BENCH_METHODS
    if not args.sizes:
        _note("bench: the Qwise scaling benchmark at sizes "
              + "; ".join(f"{model} " + ",".join(f"{d}x{N:g}" for d, N in sz)
                          for model, sz in qbench.MODEL_SIZES.items())
              + " (many minutes; --sizes DxN,... and --methods for others)")

    def progress(row):
        print(f"done: d={row['d']} N={row['N']} {row['method']}: "
              f"{_num(row['seconds'], '.2f')} s, {row['status']}", file=sys.stderr)

    return qbench.run_bench(
        args.sizes, methods, seed=0 if args.seed is None else args.seed,
        skip_straightforward=args.skip_straightforward,
        max_seconds=args.max_seconds, isolate=not args.no_isolate,
        subgradient_maxiter=args.subgradient_maxiter, callback=progress)


# ---------------------------------------------------------------------------
# Parser
# ---------------------------------------------------------------------------


def _bench_families():
    """Qwise, then every family with a synthetic benchmark: the modules of
    :mod:`cvxmetric.bench` named after a family's package
    (``cvxmetric/bench/<family>.py``)."""
    pkg = Path(__file__).resolve().parent
    return ("qwise",) + tuple(sorted(
        f.stem for f in (pkg / "bench").glob("*.py")
        if f.stem != "qwise" and (pkg / f.stem / "__init__.py").is_file()))


def _families_epilog():
    """Every family's methods and options (``solve --help`` without a FILE)."""
    lines = ["methods and options per family (`cvxmetric solve FILE --help` "
             "shows those of FILE's family):"]
    for fam in col.FAMILIES:
        opts = []
        for o in _family_options(fam):
            opts.append(f"{o.flag}/--no-{o.flag[2:]}" if o.kind == "bool" else o.flag)
        lines.append(f"  {fam}: --method {{{','.join(_family_methods(fam))}}}; "
                     f"options {' '.join(opts) or '(none)'}")
    return "\n".join(lines)


def _add_solve_arguments(p, family):
    """``solve``'s arguments; the hyperparameter options of ``family`` are
    shown in the help, every other family's are accepted but hidden (and
    refused when used on another family's file)."""
    fam_choices = sorted(col.FAMILIES)
    p.add_argument("file", nargs="?", metavar="FILE",
                   help="instance .npz (its family: the manifest beside it, "
                        "else its array names)")
    if family is None:
        method_help = ("exact (certified CVXPY, the default) or one of the "
                       "family's fast methods (see below)")
    else:
        method_help = (f"{family}: one of {', '.join(_family_methods(family))} "
                       f"(default: exact, the certified CVXPY solve)")
    p.add_argument("--method", default="exact", metavar="M", help=method_help)
    p.add_argument("--family", choices=fam_choices,
                   help="default: from the manifest beside the file, else from "
                        "its array names")
    p.add_argument("--list-methods", action="store_true",
                   help="print the family's methods and options (with FILE: the "
                        "values for that file) and exit")
    p.add_argument("--json", action="store_true",
                   help="print a JSON document (objective, status, certificate, "
                        "time, trace, M)")
    p.add_argument("--trace", action="store_true",
                   help="print the stages that ran (solver, iterations, seconds, "
                        "gap after each, why each started)")
    own = {o.flag: o for o in _family_options(family)} if family else {}
    group = p.add_argument_group(
        f"options of family {family!r} (override the manifest; checked as "
        f"{_ESTIMATORS.get(family, 'the family')} checks its parameters)"
        if family else "hyperparameter options")
    for flag, opts in _all_options().items():
        opt = own.get(flag, opts[0])
        shown = flag in own
        kw = dict(dest=opt.dest, default=None)
        if opt.kind == "bool":
            kw["action"] = argparse.BooleanOptionalAction
        else:
            kw["type"] = {"float": float, "int": int, "str": str}[opt.kind]
            kw["metavar"] = opt.kind.upper()
        kw["help"] = ((f"{opt.describe()}; not set by default"
                       if opt.default is None else
                       f"{opt.describe()}; family default "
                       f"{_show_default(opt.default)}")
                      if shown else argparse.SUPPRESS)
        group.add_argument(flag, **kw)


def build_parser(solve_family=None):
    """The argparse parser of ``cvxmetric``.

    Parameters
    ----------
    solve_family : str, optional
        The family whose methods and hyperparameter options ``solve --help``
        shows (:func:`main` derives it from the command line's FILE).
    """
    parser = argparse.ArgumentParser(
        prog="cvxmetric",
        description="Metric learning solved exactly (CVXPY, certified) and fast; "
                    "the problem collection and its checks.",
        epilog="The collection root is, in this order: --root DIR; "
               "$CVXMETRIC_ROOT; the current directory if it has a problems/ "
               "folder; the repository next to the package (a checkout or an "
               "editable install); the collection installed with the package "
               "(a wheel carries problems/ and reference/). `cvxmetric list` "
               "prints the root it reads.")
    parser.add_argument("--root", dest="root_global", default=None, metavar="DIR",
                        help="collection root (also accepted after the subcommand)")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="log progress (-vv: debug)")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", default=None, metavar="DIR",
                        help="collection root (default: $CVXMETRIC_ROOT, else "
                             "the current directory if it has problems/, else "
                             "the repository of the package (a checkout or an "
                             "editable install), else the collection installed "
                             "with the package (a wheel))")
    fam_choices = sorted(col.FAMILIES)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("list", parents=[common], help="list the instances")
    p.add_argument("--family", choices=fam_choices)
    p.set_defaults(func=_cmd_list)

    _add_verify_parser(sub, common, fam_choices)
    p = sub.add_parser(
        "solve", parents=[common], help="solve one instance file",
        description="Solve one instance file with one method of its family."
                    + (f" FILE is a {solve_family} instance." if solve_family
                       else ""),
        epilog=None if solve_family else _families_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_solve_arguments(p, solve_family)
    p.set_defaults(func=_cmd_solve)

    _add_writer_parsers(sub, common, fam_choices)
    _add_bench_parser(sub, common)
    return parser


def _add_verify_parser(sub, common, fam_choices):
    """``cvxmetric verify``."""
    p = sub.add_parser("verify", parents=[common],
                       help="check every fast method against the references")
    p.add_argument("--family", choices=fam_choices)
    all_methods = ["exact"] + sorted({m for f in col.METHODS.values() for m in f})
    p.add_argument(
        "--method", action="append", metavar="M",
        type=_choice_type(all_methods, "method"),
        help="method name (repeatable), among " + ", ".join(all_methods)
             + "; exact: the family's certified exact path. Default: each "
               "family's fast methods, or its exact path when it registers "
               "none ("
             + (", ".join(sorted(f for f in col.FAMILIES if not col.METHODS.get(f)))
                or "no family") + ")")
    p.add_argument("--with-exact", action="store_true",
                   help="also run each instance's exact path, so that the "
                        "speedup column compares times of this run")
    p.add_argument("--only", action="append", help="instance name (repeatable)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="rows as JSON")
    p.set_defaults(func=_cmd_verify)


def _add_writer_parsers(sub, common, fam_choices):
    """``cvxmetric reference`` and ``cvxmetric make-problems``: the commands
    that write into a collection."""
    write_help = ("write into the collection found by default (--root, "
                  "$CVXMETRIC_ROOT, the current directory or the package's "
                  "repository); needed unless --root DIR or --out DIR names it")
    p = sub.add_parser(
        "reference", parents=[common],
        help="compute certified references (Clarabel and SCS); writes only with "
             "--in-place, --out DIR or --root DIR",
        description="Solve every instance with Clarabel and SCS and write the "
                    "accepted references to <target>/reference/<family>/. The "
                    "target is --out DIR, else the collection named by --root "
                    "DIR, else (with --in-place) the one found by default.")
    p.add_argument("--family", choices=fam_choices)
    p.add_argument("--only", action="append", help="instance name (repeatable)")
    p.add_argument("--scs-tol", type=float, default=None,
                   help="SCS tolerance (default: Clarabel's, 1e-9)")
    p.add_argument("--dry-run", action="store_true", help="write nothing")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--in-place", action="store_true", help=write_help)
    where.add_argument("--out", metavar="DIR",
                       help="write the references under DIR/reference/ (the "
                            "instances are read from the collection root)")
    p.set_defaults(func=_cmd_reference)

    p = sub.add_parser(
        "make-problems", parents=[common],
        help="(re)generate the bundled instances; writes only with --in-place, "
             "--out DIR or --root DIR",
        description="Generate the bundled instances into "
                    "<target>/problems/<family>/. The target is --out DIR, "
                    "else the collection named by --root DIR, else (with "
                    "--in-place) the one found by default.")
    # no `choices`: argparse checks the empty default list against them
    p.add_argument("family", nargs="*",
                   help="family name(s); default: every family with bundled "
                        "instances (" + ", ".join(
                            sorted(f for f, s in col.FAMILIES.items() if s.generate))
                        + ")")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if the files on disk differ")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--in-place", action="store_true", help=write_help)
    where.add_argument("--out", metavar="DIR",
                       help="write the instances under DIR/problems/")
    p.set_defaults(func=_cmd_make_problems)


def _add_bench_parser(sub, common):
    """``cvxmetric bench``: the collection, synthetic and real-data suites
    and the threading and scaling benchmarks."""
    p = sub.add_parser(
        "bench", parents=[common],
        help="time the methods on the collection (default), a family's "
             "synthetic benchmark (--family F) or the real-data suite "
             "(--suite real)",
        description="Without options: time the exact solve and every fast "
                    "method on every instance of the collection (131 runs, "
                    "about 30 s of CPU time; a minute of wall time on a "
                    "loaded 2-core machine). --family F (or --suite synthetic, "
                    "--sizes): F's synthetic benchmark at its benchmark sizes "
                    "(Qwise: up to 10^6 constraints, many minutes). --suite "
                    "real: the conformance suite on scikit-learn's datasets. "
                    "--contended / --scaling: the threading and scaling "
                    "benchmarks.")
    p.add_argument("--suite", choices=("collection", "synthetic", "real"),
                   default=None,
                   help="default: synthetic when --family or a synthetic-only "
                        "option is given, else collection")
    from .bench import conformance, contended, scaling

    bench_fams = _bench_families()
    every = sorted(set(bench_fams) | set(col.FAMILIES)
                   | set(conformance.FAMILIES) | set(contended.CASES)
                   | set(scaling.GRIDS))
    fam_type = _list_type(choices=every, what="family")
    p.add_argument(
        "--family", action="extend", type=fam_type, default=None, metavar="F[,F...]",
        help="families, comma-separated or repeated (--families is a deprecated "
             "spelling). Synthetic benchmarks (the default with --family): "
             + ", ".join(bench_fams) + "; collection suite: "
             + ", ".join(sorted(col.FAMILIES)) + "; --suite real: "
             + ", ".join(conformance.FAMILIES) + "; --contended: "
             + ", ".join(contended.CASES) + "; --scaling: "
             + ", ".join(scaling.GRIDS) + " (default: qwise for the synthetic "
             "benchmarks, every family of the others)")
    p.add_argument("--families", dest="families_alias", action="extend",
                   type=fam_type, default=None, help=argparse.SUPPRESS)
    p.add_argument("--only", action="append",
                   help="collection: instance name (repeatable)")
    coll_methods = ["exact"] + sorted({m for f in col.METHODS.values() for m in f})
    from .bench import qwise as qbench

    p.add_argument("--methods", type=_list_type(what="method"), metavar="M[,M...]",
                   help="comma-separated methods; collection: among "
                        + ", ".join(coll_methods) + "; Qwise synthetic: among "
                        + ", ".join(qbench.BENCH_METHODS) + "; --suite real: "
                        "among " + ", ".join(sorted(
                            {m for f in conformance.FAMILIES
                             for m in conformance.METHODS[f]})))
    p.add_argument("--repeat", type=_int_type(low=1), default=None,
                   help="collection / --contended: runs per method (setting), "
                        "the fastest reported; an integer >= 1 (default 1)")
    others = [f for f in bench_fams if f != "qwise"]
    p.add_argument("--sizes", type=_sizes_type, metavar="DxN[,DxN...]",
                   help="the Qwise synthetic benchmark only (--family qwise, "
                        "the default synthetic family): comma-separated DxN "
                        "(D features, N constraints), e.g. 20x1000,100x1e5; "
                        "default: each Qwise model's sizes, up to 100x1e6. The "
                        "benchmarks of " + ", ".join(others) + " run fixed "
                        "cases and refuse it")
    p.add_argument("--skip-straightforward", action="store_true",
                   help="Qwise synthetic: do not solve the declared CVXPY model")
    p.add_argument("--max-seconds", type=_positive_float, default=None,
                   metavar="S",
                   help="synthetic / real / --contended / --scaling: kill a "
                        "run after S > 0 seconds (reported as timeout)")
    p.add_argument("--subgradient-maxiter", type=_int_type(low=1), default=None,
                   help="Qwise synthetic: default the solver's (above 1e4 "
                        "constraints the time budget usually ends the run first)")
    p.add_argument("--seed", type=_int_type(low=0, high=_SEED_MAX), default=None,
                   help="synthetic / --contended / --scaling: random_state of "
                        "the data, an integer in [0, 2**32 - 1] (default 0)")
    p.add_argument("--no-isolate", action="store_true",
                   help="synthetic / real: run in this process (peak memory is "
                        "then process-wide; no --max-seconds)")
    p.add_argument("--json", action="store_true", help="rows as JSON")
    _add_real_suite_arguments(p)
    p.set_defaults(func=_cmd_bench)


def _add_real_suite_arguments(p):
    """``bench``'s options of the real-data suite and of the threading and
    scaling benchmarks."""
    from .bench import conformance

    p.add_argument("--datasets", metavar="NAME[,NAME...]",
                   type=_list_type(choices=conformance.DATASETS, what="dataset"),
                   help="--suite real: comma-separated subset of "
                        + ",".join(conformance.DATASETS))
    p.add_argument("--seeds", metavar="S[,S...]",
                   type=_list_type(item=_int_type(low=0, high=_SEED_MAX),
                                   what="seed"),
                   help="--suite real: comma-separated seeds, integers in "
                        "[0, 2**32 - 1] (default "
                        + ",".join(str(s) for s in conformance.DEFAULT_SEEDS) + ")")
    p.add_argument("--contended", action="store_true",
                   help="the threading benchmark: each family's fast solver "
                        "under the BLAS policy, on 1 and on all threads, idle "
                        "and next to a CPU-bound neighbour process; ratio = "
                        "policy / best (a few minutes)")
    p.add_argument("--scaling", action="store_true",
                   help="the scaling benchmark: each family's fast solver over "
                        "a grid of sizes on one BLAS thread; log-log slopes "
                        "and seconds per iteration against the machine's "
                        "floor; --family selects families (several minutes)")
    estimators = sorted({e for f in conformance.FAMILIES
                         for e in conformance.FAMILIES[f]})
    p.add_argument("--estimators", metavar="NAME[,NAME...]",
                   type=_list_type(choices=estimators, what="estimator"),
                   help="--suite real: comma-separated names among "
                        + ", ".join(estimators))


def _command_rest(argv, command):
    """The arguments after ``command`` when it is the subcommand of ``argv``."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--root":
            i += 2
        elif a.startswith("--root=") or a == "--verbose" or re.fullmatch(r"-v+", a):
            i += 1
        else:
            return argv[i + 1:] if a == command else None
    return None


def _solve_family(argv):
    """The family of ``solve``'s FILE (or ``--family``) on the command line,
    for its help text; ``None`` when there is none or it cannot be told (the
    command then reports why)."""
    rest = _command_rest(argv, "solve")
    if rest is None:
        return None
    pre = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    pre.add_argument("--root")
    _add_solve_arguments(pre, None)
    try:
        args, _ = pre.parse_known_args([a for a in rest if a not in ("-h", "--help")])
        return col.instance_family(args.file, args.family) if (
            args.family or args.file) else None
    except (argparse.ArgumentError, SystemExit, col.CollectionError):
        return None


def main(argv=None):
    """Run ``cvxmetric``; return the exit code.

    Parameters
    ----------
    argv : list of str, optional
        Default: ``sys.argv[1:]``.
    """
    argv = [str(a) for a in (sys.argv[1:] if argv is None else argv)]
    parser = build_parser(solve_family=_solve_family(argv))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2), already printed
        return exc.code if isinstance(exc.code, int) else 2
    if args.verbose:
        logging.basicConfig(
            level=logging.DEBUG if args.verbose > 1 else logging.INFO,
            format="%(name)s: %(message)s", stream=sys.stderr)
    if not hasattr(args, "root"):
        args.root = None
    try:
        return args.func(args)
    except col.CollectionError as exc:
        _err(str(exc))
        return 2
    except SolverError as exc:
        _err(f"solver failed ({exc.status}): {exc}")
        return 2
    except (ValueError, TypeError) as exc:  # invalid input named by the message
        _err(str(exc))
        return 2


if __name__ == "__main__":
    sys.exit(main())

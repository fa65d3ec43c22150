"""Run the installed ``cvxmetric`` command on the collection its wheel carries.

Run by ``.ci/wheel_check`` with the Python of an environment where the wheel
is installed (not editable), from a directory with no ``problems/`` and
without ``$CVXMETRIC_ROOT``.  It checks that the collection root found is
the installed one, that every formulation of the registry with a collection
family has that family installed, then runs ``cvxmetric list`` and
``cvxmetric verify`` through the environment's console script on one
instance per family (the smallest file that
``verify`` runs a method on) and requires a passing row of every
family.  Exit status 1 on any failure.
"""

import json
import os
import subprocess
import sys
from pathlib import Path


def _fail(message):
    print(f"verify_installed: {message}", file=sys.stderr)
    sys.exit(1)


def _picks(col, root, shipped):
    """Per family, its smallest instance that ``verify`` runs a method on."""
    picks = {}
    for inst, _ in col.verify_plan(root):
        size = inst.path.stat().st_size
        if inst.family not in picks or size < picks[inst.family][1]:
            picks[inst.family] = (inst.name, size)
    if set(shipped) - set(picks):
        _fail(f"families with no instance to verify: {sorted(set(shipped) - set(picks))}")
    return sorted({name for name, _ in picks.values()})


def _verify(command, names, shipped):
    """``cvxmetric verify --only ...``: a passing row of every family, or fail."""
    only = [arg for name in names for arg in ("--only", name)]
    run = subprocess.run([command, "verify", "--no-progress", "--json", *only],
                         stdout=subprocess.PIPE, text=True, check=False)
    rows = json.loads(run.stdout)
    for row in rows:
        print(f"{row['family']:18s} {row['instance']:36s} {row['method']:12s} "
              f"{'passed' if row['passed'] else 'FAILED'}  {row['error'] or ''}")
    unverified = sorted(set(shipped) - {row["family"] for row in rows if row["passed"]})
    if run.returncode != 0 or unverified:
        _fail(f"cvxmetric verify exited {run.returncode}; families without a "
              f"passing row: {unverified}")
    return rows


def main():
    if os.environ.get("CVXMETRIC_ROOT") or Path("problems").exists():
        _fail("run from a directory without problems/ and without $CVXMETRIC_ROOT")
    import cvxmetric
    from cvxmetric import collection as col

    root, origin = col.locate_root()
    if origin != "installed package data":
        _fail(f"the collection root is {root} ({origin}), not the installed data")
    shipped = col.families(root)
    missing = [f.name for f in cvxmetric.formulations()
               if f.collection and f.name not in shipped]
    if missing:
        _fail(f"registered families without installed instances: {missing}")
    names = _picks(col, root, shipped)
    command = str(Path(sys.executable).parent / "cvxmetric")
    subprocess.run([command, "list"], check=True)
    rows = _verify(command, names, shipped)
    print(f"verify_installed: {len(rows)} rows passed, {len(shipped)} families, "
          f"root {root}")


if __name__ == "__main__":
    main()

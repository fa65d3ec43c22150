"""Check that a built wheel holds the package, the collection and the licence.

Usage: ``python .ci/wheel_contents.py WHEEL [REPO]``: prints what is wrong,
one line each, and exits 1 if anything is.  ``.ci/wheel_check`` runs it on
the wheel built from the sdist; ``tests/test_wheel.py`` imports it.

The wheel must hold, byte for byte, every ``cvxmetric/**/*.py`` and
``py.typed`` of the repository and every file of its collection
(``problems/<family>/...`` and ``reference/<family>/...``, found by pattern
as ``setup.py`` finds them) under ``cvxmetric/_bundled_collection/``, and no
collection file the repository does not have; its metadata must declare the
BSD-3-Clause licence and carry the ``LICENSE`` file.  Standard library only.
"""

import base64
import hashlib
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

BUNDLED = "cvxmetric/_bundled_collection"
COLLECTION_FOLDERS = ("problems", "reference")
LICENSE_EXPRESSION = "BSD-3-Clause"


def _visible(rel):
    return not any(p.startswith(".") or p == "__pycache__" for p in rel.parts)


def expected_files(repo):
    """``{path in the wheel: path in the repository}``."""
    repo = Path(repo)
    files = {}
    for path in sorted((repo / "cvxmetric").rglob("*")):
        rel = path.relative_to(repo)
        if (path.is_file() and _visible(rel) and BUNDLED not in rel.as_posix()
                and (path.suffix == ".py" or path.name == "py.typed")):
            files[rel.as_posix()] = path
    for folder in COLLECTION_FOLDERS:
        for path in sorted((repo / folder).glob("*/**/*")):
            rel = path.relative_to(repo)
            if path.is_file() and _visible(rel):
                files[f"{BUNDLED}/{rel.as_posix()}"] = path
    return files


def _digest(data):
    raw = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _metadata(zf, names):
    (meta,) = [n for n in names if n.endswith(".dist-info/METADATA")]
    return meta.split("/")[0], Parser().parsestr(zf.read(meta).decode())


def problems(wheel, repo):
    """What is wrong with ``wheel`` against the repository ``repo``.

    Returns
    -------
    list of str
        Empty when the wheel is complete.
    """
    repo = Path(repo)
    wrong = []
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        expected = expected_files(repo)
        for name, path in expected.items():
            if name not in names:
                wrong.append(f"missing: {name}")
            elif zf.read(name) != path.read_bytes():
                wrong.append(f"differs from the repository: {name}")
        stale = sorted(n for n in names if n.startswith(BUNDLED + "/")
                       and n not in expected)
        wrong += [f"not in the repository: {n}" for n in stale]
        dist_info, meta = _metadata(zf, names)
        if meta.get("License-Expression") != LICENSE_EXPRESSION:
            wrong.append(f"License-Expression is {meta.get('License-Expression')!r}, "
                         f"not {LICENSE_EXPRESSION!r}")
        if "LICENSE" not in meta.get_all("License-File", []):
            wrong.append("METADATA names no License-File: LICENSE")
        licence = f"{dist_info}/licenses/LICENSE"
        if licence not in names:
            wrong.append(f"missing: {licence}")
        elif zf.read(licence) != (repo / "LICENSE").read_bytes():
            wrong.append(f"differs from the repository's LICENSE: {licence}")
        record = zf.read(f"{dist_info}/RECORD").decode().splitlines()
        hashes = dict(line.rsplit(",", 2)[:2] for line in record if line)
        for name in sorted(expected.keys() & names):
            if hashes.get(name) != _digest(zf.read(name)):
                wrong.append(f"RECORD hash does not match: {name}")
    return wrong


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not 1 <= len(argv) <= 2:
        print(__doc__.splitlines()[2], file=sys.stderr)
        return 2
    repo = Path(argv[1]) if len(argv) == 2 else Path(__file__).resolve().parents[1]
    wrong = problems(argv[0], repo)
    for line in wrong:
        print(line)
    n = len(expected_files(repo))
    print(f"{argv[0]}: {'INCOMPLETE' if wrong else 'complete'} "
          f"({n} files of the repository checked)", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())

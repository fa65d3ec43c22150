"""Build step: the problem collection travels inside the wheel.

The metadata is in ``pyproject.toml``; this file adds one step to
``build_py``.  The collection lives at the top of the repository
(``problems/<family>/`` and ``reference/<family>/``), where the command line
reads it from a checkout or an editable install.  A wheel has no repository
beside it, so every file under those two folders is copied, by pattern
(whatever family folders exist at build time), to
``cvxmetric/_bundled_collection/problems/...`` and
``.../reference/...`` of the build, where
:func:`cvxmetric.collection.locate_root` finds it through
:mod:`importlib.resources`.  An editable install copies nothing: it reads
the repository's folders themselves.  The sdist carries both folders
(``MANIFEST.in``), so a wheel built from it holds the same files.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
#: The repository's collection folders, each ``<folder>/<family>/<file>``.
COLLECTION_FOLDERS = ("problems", "reference")
#: Where they go inside the package (keep in step with cvxmetric/collection.py).
BUNDLED = "_bundled_collection"


def collection_files(base=HERE):
    """Relative paths of the collection's files under ``base``.

    Every regular file inside a family folder of ``problems/`` or
    ``reference/``, except hidden files (a writer's temporary files start
    with a dot) and byte-code caches.
    """
    files = []
    for folder in COLLECTION_FOLDERS:
        for path in sorted((base / folder).glob("*/**/*")):
            rel = path.relative_to(base)
            if path.is_file() and not any(p.startswith(".") or p == "__pycache__"
                                          for p in rel.parts):
                files.append(rel)
    return files


class BuildPyWithCollection(build_py):
    """``build_py`` that also copies the collection into the package."""

    def _target(self):
        return Path(self.build_lib) / "cvxmetric" / BUNDLED

    def _collection_targets(self):
        return [(HERE / rel, self._target() / rel) for rel in collection_files()]

    def run(self):
        super().run()
        if self.editable_mode:  # the repository's own folders are read
            return
        # a build folder reused by `pip install .` keeps no family deleted since
        shutil.rmtree(self._target(), ignore_errors=True)
        for src, dst in self._collection_targets():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)

    def get_outputs(self, include_bytecode=True):
        outputs = super().get_outputs(include_bytecode)
        if self.editable_mode:
            return outputs
        return outputs + [str(dst) for _, dst in self._collection_targets()]


setup(cmdclass={"build_py": BuildPyWithCollection})

"""Names a package exports without importing them with the package.

The papers' experiments live in :mod:`cvxmetric.experiments`, outside what
``import cvxmetric`` loads.  A family's namespace still offers the names of
its paper's experiments (the Qwise applications, the SLR baselines, the
OMDML views): its ``__init__`` lists them here and they are imported on
first use (PEP 562's module ``__getattr__``).
"""

import importlib
import sys

__all__ = ["lazy_exports"]


def lazy_exports(package, names):
    """``(__getattr__, __dir__)`` for ``package`` (its ``__name__``) whose
    ``names`` -- ``{name: submodule}`` -- import on first access.

    Parameters
    ----------
    package : str
    names : dict of str
        Each exported name and the module that defines it: a submodule of
        ``package``, or a full module name (``"cvxmetric.experiments..."``).

    Returns
    -------
    tuple of callables
        Assign them to the package's ``__getattr__`` and ``__dir__``.
    """
    names = dict(names)

    def __getattr__(name):
        submodule = names.get(name)
        if submodule is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if not submodule.startswith("cvxmetric."):
            submodule = f"{package}.{submodule}"
        value = getattr(importlib.import_module(submodule), name)
        setattr(sys.modules[package], name, value)  # the next access is plain
        return value

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(names))

    return __getattr__, __dir__

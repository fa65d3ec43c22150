"""The example gallery (sphinx-gallery over ``examples/``), used by conf.py.

The examples are command-line scripts.  The gallery runs every one of
them during the build, each with its quick settings (the arguments of
``QUICK``; the script prints them), and shows what it printed and the
figures it drew: under sphinx-gallery the scripts leave their figures open
(``cvxmetric.experiments._figures.finish``) for the matplotlib scraper,
so nothing is written outside the build.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

#: example file -> its command-line arguments when the gallery runs it.
QUICK = {
    "knn_accuracy.py": ["--quick"],
    "ldml_bags.py": ["--quick"],
    "metric_learn_migration.py": [],
    "omdml_digits.py": ["--quick"],
    "qwise_attributes.py": ["--quick"],
    "qwise_taxonomy.py": ["--quick"],
    "qwise_webpages.py": ["--quick"],
    "rankdml_digits_cmc.py": ["--quick"],
    "slr_digits.py": ["--quick"],
    "slr_real_data.py": ["--quick"],
    "slr_synthetic.py": ["--quick"],
}


class ResetArgv:
    """``reset_argv``: each example's quick arguments (a class so that
    sphinx-gallery can tell whether its configuration changed)."""

    def __repr__(self):
        return f"ResetArgv({sorted(QUICK.items())!r})"

    def __call__(self, gallery_conf, script_vars):
        name = Path(script_vars["src_file"]).name
        # sphinx-gallery runs the code below the docstring with an empty
        # ``__doc__``; the scripts build their --help from it.
        doc = ast.get_docstring(ast.parse(Path(script_vars["src_file"]).read_text()))
        script_vars["example_globals"]["__doc__"] = doc or ""
        return list(QUICK[name])


def _quick_pattern():
    names = "|".join(re.escape(n) for n in QUICK)
    return rf"[\\/]({names})$"


sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": _quick_pattern(),
    "ignore_pattern": r"__init__\.py|(^|[\\/])_",
    "reset_argv": ResetArgv(),
    "image_scrapers": ("matplotlib",),
    "abort_on_example_error": False,
    "only_warn_on_example_error": False,
    "plot_gallery": "True",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "show_memory": False,
    "min_reported_time": 0,
    "capture_repr": (),
    "matplotlib_animations": False,
}


def title_examples(app, docname, source):
    """Give each example page a title: the first line of its docstring.

    The examples' docstrings are plain text (they are ``--help`` texts
    too); sphinx-gallery puts that first line under the page's label, and
    this underlines it so that it is the page's title.
    """
    if not docname.startswith("auto_examples/") or docname.endswith("index"):
        return
    lines = source[0].split("\n")
    for i, line in enumerate(lines):
        if line.startswith(".. _sphx_glr_auto_examples_"):
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            nxt = lines[j + 1] if j + 1 < len(lines) else ""
            if not re.fullmatch(r"([=\-~^])\1{2,}\s*", nxt):
                lines.insert(j + 1, "=" * len(lines[j]))
            break
    source[0] = "\n".join(_command_blocks(lines))


def _command_blocks(lines):
    """Show the docstrings' indented command lines (``    python
    examples/...``) as literal blocks: in reST an indented paragraph after
    a paragraph not ending in ``::`` is a block quote, read as prose."""
    out = []
    for i, line in enumerate(lines):
        if (line.startswith("    python ") and i >= 2 and not lines[i - 1].strip()
                and lines[i - 2].strip() and not lines[i - 2].startswith(" ")
                and not lines[i - 2].rstrip().endswith("::")):
            out += [".. code-block:: shell", ""]
        out.append(line)
    return out


def _tolerate_clean_exit():
    """Let an example end with ``raise SystemExit(main())``.

    The scripts end so that their exit status is the shell's; inside the
    build a ``SystemExit`` would stop Sphinx itself.  A clean exit (status
    0 or None) ends the example normally; any other status is an error of
    the example (and fails the build).  This wraps sphinx-gallery's
    private executor: revisit on a sphinx-gallery upgrade (the docs extra
    bounds its version).
    """
    from sphinx_gallery import gen_rst

    original = gen_rst._exec_once.__call__
    if getattr(original, "_cvxmetric_clean_exit", False):
        return

    def call(self):
        try:
            original(self)
        except SystemExit as exc:
            if exc.code not in (None, 0):
                raise RuntimeError(
                    f"the example exited with status {exc.code!r}") from None

    call._cvxmetric_clean_exit = True
    gen_rst._exec_once.__call__ = call


_tolerate_clean_exit()

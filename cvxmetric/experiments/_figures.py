"""The examples' figures: one set of options, one matplotlib check, one
way of finishing (shown, written to a folder, or left to the gallery).

Every script of ``examples/`` draws its figures by default and takes

* ``--figures DIR``: write them to DIR as PNG files (nothing else is
  written anywhere);
* ``--no-figures``: print the tables only (matplotlib is not needed).

Without matplotlib (and without ``--no-figures``) the script ends with
:func:`require_matplotlib`'s message before it computes anything.  Under
sphinx-gallery the figures are left open for its matplotlib scraper, so
the site shows them and no file is written.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

#: Colours (matplotlib's tab10 and four more), markers, line styles and
#: bar hatches: the i-th series of a figure takes the i-th of each, so no
#: two of its first 14 series share a colour or a marker, and series next
#: to each other differ in line style too.
COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple",
          "tab:brown", "tab:pink", "tab:gray", "tab:olive", "tab:cyan",
          "black", "gold", "navy", "lime")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", "h", ">", "p", "d", "8")
LINESTYLES = ("-", "--", "-.", ":")
HATCHES = ("", "//", "..", "xx", "\\\\", "oo", "++", "--", "**", "||")
#: non-interactive backends: a figure drawn there is never shown.
_FILE_BACKENDS = {"agg", "cairo", "pdf", "pgf", "ps", "svg", "template"}


def add_figure_options(parser):
    """Add ``--figures DIR`` and ``--no-figures`` to an argument parser."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--figures", type=Path, default=None, metavar="DIR",
                       help="write the figures to DIR as PNG files (default: "
                            "show them; nothing is written)")
    group.add_argument("--no-figures", action="store_true",
                       help="print the tables only (no matplotlib needed)")


def require_matplotlib(args, script):
    """End the run with a clear message, before any work, when figures are
    wanted and matplotlib is not installed.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options (``no_figures`` skips the check).
    script : str
        The example's file name, for the message.

    Raises
    ------
    SystemExit
        Status 1, after the message on standard error.
    """
    if getattr(args, "no_figures", False):
        return
    if importlib.util.find_spec("matplotlib") is None:
        sys.stderr.write(
            f"{script} draws its figures with matplotlib, which is not "
            "installed: pip install 'cvxmetric[plot]' (or matplotlib), or "
            "pass --no-figures for the printed tables only. Nothing was run.\n")
        raise SystemExit(1)


def parse_example_args(parser, argv, script):
    """Parse an example's command line: ``--quick`` and ``--full`` exclude
    each other (where both exist), then :func:`require_matplotlib`."""
    args = parser.parse_args(argv)
    if getattr(args, "quick", False) and getattr(args, "full", False):
        parser.error("--quick and --full exclude each other")
    require_matplotlib(args, script)
    return args


def pyplot():
    """matplotlib.pyplot (its backend as matplotlib chooses it: Agg where
    there is no display)."""
    import matplotlib.pyplot as plt

    return plt


def style(i, lines=True):
    """Keyword arguments of the i-th series: colour, marker, line style."""
    out = {"color": COLORS[i % len(COLORS)], "marker": MARKERS[i % len(MARKERS)]}
    if lines:
        out["linestyle"] = LINESTYLES[i % len(LINESTYLES)]
    return out


def bar_style(i):
    """Keyword arguments of the i-th bar series: colour and hatch."""
    return {"color": COLORS[i % len(COLORS)], "hatch": HATCHES[i % len(HATCHES)],
            "edgecolor": "black", "linewidth": 0.5}


def finish(figures, args):
    """Write, show or hand over the figures.

    ``--figures DIR``: each is written to ``DIR/name.png`` and closed.
    Under sphinx-gallery they stay open for its scraper.  Otherwise they
    are shown, or, on a backend without a window, closed with a line that
    says how to write them.

    Parameters
    ----------
    figures : dict of str to matplotlib.figure.Figure
        The figures by file name (without ``.png``).
    args : argparse.Namespace
        The parsed options (``figures``: the folder or None).

    Returns
    -------
    list of str
        The paths written (empty unless ``--figures DIR``).
    """
    if not figures:
        return []
    plt = pyplot()
    if args.figures is not None:
        folder = Path(args.figures)
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        for name, fig in figures.items():
            written.append(str(folder / f"{name}.png"))
            fig.savefig(written[-1], dpi=110)
            plt.close(fig)
            print(f"figure: {written[-1]}")
        return written
    if "sphinx_gallery" in sys.modules:
        return []
    if plt.get_backend().lower() in _FILE_BACKENDS:
        for fig in figures.values():
            plt.close(fig)
        print(f"{len(figures)} figure(s) drawn ({', '.join(figures)}); matplotlib's "
              f"backend shows no window here: --figures DIR writes them")
        return []
    plt.show()
    return []

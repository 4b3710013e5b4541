"""The selection map: which algorithm wins at each (P, n), beside the library's default choice.

Paper 004's Fig. 10 kind of picture: message size across, process count
up, one cell per priced point. Each algorithm keeps one colour and one
marker (:mod:`commcost.report.palette`) in every panel, and its legend
entry carries the library's id (``binomial [id 6]``), the number the
rules file and ``coll_tuned_bcast_algorithm`` use. With the default's
choices, a second panel shows what the library runs without rules. Where
the calibration timed the collective, cells are outlined in black; where
the model extrapolates (larger communicators or sizes than calibrated),
cells are hatched (:func:`commcost.selection.confidence.regions`).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from commcost.report.palette import EXTRAPOLATED_HATCH, styles
from commcost.selection.decision import Choice
from commcost.units import format_nbytes

DEFAULT_LABEL = "(no rule: the library's default)"
MARKED_CELLS = 4000  # over this many cells per panel, markers are left out (colours and legend stay)


def choice_label(choice: Choice | None, none_label: str = DEFAULT_LABEL) -> str:
    """``binomial(segsize=8192) [id 6]``: the pick and its library id (``none_label`` for None)."""
    if choice is None:
        return none_label
    ident = choice.algorithm.id
    return choice.label if ident is None else f"{choice.label} [id {ident}]"


def map_figure(procs: Sequence[int], sizes: Sequence[int], chosen: Sequence[Sequence[Choice | None]], title: str, *,
               size_title: str = "message size", default: Sequence[Sequence[Choice | None]] | None = None,
               default_title: str = "the library's default", regions: Sequence[Sequence[str]] | None = None,
               none_label: str = DEFAULT_LABEL) -> Any:
    """A matplotlib Figure of the map (two panels when ``default`` is given); ``regions[p][m]`` is
    ``measured``, ``interpolated`` or ``extrapolated``; a None cell reads ``none_label``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, Rectangle

    panels = [("commcost's pick", chosen)] + ([(default_title, default)] if default is not None else [])
    order = sorted({choice_label(c, none_label) for _, table in panels for row in table for c in row})
    look = styles(order)
    index = {label: i for i, label in enumerate(order)}
    width = 6.0 + 3.2 * len(panels)
    fig, axes = plt.subplots(1, len(panels), figsize=(width, 5.8), sharey=True, squeeze=False)
    cmap = ListedColormap([look[label].colour for label in order])
    for ax, (heading, table) in zip(axes[0], panels):
        labels = [[choice_label(c, none_label) for c in row] for row in table]
        grid = np.array([[index[label] for label in row] for row in labels])
        ax.imshow(grid, origin="lower", aspect="auto", cmap=cmap, vmin=-0.5, vmax=len(order) - 0.5,
                  interpolation="nearest")
        if grid.size <= MARKED_CELLS:
            for label in order:
                ys, xs = np.nonzero(grid == index[label])
                if xs.size:
                    ax.scatter(xs, ys, marker=look[label].marker, s=14, c=look[label].ink, linewidths=0)
        for i, row in enumerate(regions or []):
            for j, region in enumerate(row):
                if region == "extrapolated":
                    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch=EXTRAPOLATED_HATCH,
                                           edgecolor="#666666", linewidth=0))
                elif region == "measured":
                    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=1.6))
        step_x = max(1, len(sizes) // 12)
        ax.set_xticks(range(0, len(sizes), step_x), [format_nbytes(s) for s in sizes[::step_x]], rotation=45,
                      ha="right")
        ax.set_xlabel(size_title, fontsize=9)
        ax.set_title(heading, fontsize=10)
    step_y = max(1, len(procs) // 16)
    axes[0][0].set_yticks(range(0, len(procs), step_y), [str(p) for p in procs[::step_y]])
    axes[0][0].set_ylabel("ranks in the communicator (P)")
    handles = [Line2D([], [], linestyle="none", marker=look[label].marker, markersize=9,
                      markerfacecolor=look[label].colour, markeredgecolor="black", label=label) for label in order]
    if regions is not None:
        handles += [Patch(facecolor="white", edgecolor="black", linewidth=1.6, label="measured by the calibration"),
                    Patch(facecolor="white", edgecolor="#666666", hatch=EXTRAPOLATED_HATCH,
                          label="extrapolated (beyond the calibration)")]
    fig.legend(handles=handles, loc="lower center", ncol=min(3, len(handles)), fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=11)
    rows = -(-len(handles) // 3)
    fig.tight_layout(rect=(0, min(0.45, 0.05 + 0.045 * rows), 1, 0.95))
    return fig


def figure_png(fig: Any, dpi: int = 110) -> bytes:
    """A Figure as PNG bytes (the figure is closed)."""
    import matplotlib.pyplot as plt

    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=dpi)
    plt.close(fig)
    return out.getvalue()


def plot_map(path: str | Path, procs: Sequence[int], sizes: Sequence[int], chosen: Sequence[Sequence[Choice | None]],
             title: str, **extra: Any) -> bytes:
    """Write the map (:func:`map_figure`, same keywords) to a PNG file; returns its bytes."""
    data = figure_png(map_figure(procs, sizes, chosen, title, **extra))
    Path(path).write_bytes(data)
    return data

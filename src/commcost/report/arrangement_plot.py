"""Draw 2D process arrangements to PNG (paper 002 Fig. 3's form): one cell per process, filled by its group."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence


def _hatch(index: int) -> str | None:
    """Groups past the palette's eight colours repeat a colour: hatched, so they stay apart."""
    from commcost.report.palette import OKABE_ITO

    return (None, "//", "..", "xx")[(index // len(OKABE_ITO)) % 4]


def plot_arrangements(panels: Sequence[tuple[str, list[list[str]], list[list[str]]]], path: str | Path) -> None:
    """Write a PNG with one panel per ``(title, names, groups)``: ``names[i][j]`` labels cell (i, j) (the
    process there), ``groups[i][j]`` picks its fill (the shared colour-blind-safe palette, hatched past eight
    groups); the legend names the groups."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    order: dict[str, int] = {}
    for _, _, groups in panels:
        for row in groups:
            for g in row:
                order.setdefault(g, len(order))
    from commcost.report.palette import style

    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 4.8), squeeze=False)
    for ax, (title, names, groups) in zip(axes[0], panels):
        r, c = len(names), len(names[0])
        for i in range(r):
            for j in range(c):
                look = style(order[groups[i][j]])
                ax.add_patch(Rectangle((j, i), 1, 1, facecolor=look.colour, edgecolor="black", linewidth=0.8,
                                       hatch=_hatch(order[groups[i][j]])))
                if r * c <= 256:
                    ax.text(j + 0.5, i + 0.5, names[i][j], ha="center", va="center", color=look.ink,
                            fontsize=max(4.0, min(9.0, 40.0 / max(r, c))))
        ax.set_xlim(0, c)
        ax.set_ylim(r, 0)  # row 0 at the top
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(title, fontsize=9)
    fig.legend(handles=[Patch(facecolor=style(k).colour, edgecolor="black", hatch=_hatch(k), label=g)
                        for g, k in order.items()],
               loc="lower center", ncol=min(len(order), 6), fontsize=8)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)

"""Draw a 2D block partition, like paper 000 Fig. 8 and Fig. 10: fill by node, hatch GPU processes, label by rank.

Colours are the shared palette's (:mod:`commcost.report.palette`); past
its eight colours a node's fill also takes a pattern (:data:`NODE_HATCHES`,
node i: colour ``i mod 8``, pattern ``i // 8``), so no two of the first 64
nodes look alike. A GPU process's rectangle is cross-hatched over its
node's pattern and labelled ``r GPU`` so CPU and GPU processes stay apart
in grey print too. The legend names each node (up to
:data:`LEGEND_NODES`) and the two kinds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from commcost.kernels.partition2d import Partition2D
from commcost.report.palette import OKABE_ITO, style

GPU_HATCH = "xx"
NODE_HATCHES = ("", "..", "||", "--", "oo", "++", "OO", "**")  # none of them the GPU's diagonal cross
LEGEND_NODES = 16


def node_hatch(node: int, gpu: bool = False) -> str | None:
    """The fill pattern of node ``node``'s rectangles (its eight-colour round), with the GPU cross added."""
    hatch = NODE_HATCHES[(node // len(OKABE_ITO)) % len(NODE_HATCHES)] + (GPU_HATCH if gpu else "")
    return hatch or None


def partition_figure(part: Partition2D, title: str | None = None, kinds: Sequence[str] | None = None) -> Any:
    """A matplotlib Figure of ``part``; ``kinds[r]`` is ``gpu`` for a GPU process (anything else: CPU)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    node = part.node_of_rank()
    names = list(dict.fromkeys(part.hosts))
    gpu = [k == "gpu" for k in kinds] if kinds is not None else [False] * part.nprocs
    fig, ax = plt.subplots(figsize=(7.5, 6))
    for r in range(part.nprocs):
        s = style(int(node[r]))
        hatch = node_hatch(int(node[r]), gpu[r])  # drawn in the edge's colour: ink that reads on the fill
        ax.add_patch(Rectangle((part.x[r], part.y[r]), part.w[r], part.h[r], facecolor=s.colour,
                               edgecolor=s.ink if hatch else "black", linewidth=0.8, hatch=hatch))
        size = max(5.0, min(12.0, 0.35 * min(part.w[r], part.h[r]) * 256 / part.n))
        ax.text(part.x[r] + part.w[r] / 2, part.y[r] + part.h[r] / 2, f"{r} GPU" if gpu[r] else str(r),
                ha="center", va="center", fontsize=size, color=s.ink,
                bbox={"facecolor": s.colour, "edgecolor": "none", "pad": 1} if gpu[r] else None)
    ax.set_xlim(0, part.n)
    ax.set_ylim(part.n, 0)  # row 0 at the top, as a matrix is drawn
    ax.set_aspect("equal")
    ax.set_xlabel("block column")
    ax.set_ylabel("block row")
    kind_text = f", {sum(gpu)} GPU processes hatched" if any(gpu) else ""
    ax.set_title(title or f"N = {part.n} blocks, P = {part.nprocs}, M = {len(names)} nodes (fill: node{kind_text})",
                 fontsize=10)
    handles = [Patch(facecolor=style(i).colour, edgecolor=style(i).ink if node_hatch(i) else "black",
                     hatch=node_hatch(i), label=name) for i, name in enumerate(names[:LEGEND_NODES])]
    if len(names) > LEGEND_NODES:
        handles.append(Patch(facecolor="white", edgecolor="white", label=f"... {len(names) - LEGEND_NODES} more nodes"))
    if kinds is not None:
        handles += [Patch(facecolor="white", edgecolor="black", label="CPU process"),
                    Patch(facecolor="white", edgecolor="black", hatch=GPU_HATCH, label="GPU process")]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, title="node / kind",
              title_fontsize=8)
    fig.tight_layout()
    return fig


def plot_partition(part: Partition2D, path: str | Path, title: str | None = None,
                   kinds: Sequence[str] | None = None) -> None:
    """Write :func:`partition_figure` to a PNG file."""
    import matplotlib.pyplot as plt

    fig = partition_figure(part, title, kinds)
    try:
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)

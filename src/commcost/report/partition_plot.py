"""Draw a 2D block partition to PNG, like paper 000 Fig. 8 and Fig. 10: fill by node, label by rank."""

from __future__ import annotations

from pathlib import Path

from commcost.kernels.partition2d import Partition2D


def plot_partition(part: Partition2D, path: str | Path, title: str | None = None) -> None:
    """Write a PNG of ``part``: one rectangle per rank, filled by its node, labelled with the rank."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    node = part.node_of_rank()
    nnodes = int(node.max()) + 1
    cmap = plt.get_cmap("tab20" if nnodes > 10 else "tab10")
    fig, ax = plt.subplots(figsize=(6, 6))
    for r in range(part.nprocs):
        ax.add_patch(Rectangle((part.x[r], part.y[r]), part.w[r], part.h[r], facecolor=cmap(node[r] % cmap.N),
                               edgecolor="black", linewidth=0.8, alpha=0.8))
        size = max(5.0, min(12.0, 0.35 * min(part.w[r], part.h[r]) * 256 / part.n))
        ax.text(part.x[r] + part.w[r] / 2, part.y[r] + part.h[r] / 2, str(r), ha="center", va="center",
                fontsize=size)
    ax.set_xlim(0, part.n)
    ax.set_ylim(part.n, 0)  # row 0 at the top, as a matrix is drawn
    ax.set_aspect("equal")
    ax.set_xlabel("block column")
    ax.set_ylabel("block row")
    ax.set_title(title or f"N = {part.n} blocks, P = {part.nprocs}, M = {nnodes} nodes (fill: node)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)

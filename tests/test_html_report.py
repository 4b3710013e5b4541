"""Issue 16 items 5 and 6: one self-contained HTML report per command, checked in a real headless browser, and
pictures people read (colour-blind-safe palette, markers, ids in legends, what a size means, default and
measured region on the map, GPU processes told apart)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from browser import external_references, load, needs_browser, png_content
from commcost.cli.main import main
from commcost.collectives import Collective, find
from commcost.report.html_page import HtmlPage
from commcost.report.palette import MARKERS, OKABE_ITO, VISION, min_distance, style, styles
from commcost.selection.decision import Choice
from fit_helpers import rows_up_to

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
PEAK = Path(__file__).resolve().parent / "data" / "peak-coltune"
ONE_PIXEL_PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
                              "0000000d49444154789c6360000002000001e221bc330000000049454e44ae426082")


# --- the page itself ---------------------------------------------------------------------------------------

def test_page_escapes_text_embeds_pictures_and_links_only_to_itself(tmp_path):
    page = HtmlPage("a <b> & c", {"command": "commcost select <x>"})
    page.section("One").paragraph("<script>alert(1)</script>").table(("a", "b"), [[1, 2.5], [None, float("nan")]])
    page.section("One").figure(ONE_PIXEL_PNG, "cap <i>")
    path = page.write(tmp_path / "p.html")
    text = path.read_text()
    assert "<script>" not in text and "&lt;script&gt;" in text and "a &lt;b&gt; &amp; c" in text
    assert external_references(text) == []
    assert 'id="one"' in text and 'id="one-2"' in text and 'href="#one-2"' in text
    assert text.count("data:image/png;base64,") == 1
    assert '<td class="num">2.5</td>' in text and "<td>-</td>" in text
    assert not (tmp_path / "p.html.tmp").exists()
    with pytest.raises(ValueError):
        page.figure(b"GIF89a", "not a png")


def test_the_checker_finds_external_references():
    assert external_references('<img src="http://x/a.png"><link rel=stylesheet href="a.css">') == \
        ["http://x/a.png", "a.css", "<link"]


# --- item 6: the palette -----------------------------------------------------------------------------------

@pytest.mark.parametrize("vision", sorted(VISION))
def test_palette_colours_stay_apart_for_every_kind_of_colour_vision(vision):
    distance, first, second = min_distance(OKABE_ITO, vision)
    assert distance > (25 if vision == "normal" else 15), (first, second)


def test_the_distance_check_rejects_matplotlibs_default_palette():
    """The test above can fail: tab10, matplotlib's default, has pairs deuteranopes cannot tell apart."""
    import matplotlib.colors as mc
    import matplotlib.pyplot as plt

    tab10 = [mc.to_hex(c) for c in plt.get_cmap("tab10").colors]
    assert min_distance(tab10, "deuteranopia")[0] < 10 and min_distance(tab10, "protanopia")[0] < 10


def test_no_two_of_56_labels_are_drawn_alike_and_marker_ink_reads_on_its_fill():
    drawn = [(s.colour, s.marker) for s in styles([f"a{i}" for i in range(56)]).values()]
    assert len(set(drawn)) == 56
    assert len({style(i).marker for i in range(13)}) == 13  # 13 broadcast algorithms: 13 markers
    assert style(7).colour == "#000000" and style(7).ink == "white" and style(3).ink == "black"
    assert len(MARKERS) >= 13


# --- item 6: the selection map -----------------------------------------------------------------------------

def _choice(name: str) -> Choice:
    algorithm = find(Collective.BCAST, name)
    return Choice(algorithm, algorithm.resolve_params())


def test_map_legend_names_ids_shows_the_default_and_marks_measured_and_extrapolated_cells():
    from matplotlib.patches import Rectangle

    from commcost.report.selection_map import choice_label, map_figure

    binomial, linear = _choice("ompi.binomial"), _choice("ompi.basic_linear")
    chosen = [[binomial, linear], [linear, None]]
    default = [[linear, linear], [linear, linear]]
    regions = [["measured", "interpolated"], ["extrapolated", "extrapolated"]]
    fig = map_figure([2, 4], [1, 1024], chosen, "t", size_title=Collective.ALLGATHER.size_meaning, default=default,
                     regions=regions)
    assert choice_label(binomial) == "binomial [id 6]" and choice_label(None).startswith("(no rule")
    left, right = fig.axes
    assert right.get_title() == "the library's default" and "per rank" in left.get_xlabel()
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert {"binomial [id 6]", "basic_linear [id 1]", "measured by the calibration"} <= set(legend)
    for ax in (left, right):
        cells = [p for p in ax.patches if isinstance(p, Rectangle)]
        assert sum(bool(p.get_hatch()) for p in cells) == 2  # the two extrapolated points
        assert sum(not p.get_hatch() and p.get_linewidth() > 1 for p in cells) == 1  # the one measured point
        assert len(ax.collections) == len({c for row in (chosen if ax is left else default) for c in row})
    import matplotlib.pyplot as plt
    plt.close(fig)


def test_size_axis_says_what_a_size_counts():
    assert "whole buffer" in Collective.BCAST.size_meaning
    assert "per rank" in Collective.ALLGATHER.size_meaning and "per pair" in Collective.ALLTOALL.size_meaning


def test_partition_picture_tells_gpu_from_cpu_processes_and_names_the_nodes():
    from commcost.kernels.partition2d import Partition2D
    from commcost.report.partition_plot import GPU_HATCH, partition_figure

    part = Partition2D(4, 32, ("a", "a", "b"), np.array([0, 0, 2]), np.array([0, 2, 0]), np.array([2, 2, 2]),
                       np.array([2, 2, 4]))
    fig = partition_figure(part, kinds=["cpu", "gpu", "cpu"])
    ax = fig.axes[0]
    hatched = [p for p in ax.patches if p.get_hatch() == GPU_HATCH]
    assert len(hatched) == 1 and "1 GPU" in [t.get_text() for t in ax.texts]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["a", "b", "CPU process", "GPU process"]
    import matplotlib.pyplot as plt
    plt.close(fig)


def test_partition_picture_draws_no_two_of_twenty_nodes_alike():
    import matplotlib.pyplot as plt

    from commcost.kernels.partition2d import Partition2D
    from commcost.report.partition_plot import GPU_HATCH, partition_figure

    hosts = tuple(f"n{i}" for i in range(20))  # 20 nodes of one process each, in one row of 20 columns
    part = Partition2D(20, 32, hosts, np.arange(20), np.zeros(20, dtype=np.int64), np.ones(20, dtype=np.int64),
                       np.full(20, 20))
    kinds = ["gpu" if i in (3, 11) else "cpu" for i in range(20)]  # node 11 repeats node 3's colour
    fig = partition_figure(part, kinds=kinds)
    ax = fig.axes[0]
    looks = [(p.get_facecolor(), (p.get_hatch() or "").replace(GPU_HATCH, "")) for p in ax.patches]
    assert len(set(looks)) == 20, "two nodes are drawn alike"
    legend = ax.get_legend()
    assert len({(p.get_facecolor(), p.get_hatch()) for p in legend.get_patches()[:16]}) == 16
    assert all(GPU_HATCH in (ax.patches[i].get_hatch() or "") for i in (3, 11))
    plt.close(fig)


# --- the commands --------------------------------------------------------------------------------------------

def _select_args(tmp_path: Path) -> list[str]:
    return ["select", "bcast", "--params", str(EXAMPLES / "params" / "illustrative.toml"), "--platform",
            str(EXAMPLES / "cluster" / "platform.toml"), "--model", "hockney", "--procs", "2..64",
            "--sizes", "1..64KiB", "--html", str(tmp_path / "select.html")]


def test_select_html_is_self_contained_with_provenance_map_rules_and_penalty(tmp_path, capsys):
    assert main(_select_args(tmp_path)) == 0
    assert f"wrote {tmp_path / 'select.html'}" in capsys.readouterr().out
    text = (tmp_path / "select.html").read_text()
    assert external_references(text) == []
    assert "commcost select bcast --params" in text and "sha256 " in text  # the command and the inputs' digests
    assert text.count("data:image/png;base64,") == 1
    for heading in ("What was priced", "Selection", "Predicted penalty of the default", "Rules"):
        assert heading in text
    assert re.search(r"P 2(\.\.\d+)?:", text) and "Open MPI default" in text


@pytest.fixture(scope="module")
def tuned_from_sweeps(tmp_path_factory):
    """tune on the Peak sweeps (no MPI run): the same page as after a calibration, less the measured gains."""
    out = tmp_path_factory.mktemp("tune-html")
    assert main(["import", "coltune", str(PEAK), "-o", str(out / "m.csv"), "--host", "peak"]) == 0
    rows_up_to(out / "m.csv", out / "up-to-256KiB.csv", 256 << 10)
    assert main(["tune", "--from-measurements", str(out / "up-to-256KiB.csv"), "--platform", str(EXAMPLES / "peak" /
                 "platform.toml"), "--ppn", "42", "--select-procs", "32..128", "--sizes", "1KiB..64KiB",
                 "--collectives", "bcast", "--out", str(out / "run"), "--quiet", "--html",
                 str(out / "report.html")]) == 0
    return out / "report.html"


def test_tune_html_has_provenance_confidence_fit_quality_selection_and_deploy(tuned_from_sweeps):
    text = tuned_from_sweeps.read_text()
    assert external_references(text) == []
    for heading in ("The rules&#x27; provenance", "Confidence", "Fit quality", "bcast (ompi)", "Measured gains",
                    "Deploy", "mca-params.conf"):
        assert heading in text, heading
    assert "calibrated on peak" in text and "coll_tuned_dynamic_rules_filename" in text
    assert "extrapolated" in text and "median margin to runner-up" in text
    # issue 35 item 5: the cross-validation figures, as report.json holds them, and the way kept
    import json

    strategy = json.loads((tuned_from_sweeps.parent / "run" / "report.json").read_text())["selections"][
        "bcast.ompi"]["strategy"]
    assert "How to choose, by cross-validation over P" in text
    row = re.search(r"<tr><td>bcast\.ompi</td>(.*?)</tr>", text.split("How to choose")[1]).group(1)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
    assert cells[0] == ", ".join(map(str, strategy["folds"])) and cells[-1].split(" (")[0] == strategy["chosen"]
    unvouched = strategy["not_cross_validated_at"]  # P of the rules in a regime the folds did not hold out
    assert (f"not cross-validated at P = {', '.join(map(str, unvouched))}" in cells[-1]) == bool(unvouched)
    from commcost.selection.strategies import STRATEGIES

    assert STRATEGIES == ("default", "anchored", "constant", "model")  # the table's columns, safest first
    for cell, way in zip(cells[1:5], STRATEGIES):
        pen = strategy["cv_mean_penalty_pct"].get(way)
        assert cell == ("-" if pen is None else f"{round(pen, 1):g}") or float(cell) == round(pen, 1), (way, cell)


@needs_browser
def test_tune_html_loads_in_a_headless_browser_without_errors(tuned_from_sweeps, tmp_path):
    seen = load(tuned_from_sweeps)
    assert seen.errors == []
    assert seen.title.startswith("commcost tune") and "Confidence" in seen.text
    assert seen.images and all(complete and width > 100 and height > 100 for complete, width, height in seen.images)
    shot = tmp_path / "screenshot.png"
    shot.write_bytes(seen.screenshot)
    colours, inked = png_content(shot.read_bytes())
    assert shot.read_bytes().startswith(b"\x89PNG") and colours > 50 and inked > 0.05


@needs_browser
def test_the_browser_check_sees_a_broken_page(tmp_path):
    """The check above can fail: a page whose picture is missing logs an error and loads no image."""
    page = tmp_path / "broken.html"
    page.write_text('<!DOCTYPE html><html><head><title>x</title></head><body><img src="missing.png"></body></html>')
    seen = load(page)
    assert seen.errors and seen.images == [(True, 0, 0)]
    assert png_content(seen.screenshot)[1] < 0.01


def test_predict_pattern_and_kernel_write_a_page_and_collectives_are_sent_to_select(tmp_path, capsys):
    base = ["--platform", str(EXAMPLES / "bluewaters" / "platform.toml"), "--params",
            str(EXAMPLES / "params" / "bluewaters.toml"), "--model", "maxrate"]
    assert main(["predict", "--pattern", "spmv", "--matrix", str(EXAMPLES / "sparse" / "poisson3d_16.mtx"),
                 "--procs", "8", "--ppn", "4", *base, "--html", str(tmp_path / "pattern.html")]) == 0
    text = (tmp_path / "pattern.html").read_text()
    assert external_references(text) == [] and "Cost per level" in text and "poisson3d_16.mtx" in text
    capsys.readouterr()
    assert main(["predict", "--collective", "bcast", "--procs", "8", "--nbytes", "1KiB", *base, "--html",
                 str(tmp_path / "c.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--html" in err and not (tmp_path / "c.html").exists()

    part = tmp_path / "m10.txt"
    fermi = EXAMPLES / "fermi"
    assert main(["partition", "--layout", str(fermi / "table1.txt"), "--row", "M10", "--platform",
                 str(fermi / "platform.toml"), "--speeds", str(fermi / "speeds.txt"), "--n", "64", "-o",
                 str(part)]) == 0
    assert main(["predict", "--kernel", "wave2d", "--steps", "10", "--partition", str(part), "--platform",
                 str(fermi / "platform.toml"), "--params", str(EXAMPLES / "params" / "illustrative.toml"), "--model",
                 "hloggp", "--mapping", f"layout:{fermi / 'table1.txt'}:M10", "--html",
                 str(tmp_path / "kernel.html")]) == 0
    text = (tmp_path / "kernel.html").read_text()
    assert external_references(text) == [] and "Partition" in text and "hloggp-paper000" in text


def test_evaluate_selection_html_puts_the_model_beside_the_measured_best(tuned_from_sweeps, tmp_path, capsys):
    csv_path = tuned_from_sweeps.parent / "m.csv"
    assert main(["evaluate-selection", "--train", str(csv_path), "--from-collectives", "--train-max-procs", "64",
                 "--test", str(csv_path), "--test-min-procs", "128", "--platform",
                 str(EXAMPLES / "peak" / "platform.toml"), "--ppn", "42", "--collective", "bcast", "--format", "json",
                 "--html", str(tmp_path / "ev.html")]) == 0
    out = capsys.readouterr()
    assert out.out.lstrip().startswith("{") and "wrote" in out.err  # stdout stays JSON
    text = (tmp_path / "ev.html").read_text()
    assert external_references(text) == [] and "Penalty against the measured best" in text
    assert "Every point" in text and text.count("data:image/png;base64,") == 1

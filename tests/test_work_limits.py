"""Work is bounded up front (issue 16 item 1): what the fuzz suite found, each as a plain test."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from commcost.cli.main import main

EX = Path(__file__).resolve().parent.parent / "examples"
PRICE = ["--platform", str(EX / "cluster" / "platform.toml"), "--params", str(EX / "params" / "illustrative.toml"),
         "--model", "hockney"]


def test_a_pipeline_of_millions_of_segments_is_refused_before_its_arrays_are_built(capsys):
    """segsize=1 on 4 MiB over 64 ranks is 264 million transmissions: it took 24 GB and was killed; now it is one
    line at once."""
    started = time.monotonic()
    assert main(["predict", "--collective", "bcast", "--algorithm", "pipeline", "--procs", "64", "--nbytes", "4MiB",
                 "--param", "segsize=1", *PRICE]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "8,000,000 transmissions" in err and "4,194,304 segments" in err
    assert time.monotonic() - started < 5


def test_han_in_more_segments_than_it_records_is_refused_and_a_selection_prices_it_from_its_first_segments(capsys):
    assert main(["predict", "--collective", "bcast", "--algorithm", "han", "--procs", "8", "--ppn", "2",
                 "--nbytes", "4KiB", "--param", "segsize=2", *PRICE]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "2,048 segments" in err and "1,024 segments" in err
    # a selection prices it from its first segments (commcost.selection.long_pipeline: han's bcast is alike
    # segments repeated), where a whole build would exceed what han records
    from commcost.collectives import Collective, find
    from commcost.io.params_file import load_params
    from commcost.io.platform_file import load_platform
    from commcost.models import MODELS
    from commcost.platform import Mapping
    from commcost.selection.decision import Choice
    from commcost.selection.select import schedule_pricer

    platform, _ = load_platform(EX / "cluster" / "platform.toml")
    model = MODELS["hockney"](load_params(EX / "params" / "illustrative.toml").for_model("hockney"))
    price = schedule_pricer(model, platform, lambda n: Mapping.sequential(platform, n, 2))
    han = find(Collective.BCAST, "ompi.han")
    times = price(Choice(han, han.resolve_params({"segsize": 2, "ppn": 2})), 8, [1024, 4096])
    assert 0 < times[0] < times[1] < float("inf")


@pytest.mark.parametrize("budget", ["1e400", "nan", "0", "-5", "1e9"])
def test_a_budget_must_be_a_finite_number_of_seconds(budget, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["calibrate", "--dry-run", "--out", str(tmp_path), "--budget", budget])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--budget" in err and "a week" in err


def test_a_job_script_without_ranks_per_node_is_named(tmp_path, capsys):
    source = Path(__file__).resolve().parent / "data" / "peak-coltune" / "output" / "bcast"
    folder = tmp_path / "output" / "bcast"
    folder.mkdir(parents=True)
    shutil.copy(source / "6_8ranks_run0.out", folder)
    (folder / "bcast_coltune.sh").write_text("#!/bin/sh\nmpirun -np 8 osu_bcast\n")
    assert main(["import", "coltune", str(tmp_path), "-o", str(tmp_path / "m.csv")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bcast_coltune.sh" in err and "ppr:N:node" in err


def test_a_scotch_mapping_with_a_target_past_64_bits_is_one_line():
    """Found by the fuzz suite: numpy's OverflowError escaped the Scotch mapping reader."""
    from commcost.errors import InputError
    from commcost.io.scotch_files import read_mapping

    with pytest.raises(InputError, match="x.map:line 2: target 99999999999999999999 is out of range"):
        read_mapping("6\n0 99999999999999999999\n1 1\n2 1\n3 0\n4 2\n5 3\n", 6, source="x.map")


def test_waits_between_collectives_stay_few_and_are_bounded(monkeypatch):
    """A composite's second collective waits for its senders' operations in the first. The root of Open MPI's
    basic_linear allreduce takes its P - 1 receptions in order, so its bcast sends wait for the last one only:
    on 65,536 ranks 65,535 waits (its 65,535 sends each waited for 65,535 receptions: a 32 GiB array, a
    MemoryError in select). Where every reception is named (the data-flow checker's builds), waits past
    what the limit allows are refused in one line before they are built."""
    from commcost.collectives import Case, Collective, build, find
    from commcost.collectives.recorder import ScheduleTooLarge

    allreduce = find(Collective.ALLREDUCE, "ompi.basic_linear")
    schedule = build(allreduce, Case(Collective.ALLREDUCE, 65536, 1 << 20, 0)).schedule
    assert schedule.ntransmissions == 2 * 65535 and len(schedule.after_idx) == 65535
    allgather = find(Collective.ALLGATHER, "ompi.linear")
    build(allgather, Case(Collective.ALLGATHER, 64, 64, 0), data=True)  # (P - 1)^2 waits: within the limit
    monkeypatch.setenv("COMMCOST_MAX_TRANSMISSIONS", "200")
    with pytest.raises(ScheduleTooLarge) as refused:
        build(allgather, Case(Collective.ALLGATHER, 64, 64, 0), data=True)
    assert "waits between its collectives" in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize("collective, key", [("alltoall", "ompi.linear"), ("alltoall", "ompi.linear_sync"),
                                             ("allgather", "generic.direct-messaging"),
                                             ("bcast", "ompi.scatter_allgather_ring"),
                                             ("bcast", "mpich.scatter_ring_allgather"), ("allreduce", "ompi.ring")])
def test_every_rank_to_every_other_is_refused_before_its_arrays_are_built(collective, key):
    """These build P (P - 1) transmissions in numpy batches: on 65,536 ranks each array is 32 GiB, which they
    asked for before the recorder counted them (a MemoryError, or the machine's memory); now they reserve
    first and are refused at once."""
    from commcost.collectives import Case, Collective, build, find
    from commcost.collectives.recorder import ScheduleTooLarge

    algorithm = find(Collective(collective), key)
    with pytest.raises(ScheduleTooLarge) as refused:
        build(algorithm, Case(Collective(collective), 65536, 1 << 20, 0))
    assert "would exceed" in str(refused.value)  # the up-front refusal, not the count after the arrays


def test_a_fold_that_lays_out_every_transmission_first_is_refused_before_it_does():
    """Folded by one node's ranks, a segmented tree reduce records only a node's share of its transmissions,
    but lays out all of them first: on 1,024 ranks at 16 GiB in 8 KiB segments that is 2.1 G transmissions
    (over 80 GiB of index arrays), which the share (8.4 M, about the limit) let through until select was
    killed for memory. The layout is now bounded too, in one line; a ring, which lays out its
    representatives only, is not."""
    from commcost.collectives import Case, Collective, find
    from commcost.collectives.recorder import ScheduleTooLarge
    from commcost.collectives.registry import build_folded

    reduce = find(Collective.REDUCE, "ompi.in-order_binary")
    with pytest.raises(ScheduleTooLarge) as refused:
        build_folded(reduce, Case(Collective.REDUCE, 1024, 16 << 30, 0), 4, {"segsize": 8192})
    assert "before its fold keeps one node's share" in str(refused.value) and "\n" not in str(refused.value)
    ring = find(Collective.ALLREDUCE, "ompi.ring")
    assert build_folded(ring, Case(Collective.ALLREDUCE, 4096, 1 << 20, 0), 4) is not None  # 16.8 M laid out

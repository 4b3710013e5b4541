"""calibration/disturbed.py: single-transmission cells over 2.5x the concurrent cell of their channel and size,
on rows shaped as the VM's calibrations measured them."""

from __future__ import annotations

import pytest

from commcost.calibration.disturbed import SLACK, disturbed_cells, disturbed_warning
from commcost.errors import InputError
from commcost.io.measurements import Measurement


def _row(benchmark: str, nbytes: int, us: float, tau: int | None = None, run: int = 0, channel: str = "shm"):
    t = us * 1e-6
    return Measurement(benchmark, 2, nbytes, t, channel=channel, tau=tau, run=run, time_s_median=t)


def test_the_vms_slow_stretch_is_found_and_its_undisturbed_launch_is_not():
    # /tmp/fresh2 of this session's note: ping-pong and tau = 1 slowed, tau = 2 not
    slow = [_row("pingpong", 4 << 20, 1517), _row("ring_tau", 4 << 20, 1654, 1), _row("ring_tau", 4 << 20, 390, 2),
            _row("pingpong", 1 << 18, 135), _row("ring_tau", 1 << 18, 156, 1), _row("ring_tau", 1 << 18, 26, 2)]
    found = disturbed_cells(slow)
    assert [(d.benchmark, d.nbytes) for d in found] == [("pingpong", 1 << 18), ("pingpong", 4 << 20),
                                                        ("ring_tau", 1 << 18), ("ring_tau", 4 << 20)]
    assert found[1].time_s == pytest.approx(1517e-6) and found[1].concurrent_s == pytest.approx(390e-6)
    # an undisturbed launch: tau = 1 up to 1.7x tau = 2 (the rendezvous overlaps tau = 2's handshakes)
    calm = [_row("pingpong", 1 << 18, 50), _row("ring_tau", 1 << 18, 50, 1), _row("ring_tau", 1 << 18, 30, 2),
            _row("ring_tau", 1 << 18, 29, 3)]
    assert disturbed_cells(calm) == []
    # just over and just under the bound
    edge = [_row("ring_tau", 4096, 10.0 * SLACK * 1.01, 1), _row("ring_tau", 4096, 10.0, 2),
            _row("pingpong", 4096, 10.0 * SLACK * 0.99)]
    assert [d.benchmark for d in disturbed_cells(edge)] == ["ring_tau"]


def test_a_cell_is_the_median_of_its_launches_and_channels_are_apart():
    rows = [_row("pingpong", 65536, us, run=k) for k, us in enumerate((47, 12, 13))]
    rows += [_row("ring_tau", 65536, 10, 2), _row("pingpong", 65536, 47, channel="tcp")]
    assert disturbed_cells(rows) == []  # one slow launch of three; tcp has no concurrent cell to compare with
    rows.append(_row("ring_tau", 65536, 10, 2, channel="tcp"))
    assert [d.channel for d in disturbed_cells(rows)] == ["tcp"]


def test_the_warning_names_the_worst_cell_and_refuses_a_broken_table():
    cells = disturbed_cells([_row("pingpong", 1 << 20, 528), _row("ring_tau", 1 << 20, 86, 2),
                             _row("ring_tau", 1 << 20, 551, 1)])
    line = disturbed_warning([c.as_dict() for c in cells])
    assert line.startswith("2 single-transmission cell(s)") and "ring_tau tau=1 1048576 B: 551 us against 86 us" in line
    with pytest.raises(InputError, match="meta.disturbed"):
        disturbed_warning([{"channel": "shm"}])

"""Decision tables: compressing a grid of choices into rules, and reading them back."""

from __future__ import annotations

from commcost.collectives import Collective, find
from commcost.selection.decision import Choice, compress

BIN = Choice(find(Collective.BCAST, "binomial"), {"segsize": 0})
KNO = Choice(find(Collective.BCAST, "knomial"), {"segsize": 0, "radix": 4})
SEG = Choice(find(Collective.BCAST, "pipeline"), {"segsize": 8192})


def test_compress_merges_sizes_and_bands_and_reads_back():
    procs = [2, 4, 8, 16]
    sizes = [1, 1024, 65536, 1 << 20]
    grid = [[BIN, BIN, KNO, SEG], [BIN, BIN, KNO, SEG], [KNO, KNO, KNO, SEG], [KNO, KNO, KNO, SEG]]
    sel = compress(Collective.BCAST, "ompi", procs, sizes, grid, "test")
    assert sel.procs_bands() == [(2, 7), (8, 16)]
    band = [(r.nbytes_lo, r.nbytes_hi, r.choice.label) for r in sel.rules_for(2, 7)]
    assert band == [(1, 65535, "binomial"), (65536, (1 << 20) - 1, "knomial"), (1 << 20, 1 << 20, "pipeline(segsize=8192)")]
    for p_index, nprocs in enumerate(procs):
        for m_index, nbytes in enumerate(sizes):
            assert sel.choice(nprocs, nbytes) == grid[p_index][m_index]
    assert sel.choice(5, 4000) == BIN and sel.choice(12, 70000) == KNO
    assert sel.choice(17, 1) is None


def test_choice_identity_and_label():
    assert Choice(find(Collective.BCAST, "knomial"), {"radix": 4, "segsize": 0}) == KNO
    assert hash(Choice(find(Collective.BCAST, "knomial"), {"radix": 4, "segsize": 0})) == hash(KNO)
    assert Choice(find(Collective.BCAST, "knomial"), {"radix": 8, "segsize": 0}).label == "knomial(radix=8)"

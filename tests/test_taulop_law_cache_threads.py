"""The tau-Lop engine's caches of flattened laws and their fixed-cost tables are shared by a fit's threads
(commcost.calibration.fit_pricer): evicting from them while another thread inserts raised "dictionary changed
size during iteration" in the synthetic 2,048-rank tau-Lop fit (bench/bench_fit_collectives.py). The same
hammer on the old code: 3 of its 4 threads raised it."""

from __future__ import annotations

import sys
import threading

import numpy as np

from commcost.models.taulop import dependency_engine


def test_law_arrays_and_fixed_tables_survive_threads_that_evict_each_other(monkeypatch):
    monkeypatch.setattr(dependency_engine, "_FLATTENED", {})  # this test's entries left out of the real caches
    monkeypatch.setattr(dependency_engine, "_FIXED", {})
    monkeypatch.setattr(dependency_engine, "_flatten", lambda laws: (object(),))
    monkeypatch.setattr(dependency_engine, "fixed_table", lambda top, *laws: np.zeros((1, top + 1)))
    sys_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    errors: list[BaseException] = []

    def hammer():
        try:
            for _ in range(20_000):
                flat = dependency_engine.law_arrays([object(), None])
                dependency_engine.fixed_of_laws(flat, 3)
        except BaseException as exc:  # noqa: BLE001 - what a thread raised, checked below
            errors.append(exc)

    try:
        threads = [threading.Thread(target=hammer) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(sys_interval)
    assert not errors, errors[0]
    assert len(dependency_engine._FLATTENED) <= dependency_engine.FLATTENED_KEPT
    assert len(dependency_engine._FIXED) <= dependency_engine.FLATTENED_KEPT

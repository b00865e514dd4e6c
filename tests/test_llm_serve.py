"""The local model's threads make room for other work (`grove.infra.llm_serve`)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from grove.infra.llm_serve import OtherWork, threads_for


@pytest.mark.parametrize(("others", "most", "cores", "threads"), [
    (0.0, 2, 2, 2),   # a quiet machine: every thread the setting allows
    (0.4, 2, 2, 2),   # a little other work does not take a core
    (0.6, 2, 2, 1),   # half a core or more does
    (1.3, 2, 2, 1),
    (2.0, 2, 2, 1),   # never fewer than one
    (0.0, 2, 8, 2),   # never more than the setting
    (1.7, 6, 8, 6),
    (3.2, 6, 8, 5),
])
def test_the_model_takes_the_cores_other_work_leaves(others: float, most: int, cores: int, threads: int) -> None:
    assert threads_for(others, most, cores) == threads


class _Proc:
    """/proc/stat and /proc/self/stat as files the test writes, and a clock it moves."""

    def __init__(self, tmp_path: Path) -> None:
        self.stat, self.own, self.now = tmp_path / "stat", tmp_path / "self_stat", 100.0
        self.write(busy=1000, idle=5000, own=300)

    def write(self, *, busy: int, idle: int, own: int) -> None:
        # user nice system idle iowait irq softirq steal
        self.stat.write_text(f"cpu  {busy} 0 0 {idle} 7 0 0 0 0 0\ncpu0 …\n")
        # pid (comm with ) inside) state … utime (14th field) stime (15th)
        self.own.write_text(f"42 (python (x)) R 1 42 42 0 -1 4194560 0 0 0 0 {own} 0 0 0 20 0 1\n")


def test_other_work_is_the_machines_busy_time_less_this_process(tmp_path: Path) -> None:
    proc = _Proc(tmp_path)
    work = OtherWork(stat=proc.stat, own=proc.own, clock=lambda: proc.now)
    hz = work._ticks_per_second
    proc.now += 2.0
    proc.write(busy=1000 + 3 * hz, idle=5000 + hz, own=300 + 2 * hz)  # 1.5 cores busy, 1 of them ours
    assert work.refresh() == pytest.approx(0.5)
    assert work.cores() == pytest.approx(0.5)
    proc.now += 0.5
    proc.write(busy=1000 + 4 * hz, idle=5000 + hz, own=300 + 2 * hz)  # since then: 1 core, none ours
    assert work.refresh() == pytest.approx(2.0)
    assert work.refresh() == pytest.approx(2.0)  # no time passed: the reading stands


def test_other_work_reads_as_none_where_proc_is_missing(tmp_path: Path) -> None:
    work = OtherWork(stat=tmp_path / "absent", own=tmp_path / "absent")
    assert work.refresh() == 0.0 and work.watch().cores() == 0.0


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="reads Linux's /proc")
def test_a_busy_process_is_seen() -> None:
    work = OtherWork().watch()
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        seen = 0.0
        deadline = time.monotonic() + 60
        while seen < 0.5 and time.monotonic() < deadline:  # a busy machine may give it less at first
            time.sleep(0.1)
            seen = max(seen, work.cores())
        assert seen >= 0.5
    finally:
        spin.kill()
        spin.wait()

"""The local model's server process: llama-cpp-python's server, whose threads make room for other work.

llama.cpp's threads meet at a barrier after every layer. When other processes keep the cores busy, the
kernel deschedules one of them while the others wait at the barrier, and generation collapses (to
0.3 tokens/s beside two busy loops on 2 cores, where it makes 31 alone). One thread has no barrier and
keeps its speed. So before every evaluation the model is given as many threads as the cores the
*other* processes leave free (`OtherWork`), at least one and at most the setting. Figures:
bench/README.md, «The local model beside other work» (bench.llm_contention).

Run as ``python -m grove.infra.llm_serve`` with llama_cpp.server's own arguments.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import llama_cpp

BUSY_SHARE = 0.5
"""Other processes using this much of a core take one thread from the model."""
SAMPLE_SECONDS = 0.25
SLICE = 256
"""Prompt tokens evaluated between two choices of threads: as fast as llama-cpp-python's 512 here
(726 tokens in 4.37 s against 4.40 s), and a second or two apart."""


class OtherWork:
    """How many cores processes other than this one used in the last `SAMPLE_SECONDS`, from /proc (Linux).

    The machine's busy time minus this process's own: the model's own threads never count, so using
    fewer of them does not change the reading. A thread of its own refreshes it (`watch`): read only
    when the model evaluates, it would be stale exactly when it matters, since beside busy processes
    two threads take seconds per token.
    """

    def __init__(self, stat: Path = Path("/proc/stat"), own: Path = Path("/proc/self/stat"),
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._stat, self._own, self._clock = stat, own, clock
        self._ticks_per_second = os.sysconf("SC_CLK_TCK")
        self._last = self._sample()
        self._cores = 0.0

    def _sample(self) -> tuple[float, int, int] | None:
        try:
            fields = self._stat.read_text().split("\n", 1)[0].split()[1:]
            own = self._own.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return None
        ticks = [int(value) for value in fields[:8]]
        busy = sum(ticks) - ticks[3] - ticks[4]  # all but idle and iowait
        return self._clock(), busy, int(own[11]) + int(own[12])  # utime + stime of this process

    def refresh(self) -> float:
        """Read again: the cores the other processes used since the last reading."""
        sample = self._sample()
        if sample is None or self._last is None or sample[0] <= self._last[0]:
            return self._cores
        elapsed = sample[0] - self._last[0]
        others = (sample[1] - self._last[1]) - (sample[2] - self._last[2])
        self._cores = max(0.0, others / self._ticks_per_second / elapsed)
        self._last = sample
        return self._cores

    def cores(self) -> float:
        """The latest reading (a float written whole: no lock needed to read it)."""
        return self._cores

    def watch(self) -> OtherWork:
        """Refresh every `SAMPLE_SECONDS` in a daemon thread, for as long as the process lives."""
        def loop() -> None:
            while True:
                time.sleep(SAMPLE_SECONDS)
                self.refresh()

        if self._last is not None:
            threading.Thread(target=loop, name="other-work", daemon=True).start()
        return self


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def threads_for(others: float, most: int, cores: int) -> int:
    """The model's threads when other processes use `others` of `cores` cores: the cores they leave
    (one counts as taken once half of it is used), at least 1 and at most `most`."""
    free = cores - int(others + (1 - BUSY_SHARE))
    return max(1, min(most, free))


class YieldingLlama(llama_cpp.Llama):
    """`llama_cpp.Llama` that sets its threads before each evaluation (`threads_for`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.work = OtherWork().watch()  # the server's one model: one watching thread, started with it
        self.cores = usable_cores()
        self._most = (self.n_threads, self.n_threads_batch)
        self._now = self._most

    def eval(self, tokens: Sequence[int]) -> None:
        """Evaluate in slices of `SLICE` tokens, the threads chosen afresh before each: a long prompt
        that began on a quiet machine does not finish on two threads beside busy ones."""
        for start in range(0, max(len(tokens), 1), SLICE):  # an empty call still trims the cache, as before
            others = self.work.cores()
            threads = (threads_for(others, self._most[0], self.cores),
                       threads_for(others, self._most[1], self.cores))
            if threads != self._now:
                print(f"grove: threads {self._now[0]}/{self._now[1]} → {threads[0]}/{threads[1]}"
                      f" (other processes use {others:.1f} of {self.cores} cores)", file=sys.stderr, flush=True)
                self._ctx.set_n_threads(*threads)
                self._now = threads
            super().eval(tokens[start:start + SLICE])


def main() -> None:
    from llama_cpp.server.__main__ import main as serve

    llama_cpp.Llama = YieldingLlama  # type: ignore[misc]  # the server builds its model from this name
    serve()  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    main()

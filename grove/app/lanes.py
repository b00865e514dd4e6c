"""Per-user lanes: one item of a user at a time, in arrival order; different users in parallel.

Each user has a queue. A user with work holds at most one of the pool's threads at a time,
and after each item goes to the back of the line, so one busy user cannot starve the others.
Items are known by id: the same update arriving twice (a redelivery, or recovery racing the
receiver) is queued once.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")
log = logging.getLogger(__name__)


@dataclass
class _Lane(Generic[T]):
    items: deque[tuple[Hashable, T]] = field(default_factory=deque)
    scheduled: bool = False


class Lanes(Generic[T]):
    def __init__(self, work: Callable[[T], None], workers: int = 16, name: str = "lane") -> None:
        self._work = work
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._lanes: dict[Hashable, _Lane[T]] = {}
        self._known: set[Hashable] = set()
        self._active = 0
        self._closed = False
        self.running_now: dict[Hashable, int] = {}  # lane key -> items running (never above 1)
        self.max_running_per_key = 0

    def submit(self, key: Hashable, item_id: Hashable, item: T) -> bool:
        """Queue an item in its key's lane; False if that id is already queued or running."""
        with self._lock:
            if self._closed or item_id in self._known:
                return False
            self._known.add(item_id)
            lane = self._lanes.setdefault(key, _Lane())
            lane.items.append((item_id, item))
            self._active += 1
            if not lane.scheduled:
                lane.scheduled = True
                self._pool.submit(self._step, key)
        return True

    def _step(self, key: Hashable) -> None:
        with self._lock:
            lane = self._lanes[key]
            item_id, item = lane.items.popleft()
            self.running_now[key] = self.running_now.get(key, 0) + 1
            self.max_running_per_key = max(self.max_running_per_key, self.running_now[key])
        try:
            self._work(item)
        except Exception:  # noqa: BLE001 - the work reports its own failures; the lane goes on
            log.exception("lane %s: item %s failed", key, item_id)
        finally:
            with self._lock:
                self.running_now[key] -= 1
                self._known.discard(item_id)
                self._active -= 1
                if lane.items and not self._closed:
                    self._pool.submit(self._step, key)  # back of the line: fair to other users
                else:
                    lane.scheduled = False
                    if not lane.items:
                        del self._lanes[key]
                self._idle.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until every queued item is done; False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._active == 0, timeout)

    @property
    def backlog(self) -> int:
        with self._lock:
            return self._active

    def close(self, wait: bool = True) -> None:
        """Stop taking items; queued ones not yet started are dropped (they stay in the inbox)."""
        with self._lock:
            self._closed = True
            for lane in self._lanes.values():
                self._active -= len(lane.items)
                for item_id, _ in lane.items:
                    self._known.discard(item_id)
                lane.items.clear()
            self._idle.notify_all()
        self._pool.shutdown(wait=wait, cancel_futures=True)

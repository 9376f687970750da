"""The process pool of a large run, in task order, robust to its workers dying.

A worker that dies (a segfault in native code, the out-of-memory killer, a signal) loses the
file it was migrating; ``multiprocessing.Pool`` would wait for that result forever. Here the
pool breaks instead (``BrokenProcessPool``): the files that were in flight and not finished
are migrated again, each alone in a fresh one-worker pool, so the one that kills its worker
again is known and reported as failed (``crashed(task)``), and the run goes on with a new
pool.

Each worker receives ``state`` once, when it starts (the run's tables: inherited with the
``fork`` start method, pickled once per worker with ``spawn``), and hands it to every
``work(state, task)``: tasks carry only what differs between them.

Workers ignore Ctrl-C (the parent stops the pool) and end when the parent dies, even by
SIGKILL: on Linux the kernel sends them SIGTERM (``PR_SET_PDEATHSIG``); elsewhere a thread
checks every second that their parent is still there.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from itertools import islice
from multiprocessing.context import BaseContext
from typing import Any, Generic, TypeVar

S = TypeVar("S")
T = TypeVar("T")
R = TypeVar("R")
_PR_SET_PDEATHSIG = 1
# chunks: enough that the workers keep busy while the parent copies a long run of files that
# are not Python between two results (diffusers' docs/: 504 files, ~0.5 s), each chunk only
# paths (what the tasks share is in the workers' state)
_IN_FLIGHT_PER_WORKER = 16
_CHUNK = 4  # tasks (as Pool.imap's chunksize was)
_state: Any = None  # in a worker process: the state its pool started it with


class WorkerPool(Generic[S, T, R]):
    def __init__(
        self,
        context: BaseContext,
        workers: int,
        work: Callable[[S, T], R],
        crashed: Callable[[T], R],
        state: S,
    ) -> None:
        self.context = context
        self.workers = workers
        self.work = work
        self.crashed = crashed
        self.state = state
        self._executor: ProcessPoolExecutor | None = None

    def _new(self, workers: int) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            workers,
            mp_context=self.context,
            initializer=_init_worker,
            initargs=(os.getpid(), self.state),
        )

    def results(self, tasks: Iterable[T]) -> Iterator[R]:
        """``work(state, task)`` for each task, in order; ``crashed(task)`` for one that kills its
        worker. Tasks travel in chunks (fewer round trips), up to _IN_FLIGHT_PER_WORKER chunks per
        worker at a time."""
        todo = iter(tasks)
        flight: deque[tuple[list[T], Future[list[R]]]] = deque()
        while True:
            if self._executor is None:
                self._executor = self._new(self.workers)
            while len(flight) < self.workers * _IN_FLIGHT_PER_WORKER:
                chunk = list(islice(todo, _CHUNK))
                if not chunk:
                    break
                flight.append((chunk, self._submit(chunk)))
            if not flight:
                return
            chunk, future = flight.popleft()
            try:
                yield from future.result()
            except BrokenProcessPool:
                self.close()
                later = list(flight)
                flight.clear()
                yield from (self._alone(t) for t in chunk)
                for lost, done in later:  # (a chunk a live worker finished is kept)
                    finished = _finished(done)
                    if finished is None:
                        yield from (self._alone(t) for t in lost)
                    else:
                        yield from finished

    def _submit(self, chunk: list[T]) -> Future[list[R]]:
        """The chunk's future; one that raises BrokenProcessPool when a worker died since the
        last submit (the executor refuses new work then): results() redoes it with the rest."""
        assert self._executor is not None
        try:
            return self._executor.submit(_each, self.work, chunk)
        except BrokenProcessPool as exc:
            broken: Future[list[R]] = Future()
            broken.set_exception(exc)
            return broken

    def _alone(self, task: T) -> R:
        """One task in a pool of its own: its result, or ``crashed(task)`` if it kills it."""
        executor = self._new(1)
        try:
            return executor.submit(_each, self.work, [task]).result()[0]
        except BrokenProcessPool:
            return self.crashed(task)
        finally:
            executor.shutdown(wait=True)

    def close(self) -> None:
        """Stops the workers (those still migrating are terminated) and waits for them: none
        is still writing into a staging folder that an interrupted run removes."""
        executor, self._executor = self._executor, None
        if executor is None:
            return
        processes = list(getattr(executor, "_processes", {}).values())
        executor.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            if process.is_alive():
                process.terminate()
        for process in processes:
            process.join()
        executor.shutdown(wait=True)


def _finished(future: Future[list[R]]) -> list[R] | None:
    """The results of a chunk a worker finished before the pool broke; None for one it did
    not (its tasks are redone)."""
    if future.done() and not future.cancelled() and future.exception() is None:
        return future.result()
    return None


def _each(work: Callable[[S, T], R], chunk: list[T]) -> list[R]:
    return [work(_state, task) for task in chunk]


def _init_worker(parent: int, state: object) -> None:
    """Workers keep their state, leave Ctrl-C to the parent and die silently when stopped, or
    when the parent dies."""
    global _state
    _state = state
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if not _die_with_parent():
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    if os.getppid() != parent:  # it died before the above took effect
        os._exit(1)


def _die_with_parent() -> bool:
    """Linux: SIGTERM when the parent dies (prctl PR_SET_PDEATHSIG)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)


def pool_context() -> BaseContext:
    """The start method of the run's pools: ``fork`` where there is one (the workers inherit
    the tables), else ``spawn``."""
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")

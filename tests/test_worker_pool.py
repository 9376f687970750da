"""The run's process pool (run/worker_pool.py): a worker dying costs the files it had not
finished, not those a live worker finished meanwhile."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

from ms_fmk_transplt.run.worker_pool import WorkerPool


def _counted(folder: str, task: int) -> int:
    """Each run of a task leaves a line in its file; task 0 kills its worker after a second
    (the other worker finishes every other chunk meanwhile)."""
    with open(Path(folder) / str(task), "a", encoding="utf-8") as handle:
        handle.write(f"{os.getpid()}\n")
    if task == 0:
        time.sleep(1.0)
        os._exit(1)
    return 2 * task


def _crashed(task: int) -> int:
    return -1


def test_a_broken_pool_keeps_the_chunks_a_live_worker_finished(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    pool = WorkerPool(context, 2, _counted, _crashed, str(tmp_path))
    try:
        assert list(pool.results(range(20))) == [-1, *(2 * i for i in range(1, 20))]
    finally:
        pool.close()
    runs = {int(p.name): len(p.read_text().split()) for p in tmp_path.iterdir()}
    assert runs[0] == 2  # (in the pool, then alone: it kills its worker again)
    assert all(runs[i] == 1 for i in range(1, 20)), runs  # (the rest of its chunk: alone)

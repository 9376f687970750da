"""The records of a run, shared by the pipeline and every report: what the user asked for
(``RunOptions``), what happened to each file (``FileRecord``) and to the whole run
(``RunResult``, with the target version's tables the run loaded once and hands down). Low in
the house: it imports no pipeline, engine pass or report."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol

from ms_fmk_transplt.engine.library_facts import LibraryFacts
from ms_fmk_transplt.engine.options import EngineOptions
from ms_fmk_transplt.events import ChangeEvent, FileStatus, Notice, Severity
from ms_fmk_transplt.scan.discover import Project
from ms_fmk_transplt.tables import Tables


@dataclass
class RunOptions:
    input: str
    output: str
    overwrite: bool = False
    analyse: bool = False  # reports only: no code is written
    rule_file: str | None = None  # -r/--rule
    specify_device: bool = False  # -s/--specify-device
    similar: bool = False  # -sim/--similar
    target_version: str = ""  # -v/--target-version, resolved ("": the newest known)
    select: tuple[str, ...] = ()  # --select: only these rule ids / id prefixes
    ignore: tuple[str, ...] = ()  # --ignore: not these
    todo_comments: bool = True  # off: --no-todo-comments
    npu_options: tuple[str, ...] = ()  # --npu-option NAME=VALUE (TensorFlow adapter options)
    deps: tuple[str, ...] = ()  # --deps DIR|auto: installed libraries to analyse
    assessed: str = ""  # --assessed PATH: kit assess's ops.csv (or its folder)
    library: bool = False  # --library (with --analyse): also the input's APIs that reach CUDA
    max_file_mib: float | None = None  # --max-file-size (None: the engine's defaults)
    file_timeout: float | None = None  # --file-timeout, seconds (None: the engine's default)
    jobs: int = 0  # worker processes (0: one per core)
    cache_dir: str | None = None  # None: the default location (see cache.py)
    use_cache: bool = True
    main_script: str | None = None  # distributed -m MAIN, kit -m MAIN
    distributed_target: str = "model"  # distributed -t MODEL ("a,b": several models)
    rank_guards: bool = True  # off: distributed --no-rank-guards
    shard: tuple[int, int] | None = None  # --shard I/N: migrate part I of N
    merge_shards: int = 0  # --merge-shards N: assemble the N parts
    kit: str = ""  # kit aoe|profile|precision|assess (with main_script)
    # the original with the kit's calls, not migrated: the precision kit's GPU side, kit assess
    kit_gpu_side: bool = False
    kit_steps: int | None = None  # kit assess --steps N (None: the launcher's default, 5)
    kit_loop: str | None = None  # kit --loop FILE: the file of the training loop, when not MAIN
    output_name: str = ""  # the output folder's name under output ("": <input name>_msft)
    config_file: str = ""  # the pyproject.toml whose [tool.ms_fmk_transplt] was read ("": none)


@dataclass
class FileRecord:
    path: str  # relative to the project root, with forward slashes
    status: FileStatus
    python: bool
    analysed: bool
    time: datetime
    events: list[ChangeEvent] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    cached: bool = False
    timings: dict[str, float] = field(default_factory=dict)  # seconds per engine phase
    libcst_stages: str = ""  # the LibCST stages of the options run on it (FileResult's)
    framework: str = ""  # FileResult's: "tensorflow" for a TensorFlow file


@dataclass(frozen=True)
class RunResult:
    """What a run did. Its fields are set when it is made (or in a copy, ``dataclasses.
    replace``); what the run gathers while it builds its output (the files' records, the notes,
    the report paths, the timings, the files it plans to process) is appended to its lists and
    dicts as it goes, so that a run that stops can still say how far it got."""

    options: RunOptions
    project: Project
    output_dir: Path
    started: datetime
    tables: Tables  # the target version's (-v), loaded once by the run; what the reports read
    finished: datetime | None = None
    files: list[FileRecord] = field(default_factory=list)
    report_paths: dict[str, Path] = field(default_factory=dict)
    engine: EngineOptions = field(default_factory=EngineOptions)
    main_rel: str | None = None  # distributed mode or a kit: the -m file, relative to the root
    main_result: tuple[bytes, FileRecord] | None = None
    kit_entry: str | None = (
        None  # a kit: the script its launcher runs (main_rel, or -m with --loop)
    )
    notes: list[tuple[Severity, str]] = field(default_factory=list)  # run-level log lines
    planned: list[str] = field(default_factory=list)  # the files it processes, once discovered
    fingerprint: str = ""  # what decides the output besides the files (see cache.py)
    order: dict[str, int] = field(default_factory=dict)  # path -> place in the whole input
    timings: dict[str, float] = field(default_factory=dict)  # seconds of the parent's phases
    # --library: the input's packages, each with every API that reaches CUDA-specific code
    library: tuple[LibraryFacts, ...] = ()

    @property
    def total_files(self) -> int:
        """The files the run processes (the progress denominator): those discovered, or, for
        --merge-shards, those of the parts."""
        return len(self.planned) if self.planned else len(self.files)

    @property
    def events(self) -> list[ChangeEvent]:
        return [e for f in self.files for e in f.events]

    @property
    def notices(self) -> list[Notice]:
        return [n for f in self.files for n in f.notices]

    def count(self, status: FileStatus, python: bool | None = None) -> int:
        return sum(
            1 for f in self.files if f.status == status and (python is None or f.python == python)
        )


class ProgressSink(Protocol):
    """What a run reports its progress to (report/progress.py on the terminal)."""

    def start(self, total: int) -> None: ...

    def advance(self, record: FileRecord) -> None: ...

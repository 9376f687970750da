"""What the user asked the engine for, beyond the built-in table (-r, -s, -sim)."""

from __future__ import annotations

from dataclasses import dataclass

from ms_fmk_transplt.catalogue.rule_catalog import rule_matches
from ms_fmk_transplt.engine.project_facts import ProjectFacts
from ms_fmk_transplt.tables.user_rule_file import UserRules


@dataclass(frozen=True, eq=False)
class EngineOptions:
    user_rules: UserRules | None = None  # -r/--rule
    specify_device: bool = False  # -s/--specify-device
    similar: bool = False  # -sim/--similar
    distributed_target: str | None = None  # distributed -t MODEL (a,b: several), -m file only
    rank_guards: bool = True  # distributed: saves and per-step prints on rank 0 only
    kit: str = ""  # kit aoe|profile|precision: the kit's calls, -m file only
    kit_only: bool = False  # the precision kit's GPU side: the kit's calls and nothing else
    insert_torch_npu: bool = True  # False for notebook cells: the notebook adds it once
    # False for notebook cells: notebook.py folds a cell's rows (fold_file_rows) once their
    # lines are final (after the notebook's `import torch_npu` moved them)
    fold_rows: bool = True
    # --select / --ignore: rule ids or id prefixes (device_strings, unsupported.environment);
    # a change or row of a rule not selected, or ignored, is dropped as by `# msft: ignore[...]`
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    todo_comments: bool = True  # `# msft: TODO[...]` on lines a structural option could not finish
    # larger files are copied unchanged (--max-file-size sets both): the span pass needs about
    # 40 times a file's size in memory, a LibCST stage (-r, -sim, distributed) about a thousand
    # times
    max_file_bytes: int = 32 * 2**20
    max_cst_bytes: int = 5 * 2**20
    # a file still being migrated after this many seconds is copied unchanged (--file-timeout;
    # 0: no bound)
    file_seconds: float = 60.0
    # what the other files of the input define (CUDA-only code), read before migrating
    project: ProjectFacts | None = None
    # --analyse: rows name the input's lines (the lines a folded row lists are the same ones)
    input_lines: bool = False
    # --npu-option NAME=VALUE: Ascend TF adapter options, validated, set in the configs the
    # TensorFlow migration creates (NPURunConfig, npu_device.global_options())
    npu_options: tuple[tuple[str, object], ...] = ()
    # a cell of a TensorFlow notebook ("tf1" / "tf2": the notebook's style): migrated as
    # TensorFlow code whatever it imports itself (notebook.py adds the adapter's lines once)
    tf_notebook_style: str = ""
    tf_notebook_imports: tuple[tuple[str, str], ...] = ()  # the notebook's imported names
    # the TensorFlow the notebook runs on as the program model decided it ("tf1" / "tf2"; ""
    # without a model: its style's): which support list its cells are read against
    tf_notebook_version: str = ""


DEFAULT_OPTIONS = EngineOptions()


def kept_rule(rule: str, options: EngineOptions) -> bool:
    """Whether --select / --ignore keep this rule's changes and rows."""
    chosen = not options.select or rule_matches(rule, options.select)
    return chosen and not rule_matches(rule, options.ignore)

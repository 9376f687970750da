"""The LibCST pass: parses one file with LibCST and applies every concern in a single traversal.

It runs the structural rewrites the span pass does not model (-r user rules, -sim,
distributed -m; with -s alongside them) and any file the span pass declines. Names are resolved
by LibCST's QualifiedNameProvider; engine/scopes.py gives the span pass the same answers.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper

from ms_fmk_transplt.engine.amp import Amp
from ms_fmk_transplt.engine.base import Concern
from ms_fmk_transplt.engine.capability import CapabilityProbes
from ms_fmk_transplt.engine.context import MigrationContext
from ms_fmk_transplt.engine.cst_names import CstNames
from ms_fmk_transplt.engine.cuda_only import CudaOnlyGuards
from ms_fmk_transplt.engine.device_api import DeviceApi
from ms_fmk_transplt.engine.device_strings import DeviceStrings
from ms_fmk_transplt.engine.dispatch_key import DispatchKeys
from ms_fmk_transplt.engine.distributed import Distributed
from ms_fmk_transplt.engine.distributed_mode import DistributedMode
from ms_fmk_transplt.engine.environment import Environment
from ms_fmk_transplt.engine.expected_errors import ExpectedErrors
from ms_fmk_transplt.engine.imports import Imports
from ms_fmk_transplt.engine.options import EngineOptions
from ms_fmk_transplt.engine.parse import parse
from ms_fmk_transplt.engine.profiler import Profiler
from ms_fmk_transplt.engine.rank_zero_guards import RankZeroGuards
from ms_fmk_transplt.engine.scope_model import UnsupportedScope
from ms_fmk_transplt.engine.similar import Similar
from ms_fmk_transplt.engine.skip_guards import SkipGuards
from ms_fmk_transplt.engine.spans.span_pass import PassOutput
from ms_fmk_transplt.engine.specify_device import SpecifyDevice
from ms_fmk_transplt.engine.tensor_methods import TensorMethods
from ms_fmk_transplt.engine.transformer import MigrationTransformer
from ms_fmk_transplt.engine.unsupported import Unsupported
from ms_fmk_transplt.engine.user_rules import UserRulesConcern
from ms_fmk_transplt.events import FileResult
from ms_fmk_transplt.tables import Tables

# Order matters only where two concerns touch the same node: claims (amp, similar, specify
# device) before rewrites, unsupported after the rewrites (it reports what they left), and
# imports last, since it inserts ``import torch_npu`` once everything else has run.
CONCERNS = (
    Amp,
    CapabilityProbes,
    CudaOnlyGuards,
    DispatchKeys,
    SkipGuards,
    DeviceApi,
    TensorMethods,
    DeviceStrings,
    ExpectedErrors,
    Distributed,
    Profiler,
    Environment,
    Unsupported,
    Imports,
)


def concerns_for(options: EngineOptions) -> tuple[type[Concern], ...]:
    concerns: list[type[Concern]] = list(CONCERNS)
    if options.specify_device:
        concerns.insert(concerns.index(TensorMethods), SpecifyDevice)
    if options.similar:
        concerns.insert(0, Similar)
    if options.distributed_target is not None:
        concerns.insert(concerns.index(Imports), DistributedMode)
        if options.rank_guards:  # after DistributedMode: it guards what that one left
            concerns.insert(concerns.index(Imports), RankZeroGuards)
    return tuple(concerns)


def _run(
    module: cst.Module,
    code: bytes,
    ctx: MigrationContext,
    concerns: tuple[type[Concern], ...],
    libcst_names: bool,
) -> cst.Module:
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    ctx.bind(wrapper)
    try:
        if not libcst_names:
            ctx.use_names(CstNames(code))
    except (SyntaxError, ValueError, RecursionError, UnsupportedScope):
        pass  # syntax this Python cannot parse (LibCST can): LibCST resolves the names
    return wrapper.module.visit(MigrationTransformer(ctx, concerns))


def cst_pass(
    source: bytes,
    path: str,
    tables: Tables,
    options: EngineOptions,
    libcst_names: bool = False,
) -> PassOutput | FileResult:
    """Migrates one file with LibCST (a FileResult when it cannot be parsed). Names are
    resolved by engine/scopes.py; ``libcst_names`` uses LibCST's providers instead (the
    reference the tests compare with)."""
    module = parse(source, path, tables)
    if isinstance(module, FileResult):
        return module
    first, first_notices = [], []
    if options.user_rules is not None:  # user rules first: the built-in rules see their result
        user_ctx = MigrationContext(path, module, tables, options, source)
        module = _run(module, source, user_ctx, (UserRulesConcern,), libcst_names)
        first, first_notices = user_ctx.events, user_ctx.notices
    code = module.bytes if first else source
    ctx = MigrationContext(path, module, tables, options, code)
    new_module = _run(module, code, ctx, concerns_for(options), libcst_names)
    events = first + ctx.events
    output = new_module.bytes if events else source
    return PassOutput(
        output, events, first_notices + ctx.notices, ctx.line_inserts, ctx.insert_order
    )

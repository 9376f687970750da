"""``--npu-option`` values that reached no config: one warning each in the run's notes (the
terminal summary and the log), naming the option and why; the run still exits 0, as it does
for a TensorFlow project whose configs take some of the options and not others. An option
reaches a config when a change of the tf family says it set it (``applied_npu_options``)."""

from __future__ import annotations

from ms_fmk_transplt.engine.rules import family_exports
from ms_fmk_transplt.events import Severity
from ms_fmk_transplt.records import RunResult

_PLACES = {
    "NPURunConfig": "NPURunConfig (Estimators)",
    "npu_device": "npu_device.global_options() (the entry of a TF 2.x program)",
    "session": "the NpuOptimizer of a session config assigned to a name (TF 1.x sessions)",
}


def npu_option_notes(result: RunResult) -> list[tuple[Severity, str]]:
    """A warning for each --npu-option of the run that no change set."""
    names = [name for name, _ in result.engine.npu_options] if result.engine else []
    if not names:
        return []
    # (the tf family's names: loaded only for a run given --npu-option)
    applied = family_exports.applied_npu_options(result.events)
    session_loop = family_exports.SESSION_LOOP
    tensorflow = any(f.framework == "tensorflow" for f in result.files)
    options = result.tables.tf_adapter.options
    notes = []
    for name in names:
        if name in applied:
            continue
        if not tensorflow:
            why = "the input has no TensorFlow file"
        else:
            places = [p for p in _PLACES if p in options[name].places]
            if name in session_loop and "session" in places:
                places.remove("session")  # (its loop needs util.set_iteration_per_loop)
            where = "; ".join(_PLACES[p] for p in places)
            why = f"it goes to {where}, and the migration created or changed none"
            if name in session_loop:
                why += (
                    " (a session runs it only with npu_bridge's util.set_iteration_per_loop"
                    "(sess, train_op, N) in its training loop: add that call by hand)"
                )
        notes.append((Severity.WARNING, f"--npu-option {name} reached no config: {why}"))
    return notes

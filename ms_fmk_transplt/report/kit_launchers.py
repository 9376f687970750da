"""The launchers a kit writes at the root of its tree (kit aoe|profile|precision|assess|overflow):
scripts that set msft_kit's environment, run the -m script and check that it left what comes
next. Every path the user may change is an environment variable with a default inside the tree;
every name from the input goes through report/shell_quoting.py (quoted in an assignment, shown in
a comment), and PROFILING_OPTIONS' JSON is escaped by the launcher (json_string)."""

from __future__ import annotations

from ms_fmk_transplt.report.shell_quoting import filled, name_values

_HEAD = r"""#!/usr/bin/env bash
# __TITLE__ (written by ms_fmk_transplt kit __KIND__; KIT_README.md says what was inserted).
#
#   ./__NAME__ [arguments of the script]
#
# The script runs in its own folder (relative paths in its arguments start there), on one card.
# Environment: PYTHON (python3; a command such as "torchrun --nproc_per_node=1" for a script that
# needs a process group)__ENV__.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
main="$here/__MAIN_QUOTED__"
read -r -a python <<< "${PYTHON:-python3}"

# absolute PATH: PATH from the folder the launcher was started in (the script runs in its own)
absolute() {
  case "$1" in
    /*) echo "$1" ;;
    *) echo "$PWD/$1" ;;
  esac
}

# listed LABEL PATH...: "LABEL: PATH" for each PATH that exists; fails when none does
listed() {
  local label="$1" status=1 path
  shift
  for path in "$@"; do
    if [ -e "$path" ]; then
      echo "$label: $path"
      status=0
    fi
  done
  return "$status"
}
"""
_AOE_DISK = r"""for folder in "$HOME" "$@"; do
  free_kib="$(df -Pk "$folder" | awk 'NR == 2 {print $4}')"
  if [ "${free_kib:-0}" -lt $((20 * 1024 * 1024)) ]; then
    echo "warning: less than 20 GB free for $folder (AOE asks for 20 GB)" >&2
  fi
done
"""
_ASCEND_ENV = r"""set_env="${ASCEND_SET_ENV:-/usr/local/Ascend/ascend-toolkit/set_env.sh}"
if [ -f "$set_env" ]; then
  set +u  # CANN's script extends variables that may be unset
  # shellcheck source=/dev/null
  . "$set_env"
  set -u
fi
"""

# one card: the first of __CARDS__ (0 when unset; set it to choose the card)
_ONE_CARD = r"""# one card, as the header says: the first of __CARDS__ (0 when unset)
devices="${__CARDS__:-0}"
export __CARDS__="${devices%%,*}"
"""

AOE = (
    _HEAD
    + r"""
# the porting guide's AOE chapter: one step on one card, profiling off, then operator tuning
MSFT_AOE_DUMP="$(absolute "${MSFT_AOE_DUMP:-$here/aoe_dump}")"
export MSFT_AOE_DUMP
TUNE_BANK_PATH="$(absolute "${TUNE_BANK_PATH:-$here/aoe_bank}")"
export TUNE_BANK_PATH
"""
    + _ASCEND_ENV
    + _ONE_CARD  # (processes on several cards would overwrite each other's dump)
    + r"""if [ "$MSFT_AOE_DUMP" = "$here/aoe_dump" ] && [ ! -L "$MSFT_AOE_DUMP" ]; then
  rm -rf "$MSFT_AOE_DUMP"  # the previous run's dump (the tree's own folder, not a link)
fi
mkdir -p "$MSFT_AOE_DUMP" "$TUNE_BANK_PATH"
started="$(mktemp)"  # what this run dumps is newer
trap 'rm -f "$started"' EXIT
if ! command -v aoe > /dev/null; then
  echo "error: aoe is not on the PATH: source the CANN set_env.sh (or set ASCEND_SET_ENV)" >&2
  exit 127
fi
"""
    + _AOE_DISK.replace('"$@"', '"$MSFT_AOE_DUMP" "$TUNE_BANK_PATH"')
    + r"""
cd "$(dirname "$main")"
"${python[@]}" "$main" "$@"
if [ -z "$(find "$MSFT_AOE_DUMP" -newer "$started" -type f -print -quit)" ]; then
  echo "error: this run dumped nothing into $MSFT_AOE_DUMP (did it reach the training loop?);" \
    "nothing tuned" >&2
  exit 1
fi
echo "operators of one step dumped into $MSFT_AOE_DUMP"
aoe --job_type=2 --model_path="$MSFT_AOE_DUMP"
echo "tuned operators: $TUNE_BANK_PATH; now run the migrated script without the kit's calls,"
echo "with TUNE_BANK_PATH=$TUNE_BANK_PATH exported, and compare the step time"
"""
)

PROFILE = (
    _HEAD
    + r"""
MSFT_PROF_DIR="$(absolute "${MSFT_PROF_DIR:-$here/profile}")"
export MSFT_PROF_DIR
export MSFT_PROF_SKIP_FIRST="${MSFT_PROF_SKIP_FIRST:-10}"
export MSFT_PROF_WAIT="${MSFT_PROF_WAIT:-1}"
export MSFT_PROF_WARMUP="${MSFT_PROF_WARMUP:-1}"
export MSFT_PROF_ACTIVE="${MSFT_PROF_ACTIVE:-2}"
"""
    + _ASCEND_ENV
    + _ONE_CARD
    + r"""mkdir -p "$MSFT_PROF_DIR"
started="$(mktemp)"  # the traces of this run are newer
trap 'rm -f "$started"' EXIT

cd "$(dirname "$main")"
"${python[@]}" "$main" "$@"
traces=()  # NUL-separated: a folder's name may hold a newline
while IFS= read -r -d '' trace; do
  traces+=("$trace")
done < <(find "$MSFT_PROF_DIR" -maxdepth 1 -name '*_ascend_pt' -newer "$started" -print0)
if ! listed trace ${traces[@]+"${traces[@]}"}; then
  echo "error: no *_ascend_pt trace in $MSFT_PROF_DIR (did the loop run enough steps?)" >&2
  exit 1
fi
echo "ASCEND_PROFILER_OUTPUT/ in each: trace_view.json, kernel_details.csv, op_statistic.csv"
"""
)

PRECISION = (
    _HEAD
    + r"""
MSFT_PRECISION_DUMP="$(absolute "${MSFT_PRECISION_DUMP:-$here/precision_dump}")"
export MSFT_PRECISION_DUMP
config="${MSFT_PRECISION_CONFIG:-$(dirname "$main")/msprobe_config.json}"
MSFT_PRECISION_CONFIG="$(absolute "$config")"
export MSFT_PRECISION_CONFIG
if [ -d "$MSFT_PRECISION_DUMP" ] && [ -n "$(ls -A "$MSFT_PRECISION_DUMP")" ]; then
  echo "error: $MSFT_PRECISION_DUMP is not empty: move it away (compare wants one dump)" >&2
  exit 1
fi
"""
    + _ASCEND_ENV
    + _ONE_CARD
    + r"""
cd "$(dirname "$main")"
"${python[@]}" "$main" "$@"
if ! ls "$MSFT_PRECISION_DUMP"/step0/*/dump.json > /dev/null 2>&1; then
  echo "error: no step0/*/dump.json in $MSFT_PRECISION_DUMP" >&2
  exit 1
fi
echo "__SIDE__ side dumped into $MSFT_PRECISION_DUMP"
"""
)

ASSESS = (
    _HEAD
    + r"""
# the porting guide's assessment: the original script (GPU or CPU, as it runs today) records the
# torch APIs its first MSFT_ASSESS_STEPS training steps call, then stops; a previous run's
# ops.csv, cuda_calls.csv and report.html are replaced
export MSFT_ASSESS_STEPS="${MSFT_ASSESS_STEPS:-__STEPS__}"
MSFT_ASSESS_DIR="$(absolute "${MSFT_ASSESS_DIR:-$here/assess}")"
export MSFT_ASSESS_DIR
mkdir -p "$MSFT_ASSESS_DIR"
rm -f "$MSFT_ASSESS_DIR/ops.csv" "$MSFT_ASSESS_DIR/cuda_calls.csv" "$MSFT_ASSESS_DIR/report.html"

cd "$(dirname "$main")"
"${python[@]}" "$main" "$@"
if [ ! -f "$MSFT_ASSESS_DIR/ops.csv" ]; then
  echo "error: no ops.csv in $MSFT_ASSESS_DIR (did the training loop run?)" >&2
  exit 1
fi
listed "assessment" "$MSFT_ASSESS_DIR/ops.csv" "$MSFT_ASSESS_DIR/cuda_calls.csv" \
  "$MSFT_ASSESS_DIR/report.html"
"""
)

OVERFLOW = (
    _HEAD
    + r"""
# the porting guide's operator overflow detection: every operator of the first
# MSFT_OVERFLOW_STEPS steps checked; the first whose output holds inf/nan out of finite inputs is
# written into overflow.json with its call site and step (exit 1), none found: exit 0
export MSFT_OVERFLOW_STEPS="${MSFT_OVERFLOW_STEPS:-10}"
MSFT_OVERFLOW_DIR="$(absolute "${MSFT_OVERFLOW_DIR:-$here/overflow}")"
export MSFT_OVERFLOW_DIR
MSFT_OVERFLOW_ROOT="$(absolute "${MSFT_OVERFLOW_ROOT:-$here}")"
export MSFT_OVERFLOW_ROOT
"""
    + _ASCEND_ENV
    + _ONE_CARD
    + r"""mkdir -p "$MSFT_OVERFLOW_DIR"
rm -f "$MSFT_OVERFLOW_DIR/overflow.json"  # the previous run's

cd "$(dirname "$main")"
"${python[@]}" "$main" "$@"
result="$MSFT_OVERFLOW_DIR/overflow.json"
if [ ! -f "$result" ]; then
  echo "error: no overflow.json in $MSFT_OVERFLOW_DIR (did the run reach the training loop?)" >&2
  exit 2
fi
if grep -q '"found": true' "$result"; then
  echo "overflow found: $result"
  exit 1
fi
echo "no overflow in the steps checked: $result"
"""
)

AOE_TF = (
    _HEAD
    + r"""
# the AOE guide for the TF adapter: tuning runs while the script trains (a few steps: one step
# that runs the whole graph is enough), on one card, profiling off; AOE_MODE 2 tunes operators
# (1, subgraphs, does not exist on Atlas A2/A3: refused there)
export AOE_MODE="${AOE_MODE:-2}"
TUNE_BANK_PATH="$(absolute "${TUNE_BANK_PATH:-$here/aoe_bank}")"
export TUNE_BANK_PATH
ASCEND_WORK_PATH="$(absolute "${ASCEND_WORK_PATH:-$here/aoe_work}")"
export ASCEND_WORK_PATH
export ASCEND_DEVICE_ID="${ASCEND_DEVICE_ID:-0}"
"""
    + _ASCEND_ENV
    + r"""case "$AOE_MODE" in
  1)
    if npu-smi info 2> /dev/null | grep -Eq '910B|910_93'; then
      echo "error: subgraph tuning (AOE_MODE=1) does not exist on Atlas A2/A3: use 2" >&2
      exit 2
    fi
    ;;
  2 | 4) ;;
  *)
    echo "error: AOE_MODE=$AOE_MODE: 2 (operators), 1 (subgraphs) or 4 (gradient split)" >&2
    exit 2
    ;;
esac
mkdir -p "$TUNE_BANK_PATH" "$ASCEND_WORK_PATH"
"""
    + _AOE_DISK.replace('"$@"', '"$TUNE_BANK_PATH" "$ASCEND_WORK_PATH"')
    + r"""
cd "$(dirname "$main")"
"${python[@]}" "$main" "$@"
if ! listed "tuning result" "$ASCEND_WORK_PATH"/aoe_result_*.json; then
  echo "warning: no aoe_result_*.json in $ASCEND_WORK_PATH (was the adapter in tune mode?)" >&2
fi
echo "tuned operators: $TUNE_BANK_PATH; then train without AOE_MODE, op_compiler_cache_mode=force"
"""
)

PROFILE_TF = (
    _HEAD
    + r"""
# the TF adapter's profiling by environment (CANN's PROFILING_MODE / PROFILING_OPTIONS);
# options the script sets itself win over these
out="$(absolute "${MSFT_PROF_DIR:-$here/profile}")"
mkdir -p "$out"

# json_string TEXT: TEXT as a JSON string (" and \ and control characters escaped)
json_string() {
  local text="$1" escaped="" char code i
  for ((i = 0; i < ${#text}; i++)); do
    char="${text:i:1}"
    case "$char" in
      \" | \\) escaped+="\\$char" ;;
      [[:cntrl:]])
        printf -v code '\\u%04x' "'$char"
        escaped+="$code"
        ;;
      *) escaped+="$char" ;;
    esac
  done
  printf '"%s"' "$escaped"
}

export PROFILING_MODE=true
if [ -z "${PROFILING_OPTIONS:-}" ]; then
  output="$(json_string "$out")"
  PROFILING_OPTIONS="$(printf '{"output":%s,"training_trace":"on","task_trace":"on",%s}' \
    "$output" '"aicpu":"on","fp_point":"","bp_point":"","aic_metrics":"PipeUtilization"')"
fi
export PROFILING_OPTIONS
"""
    + _ASCEND_ENV
    + r"""
cd "$(dirname "$main")"
"${python[@]}" "$main" "$@"
if listed "profile data" "$out"/PROF_*; then
  echo "parse each with msprof --export=on --output=<its folder>"
else
  echo "warning: no PROF_* folder in $out (was profiling on?)" >&2
fi
"""
)

COMPARE = r"""#!/usr/bin/env bash
# Compare the NPU side's dump with the GPU side's (written by ms_fmk_transplt kit precision).
#
#   ./compare.sh [NPU_DUMP] [GPU_DUMP] [OUT]
#
# Defaults: ./precision_dump, ../__GPU_TREE__/precision_dump (copy the GPU machine's dump
# there), ./precision_compare/<time>. Runs `msprobe compare` (mindstudio-probe 26.x) on the two
# step0 folders, then __SUMMARY__: the rows per Result, the calls one side has and not the other.
# Exit code: 0 when no row is an `error` (`warning` rows are counted in the summary), 1 when a
# row is an `error` or a call has no counterpart, 2 when a dump is missing; msprobe's own when
# it fails.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
npu="${1:-$here/precision_dump}"
gpu_tree="$here/../__GPU_TREE_QUOTED__"
gpu="${2:-$gpu_tree/precision_dump}"
out="${3:-$here/precision_compare/$(date +%Y%m%d-%H%M%S)}"
python="${PYTHON:-python3}"
for side in "$npu" "$gpu"; do
  if [ ! -d "$side/step0" ]; then
    echo "error: no step0 in $side: run that side's run_precision.sh first" >&2
    exit 2
  fi
done
mkdir -p "$out"
msprobe compare -tp "$npu/step0" -gp "$gpu/step0" -o "$out"
"$python" "$here/__SUMMARY_QUOTED__" "$out" "$gpu/step0"
"""


def render(
    template: str,
    *,
    kind: str,
    name: str,
    main_rel: str,
    title: str,
    env: str,
    side: str = "",
    gpu_tree: str = "",
    summary: str = "msft_compare.py",
    steps: int = 5,
) -> str:
    """A launcher from its template: the names (the launcher's, the -m script's, the GPU tree's,
    the summary's) quoted where the script reads them and shown in its comments."""
    names = {"NAME": name, "MAIN": main_rel, "GPU_TREE": gpu_tree, "SUMMARY": summary}
    values = {"TITLE": title, "KIND": kind, "ENV": env, "SIDE": side, "STEPS": str(steps)}
    values["CARDS"] = "CUDA_VISIBLE_DEVICES" if side == "GPU" else "ASCEND_RT_VISIBLE_DEVICES"
    values.update(name_values(names))
    return filled(template, values)

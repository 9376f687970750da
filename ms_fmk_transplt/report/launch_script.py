"""run_distributed_npu.sh: launches the migrated -m script on several NPUs (distributed mode)."""

from __future__ import annotations

from pathlib import Path

from ms_fmk_transplt.report.shell_quoting import filled, name_values
from ms_fmk_transplt.safety.fs_safety import write_text

TEMPLATE = r"""#!/usr/bin/env bash
# Launch __MAIN__ data-parallel on several Ascend NPUs (written by ms_fmk_transplt distributed).
#
#   ./run_distributed_npu.sh [arguments of the script]                     # NPUs 0-7 of this node
#   NPUS=0,1,2,3 ./run_distributed_npu.sh --epochs 10                      # 4 NPUs
#   NNODES=2 NODE_RANK=0 MASTER_ADDR=10.0.0.1 ./run_distributed_npu.sh     # node 0 of 2 (then 1)
#
# Environment: NPUS (this node's NPUs, default 0,1,2,3,4,5,6,7), NNODES (1), NODE_RANK (0),
# MASTER_ADDR (127.0.0.1), MASTER_PORT (29500), PYTHON (python3), LOG_DIR (./logs).
# Each rank gets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT (as
# torchrun sets them), RANK_ID, RANK_SIZE, DEVICE_ID (the Ascend names) and
# ASCEND_RT_VISIBLE_DEVICES=$NPUS; its output goes to $LOG_DIR/rank_<RANK>.log.
# Waits for every rank; when one fails the others are stopped and its exit code is returned.
set -u

here="$(cd "$(dirname "$0")" && pwd)"
main="$here/__MAIN_QUOTED__"
npus="${NPUS:-0,1,2,3,4,5,6,7}"
IFS=',' read -r -a devices <<< "$npus"
nproc="${#devices[@]}"
nnodes="${NNODES:-1}"
node_rank="${NODE_RANK:-0}"
world_size=$((nproc * nnodes))
log_dir="${LOG_DIR:-./logs}"
python="${PYTHON:-python3}"
export MASTER_ADDR="${MASTER_ADDR:-127.0.0.1}"
export MASTER_PORT="${MASTER_PORT:-29500}"
export ASCEND_RT_VISIBLE_DEVICES="$npus"
mkdir -p "$log_dir"

pids=()
stop_all() {
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null
  done
}
trap 'stop_all; exit 130' INT TERM

for ((local_rank = 0; local_rank < nproc; local_rank++)); do
  rank=$((node_rank * nproc + local_rank))
  RANK=$rank LOCAL_RANK=$local_rank WORLD_SIZE=$world_size LOCAL_WORLD_SIZE=$nproc \
    RANK_ID=$rank RANK_SIZE=$world_size DEVICE_ID=$local_rank \
    "$python" "$main" "$@" > "$log_dir/rank_${rank}.log" 2>&1 &
  pids+=("$!")
  echo "rank $rank on NPU ${devices[$local_rank]}: pid $!, log $log_dir/rank_${rank}.log"
done

status=0
for _ in "${pids[@]}"; do
  wait -n
  code=$?
  if ((code != 0 && status == 0)); then
    status=$code
    echo "a rank failed (exit $code): stopping the others" >&2
    stop_all
  fi
done
if ((status == 0)); then
  echo "all $nproc rank(s) finished"
fi
exit "$status"
"""


def render(main_rel: str) -> str:
    """The launcher of ``main_rel``: the name quoted in the assignment, shown in the comment."""
    return filled(TEMPLATE, name_values({"MAIN": main_rel}))


def write(path: Path, main_rel: str) -> None:
    write_text(path, render(main_rel))
    path.chmod(0o755)

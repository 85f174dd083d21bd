#!/usr/bin/env bash
# A kernel that fails under kernel replay on one GPU, captured replayed and multiplexed
# (bench/workloads/replay_wall.py: one elementwise launch writing FRACTION of the GPU's free memory).
# On the GPU machine, from the repository root, with orjson's wheel in .wheels:
#   OUT=/tmp/out bash bench/device/replay_wall.sh [FRACTION]      # default 0.95
# Measured on the H200 at 0.95 (2026-12-02), before a multiplexed capture stopped replaying after the
# first replay failure: each of the 14 counters replayed even alone failed after ~72 s, and the capture
# outlasted a device call (17-18 of 31 groups in 330-420 s; a one-pass group ~8 s).
set -uo pipefail
export PATH=$PATH:/opt/nvidia/nsight-compute/2025.3.1:/usr/local/cuda/bin \
  PYTHONPATH=/tmp/site:$PWD/src:/opt/nvidia/nsight-compute/2025.3.1/extras/python PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; FRACTION=${1:-0.95}
[ -d .wheels ] && python3 -m pip install -q --no-index --no-deps --target /tmp/site .wheels/*.whl
KS=(python3 -m kernelscope.cli)
W=(python3 bench/workloads/replay_wall.py)
{ free -g; nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv; ncu --version | tail -1; } > "$OUT/machine.txt" 2>&1
run() {  # NAME SECONDS ARGV...: the command's output and exit, and its wall time
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" > "$OUT/$name.txt" 2>&1; local code=$?
  echo "$name: exit $code, $((SECONDS - t0)) s" | tee -a "$OUT/$name.txt"
}
C=(capture --kernel regex:elementwise --launch-skip 2)
run control-replayed 120 "${KS[@]}" "${C[@]}" --out /tmp/rw-control -- "${W[@]}" 0.3 4
run wall-replayed 200 "${KS[@]}" "${C[@]}" --out /tmp/rw-replayed -- "${W[@]}" "$FRACTION" 4
run wall-multiplexed 420 "${KS[@]}" "${C[@]}" --multiplex --out /tmp/rw-multiplexed -- "${W[@]}" "$FRACTION" 4
for b in control replayed multiplexed; do
  [ -d /tmp/rw-$b ] && "${KS[@]}" analyze /tmp/rw-$b --format json > "$OUT/analyze-$b.json" 2> "$OUT/analyze-$b.err"
  [ -d /tmp/rw-$b ] && "${KS[@]}" analyze /tmp/rw-$b --details > "$OUT/analyze-$b.txt" 2>&1
done
tar -C /tmp -cJf "$OUT/replay-wall.tar.xz" $(cd /tmp && ls -d rw-* 2>/dev/null)
tail -n 3 "$OUT"/*.txt

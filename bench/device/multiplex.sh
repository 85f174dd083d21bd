#!/usr/bin/env bash
# The captures of tests/fixtures/multiplex, one device call: the toy's `copy` kernel replayed and with
# --multiplex, then both analyzed. With `passes`, first measure the one-pass counter groups again
# (bench/device/passes.py; ~7 min) into $OUT/groups.json. From the repository root, carrying .wheels
# (orjson for the GPU image):
#   OUT=$OUT bash bench/device/multiplex.sh [passes]
set -uo pipefail
export PATH=$PATH:/opt/nvidia/nsight-compute/2025.3.1:/usr/local/cuda/bin
export PYTHONPATH=/tmp/site:$PWD/src:/opt/nvidia/nsight-compute/2025.3.1/extras/python PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
[ -d .wheels ] && python3 -m pip install -q --no-index --no-deps --target /tmp/site .wheels/*.whl
nvcc -O3 -arch=sm_90 -o /tmp/toy bench/workloads/toy.cu || exit 1
if [ "${1:-}" = passes ]; then python3 bench/device/passes.py /tmp/toy > "$OUT/groups.json" || exit 1; fi
cd "$OUT" || exit 1
for mode in replayed multiplexed; do
  flag=$([ $mode = multiplexed ] && echo --multiplex)
  /usr/bin/time -f "$mode %e s" python3 -m kernelscope.cli capture --kernel copy --launch-skip 5 $flag \
    --out toy-$mode -- /tmp/toy 60 2>&1 | tail -2
done
python3 -m kernelscope.cli analyze toy-replayed toy-multiplexed --details
tar czf toy.tgz toy-replayed toy-multiplexed && rm -rf toy-replayed toy-multiplexed  # one file comes back

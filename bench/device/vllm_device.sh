#!/usr/bin/env bash
# The device-tool calls behind bench/device/vllm_e2e.py, one stage a call, back to back (a machine idle 30 s is
# given back). From the repository root on the GPU machine:
#   bash bench/device/vllm_device.sh resplit      # HERE, once: ../shared/vllm/pack's folders re-split into .vllm/dNN of
#                                          # 36 MiB each, so one rides beside this tree (~22 MB) under 64 MiB
#   bash bench/device/vllm_device.sh chunk NN     # carry .vllm/dNN (../shared/vllm's wheel set, re-split to fit)
#   bash bench/device/vllm_device.sh offline      # after the last chunk: install, the tiny model, exports, offline stage
#   bash bench/device/vllm_device.sh setup        # after the last chunk: install and the tiny model only
#   bash bench/device/vllm_device.sh serve        # launch + capture --attach against the OpenAI server
#   bash bench/device/vllm_device.sh k8s          # carry .gpukube (../shared/kube/gpu-pack): the Deployment flow
#   bash bench/device/vllm_device.sh k8s secure   # (or statefulset) a real deployment form, bench/device/vllm_e2e.py's stage
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD/src:/opt/nvidia/nsight-compute/2025.3.1/extras/python VLLM_USE_FLASHINFER_SAMPLER=0 HF_HUB_OFFLINE=1 \
  VLLM_NO_USAGE_STATS=1 TINY=/tmp/tiny
OUT=${OUT:-/tmp/out}
# kernelscope's own dependency the GPU image lacks (pip download orjson --python-version 3.12 ... -d .wheels)
[ -d .wheels ] && python3 -m pip install -q --no-index --no-deps --target /tmp/site .wheels/*.whl
case $1 in
  resplit)
    rm -rf .vllm/all .vllm/d[0-9]* && mkdir -p .vllm/all && cp .vllm/c0*/* .vllm/all/ &&
      for first in .vllm/all/*.part00; do w=${first%.part00}; cat "$w".part[0-9][0-9] > "$w" && rm "$w".part[0-9][0-9]; done
    (cd .vllm/all && for f in *; do [ "$(stat -c %s "$f")" -gt 37748736 ] && split -b 36m -d -a 2 "$f" "$f.part" && rm "$f"; done; true)
    python3 - <<'PY'
import os, shutil
files = sorted(os.listdir(".vllm/all"), key=lambda f: -os.path.getsize(f".vllm/all/{f}"))
bins: list[list[str]] = []
sizes: list[int] = []
for f in files:  # first fit, largest first, 36 MiB a folder
    n = os.path.getsize(f".vllm/all/{f}")
    i = next((i for i, s in enumerate(sizes) if s + n <= 36 << 20), None)
    if i is None:
        bins.append([]); sizes.append(0); i = len(bins) - 1
    bins[i].append(f); sizes[i] += n
for i, b in enumerate(bins, 1):
    os.makedirs(f".vllm/d{i:02d}")
    for f in b:
        shutil.move(f".vllm/all/{f}", f".vllm/d{i:02d}/{f}")
print(f"resplit: {len(bins)} folders")
PY
    rm -rf .vllm/all ;;
  chunk) mkdir -p /root/vw && cp ".vllm/d$2"/* /root/vw/ && echo "chunk $2: $(ls /root/vw | wc -l) files" ;;
  offline)
    bash /root/vw/reassemble.sh /root/vw | tail -1 &&
      python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site /root/vw/*.whl &&
      python3 tests/fixtures/make/vllm/make_tiny.py /tmp/tiny | tail -1 || exit 1
    mkdir -p /tmp/sx && python3 -c "import tarfile; tarfile.open('tests/fixtures/sets.tar.xz').extractall('/tmp/sx', members=[m for m in tarfile.open('tests/fixtures/sets.tar.xz') if m.name in ('basic-torch.ncu-rep', 'full-copy.ncu-rep')])"
    ncu --import /tmp/sx/basic-torch.ncu-rep --csv --page details > "$OUT/basic-torch-details.csv"
    ncu --import /tmp/sx/basic-torch.ncu-rep --csv --page raw > "$OUT/basic-torch-raw.csv"
    ncu --import /tmp/sx/full-copy.ncu-rep --csv --page details > "$OUT/full-copy-details.csv"
    python3 bench/device/vllm_e2e.py offline "$OUT" ;;
  setup)
    bash /root/vw/reassemble.sh /root/vw | tail -1 &&
      python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site /root/vw/*.whl &&
      python3 tests/fixtures/make/vllm/make_tiny.py /tmp/tiny | tail -1 ;;
  serve|production|mux) python3 bench/device/vllm_e2e.py "$1" "$OUT" ;;
  k8s)
    export KUBE_HOST_MOUNTS="/usr /opt /etc /dev /proc /sys $PWD /tmp/site /tmp/tiny"
    eval "$(.gpukube/gpu-up)" || exit 1
    python3 bench/device/vllm_e2e.py "${2:-k8s}" "$OUT"; code=$?
    .gpukube/gpu-down; exit $code ;;
esac

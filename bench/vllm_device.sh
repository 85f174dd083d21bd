#!/usr/bin/env bash
# The device-tool calls behind bench/vllm_e2e.py, one stage a call, back to back (a machine idle 30 s is
# given back). From the repository root on the GPU machine:
#   bash bench/vllm_device.sh chunk NN     # carry .vllm/cNN (../shared/vllm's wheel set, re-split to fit)
#   bash bench/vllm_device.sh offline      # after the last chunk: install, the tiny model, exports, offline stage
#   bash bench/vllm_device.sh setup        # after the last chunk: install and the tiny model only
#   bash bench/vllm_device.sh serve        # launch + capture --attach against the OpenAI server
#   bash bench/vllm_device.sh k8s          # carry .gpukube (../shared/kube/gpu-pack): the Deployment flow
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD/src:/opt/nvidia/nsight-compute/2025.3.1/extras/python VLLM_USE_FLASHINFER_SAMPLER=0 HF_HUB_OFFLINE=1 \
  VLLM_NO_USAGE_STATS=1 TINY=/tmp/tiny
OUT=${OUT:-/tmp/out}
# kernelscope's own dependency the GPU image lacks (pip download orjson --python-version 3.12 ... -d .wheels)
[ -d .wheels ] && python3 -m pip install -q --no-index --no-deps --target /tmp/site .wheels/*.whl
case $1 in
  chunk) mkdir -p /root/vw && cp ".vllm/c$2"/* /root/vw/ && echo "chunk $2: $(ls /root/vw | wc -l) files" ;;
  offline)
    bash /root/vw/reassemble.sh /root/vw | tail -1 &&
      python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site /root/vw/*.whl &&
      python3 tests/fixtures/make/vllm/make_tiny.py /tmp/tiny | tail -1 || exit 1
    mkdir -p /tmp/sx && python3 -c "import tarfile; tarfile.open('tests/fixtures/sets.tar.xz').extractall('/tmp/sx', members=[m for m in tarfile.open('tests/fixtures/sets.tar.xz') if m.name in ('basic-torch.ncu-rep', 'full-copy.ncu-rep')])"
    ncu --import /tmp/sx/basic-torch.ncu-rep --csv --page details > "$OUT/basic-torch-details.csv"
    ncu --import /tmp/sx/basic-torch.ncu-rep --csv --page raw > "$OUT/basic-torch-raw.csv"
    ncu --import /tmp/sx/full-copy.ncu-rep --csv --page details > "$OUT/full-copy-details.csv"
    python3 bench/vllm_e2e.py offline "$OUT" ;;
  setup)
    bash /root/vw/reassemble.sh /root/vw | tail -1 &&
      python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site /root/vw/*.whl &&
      python3 tests/fixtures/make/vllm/make_tiny.py /tmp/tiny | tail -1 ;;
  serve) python3 bench/vllm_e2e.py serve "$OUT" ;;
  k8s)
    export KUBE_HOST_MOUNTS="/usr /opt /etc /dev /proc /sys $PWD /tmp/site /tmp/tiny"
    eval "$(.gpukube/gpu-up)" || exit 1
    python3 bench/vllm_e2e.py k8s "$OUT"; code=$?
    .gpukube/gpu-down; exit $code ;;
esac

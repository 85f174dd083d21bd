# Sourced by both stand-in ncus (tests/k8s/fake-ncu.sh in the pods, tests/local/fake-ncu.sh here):
# walks ncu's options as kernelscope's argv (ncu/argv.py) writes them, sets $out from -o, and
# leaves the target program in "$@".
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out="$2"; shift 2;;
    --launch-count|--launch-skip|--kernel-name|--kernel-name-base|--metrics|--section|--set|--clock-control|\
    --target-processes|--replay-mode|--graph-profiling|--filter-mode|--profile-from-start|--port|--hostname|--mode) shift 2;;
    -f|--forward-signals) shift;;
    *) break;;
  esac
done

#!/bin/sh
# A stand-in for ncu on a machine without a GPU, for tests of the local capture path (the pod
# path has tests/k8s/fake-ncu.sh): it answers --version and --help as ncu 2025.3.1 does, "writes"
# a real H200 report (tests/fixtures/decode_gemm.ncu-rep) where -o says, exports the real raw CSV
# of that report on --import, and runs the program, whose output ncu passes through to its log.
fx=$(cd "$(dirname "$0")/../fixtures" && pwd)
case " $* " in
  *" --version "*) echo "NVIDIA (R) Nsight Compute Command Line Profiler"; echo "Version 2025.3.1.0 (fake)"; exit 0;;
  *" --help "*) cat "$fx/ncu-output/ncu-2025.3.1-help.txt"; exit 0;;
  *" --import "*) cat "$fx/decode_gemm-raw.csv"; exit 0;;
esac
case " $* " in
  *" kernelscope-list-only-matches-nothing "*)  # the listing pass: ncu 2025.3.1's own words for an empty capture
    shift 6; "$@"; sed -n '/^==WARNING== No kernels/,/^[0-9]*\. /p;/^[0-9]*\. /p' "$fx/ncu-output/filter-matched-nothing.txt" | uniq
    exit 0;;
esac
. "$(dirname "$0")/../k8s/ncu-options.sh"  # sets $out, leaves the program in "$@"
echo "==PROF== Connected to process $$"
"$@"
echo '==PROF== Profiling "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_NNT": 0%....50%....100% - 9 passes'
cp "$fx/decode_gemm.ncu-rep" "$out.ncu-rep"
echo "==PROF== Report: $out.ncu-rep"

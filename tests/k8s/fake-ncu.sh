#!/bin/sh
# A stand-in for ncu inside the emulated cluster's containers (which cannot run GPU code): it speaks
# just enough of ncu's command line for kernelscope's pod transport to be exercised for real --
# kubectl exec, cp and helm -- without a GPU. It never stands in for ncu's figures: the report it
# "writes" is a real H200 capture (tests/fixtures/decode_gemm.ncu-rep) mounted beside it.
here=$(dirname "$0")
case " $* " in
  *" --version "*) echo "NVIDIA (R) Nsight Compute Command Line Profiler"; echo "Version 2025.3.1.0 (fake)"; exit 0;;
  *" --import "*)
    if [ "$FAKE_NCU_IMPORT_FAILS" = 1 ]; then exit 1; fi
    printf '"ID","Kernel Name"\n"",""\n"0","nvjet_sm90_tst_64x8_64x16_2x1_v_bz_NNT"\n'; exit 0;;
esac
. "$here/ncu-options.sh"  # sets $out, leaves the program in "$@"
echo "==PROF== Connected to process $$"
if [ "$FAKE_NCU_ERROR" = 1 ]; then echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters"; sleep 3600; fi
if [ "$FAKE_NCU_NEEDS_TRAFFIC" = 1 ] && [ $# -gt 0 ]; then  # as real ncu: a kernel runs when a request is served
  "$@" &
  while [ ! -f /tmp/served ]; do sleep 0.5; done
  echo '==PROF== Profiling "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_NNT": 0%....50%....100% - 9 passes'
  [ -n "$out" ] && base64 -d "$here/report.b64" > "$out.ncu-rep"
  wait; exit
fi
sleep "${FAKE_NCU_DELAY:-0.5}"
echo '==PROF== Profiling "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_NNT": 0%....50%....100% - 9 passes'
[ -n "$out" ] && base64 -d "$here/report.b64" > "$out.ncu-rep"
[ $# -gt 0 ] && exec "$@"
exec sleep 3600  # an attach session: connected until ended (by pid)

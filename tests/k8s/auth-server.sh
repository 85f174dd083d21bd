#!/bin/sh
# a server that wants vLLM's API key: 200 for "Authorization: Bearer $VLLM_API_KEY", else 401
auth=""
while IFS= read -r line; do
  line=$(printf '%s' "$line" | tr -d '\r')
  [ -z "$line" ] && break
  case "$line" in [Aa]uthorization:*) auth=${line#*: };; esac
done
if [ -n "$VLLM_API_KEY" ] && [ "$auth" = "Bearer $VLLM_API_KEY" ]; then
  touch /tmp/served  # fake-ncu.sh's FAKE_NCU_NEEDS_TRAFFIC: a served request runs the kernels
  printf 'HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{"id":"cmpl-1","choices":[{"text":" kernelscope"}]}\n'
else
  printf 'HTTP/1.0 401 Unauthorized\r\nContent-Type: application/json\r\n\r\n{"error":"Unauthorized"}\n'
fi

#!/bin/sh
# kubectl as a user whose Role is namespace-scoped (no ClusterRole): reads at cluster scope and of
# nodes are refused with the API server's own Forbidden message, and `auth can-i` answers "no" for
# them. The emulated cluster has no RBAC (any token is admin), so this stands in for the one thing it
# cannot do; every other call goes to the real kubectl ($KS_REAL_KUBECTL) and the real API server.
user='User "system:serviceaccount:serving:capturer"'
case " $* " in
  *" auth can-i get nodes "*|*" auth can-i list pods --all-namespaces "*|*" auth can-i list limitranges "*)
    echo no; exit 1;;
  *" get nodes "*|*" get node/"*)
    echo "Error from server (Forbidden): nodes is forbidden: $user cannot list resource \"nodes\" in API group \"\" at the cluster scope" >&2
    exit 1;;
  *" get pods -A "*)
    echo "Error from server (Forbidden): pods is forbidden: $user cannot list resource \"pods\" in API group \"\" at the cluster scope" >&2
    exit 1;;
  *" get limitranges "*)
    echo "Error from server (Forbidden): limitranges is forbidden: $user cannot list resource \"limitranges\" in API group \"\" in the namespace \"serving\"" >&2
    exit 1;;
esac
exec "$KS_REAL_KUBECTL" "$@"

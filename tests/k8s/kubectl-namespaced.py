#!/usr/bin/env python3
"""kubectl as a user whose Role is namespace-scoped (no ClusterRole): reads at cluster scope and of
nodes are refused with the API server's own Forbidden message, and its access reviews (what
`kubectl auth can-i` asks) answer "no" for them and "yes" for the rest. The emulated cluster has no
RBAC (any token is admin) and serves no SelfSubjectAccessReview, so this stands in for those; every
other call goes to the real kubectl ($KS_REAL_KUBECTL) and the real API server."""

import json
import os
import sys

USER = 'User "system:serviceaccount:serving:capturer"'
DENIED = {("get", "nodes", None), ("list", "pods", None), ("list", "limitranges", "serving")}  # (verb, resource, ns)
args = " ".join(sys.argv[1:])


def refuse(resource: str, where: str) -> None:
    print(f'Error from server (Forbidden): {resource} is forbidden: {USER} cannot list resource "{resource}" '
          f'in API group "" {where}', file=sys.stderr)
    sys.exit(1)


if "create -f - -o json" in args:
    given = json.load(sys.stdin)
    for review in given["items"] if given.get("kind") == "List" else [given]:
        assert review["kind"] == "SelfSubjectAccessReview", "only access reviews are stood in for"
        asked = review["spec"]["resourceAttributes"]
        review["status"] = {"allowed": (asked["verb"], asked["resource"], asked.get("namespace")) not in DENIED}
        review["spec"]["resourceAttributes"] = {k: v for k, v in asked.items() if v}  # as the API server's omitempty
        print(json.dumps(review, indent=4))
elif " get nodes " in f" {args} " or " get node/" in f" {args} ":
    refuse("nodes", "at the cluster scope")
elif " get pods -A " in f" {args} ":
    refuse("pods", "at the cluster scope")
elif " get limitranges " in f" {args} ":
    refuse("limitranges", 'in the namespace "serving"')
else:
    os.execv(os.environ["KS_REAL_KUBECTL"], ["kubectl", *sys.argv[1:]])

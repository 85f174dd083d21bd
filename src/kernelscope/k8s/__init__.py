"""Capture from a Kubernetes deployment through a sister pod (sister.py builds it).

The tools image defaults live here, not in sister.py, so that building the CLI parser (every
run) does not import the Kubernetes stack."""

DEFAULT_TOOLS_IMAGE = "kernelscope-tools:ncu-2025.3.1"
DEFAULT_NCU_HOME = "/opt/nvidia/nsight-compute/2025.3.1"

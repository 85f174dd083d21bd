"""Capture from a Kubernetes deployment through a sister pod (sister.py builds it).

The tools image defaults live here, not in sister.py, so that building the CLI parser (every
run) does not import the Kubernetes stack."""

# NVIDIA's CUDA devel image, which ships ncu 2025.3.1 at DEFAULT_NCU_HOME and which any node can pull
# from NGC; docker/tools/Dockerfile builds a smaller one (ncu alone) to push to your own registry
DEFAULT_TOOLS_IMAGE = "nvcr.io/nvidia/cuda:13.0.2-devel-ubuntu24.04"
DEFAULT_NCU_HOME = "/opt/nvidia/nsight-compute/2025.3.1"

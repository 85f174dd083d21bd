"""`python -m kernelscope.cli`: the tests and the k8s transport run the CLI this way."""

import sys

from . import main

sys.exit(main())

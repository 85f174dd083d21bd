"""Typed errors: every failure the user can cause becomes one of these, and the CLI turns each into
one line naming the file (or the option) and what is wrong, with exit code 2."""

from __future__ import annotations

import signal


class KernelscopeError(Exception):
    """Base of every error kernelscope raises on purpose (the Python API raises nothing else)."""


class InputError(KernelscopeError):
    """A report, CSV, bundle, campaign or ceilings file that cannot be read as what it claims to be."""

    def __init__(self, path: object, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = str(path)
        self.problem = problem


class UsageError(KernelscopeError):
    """Options or arguments the command line cannot take (argparse's refusal)."""


class CeilingsError(KernelscopeError):
    """No usable ceiling for a device (unknown device, missing precision)."""


class PlanError(KernelscopeError):
    """A capture that kernelscope refuses to run as asked (and says why and what to do)."""


class KubeError(KernelscopeError):
    """kubectl or helm failed, timed out, or the cluster is in a state the run cannot go on from."""


class Interrupted(BaseException):
    """A signal (SIGINT, SIGTERM, SIGHUP) asked us to stop: `finally` blocks clean up, then the CLI
    exits 128 + signal. A BaseException, like KeyboardInterrupt, so no `except Exception` eats it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

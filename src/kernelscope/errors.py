"""Typed errors: every bad input becomes one line naming the file and what is wrong."""

from __future__ import annotations


class KernelscopeError(Exception):
    """Base of every error the CLI turns into a one-line message and exit code 2."""


class InputError(KernelscopeError):
    """A report, CSV, bundle or ceilings file that cannot be read as what it claims to be."""

    def __init__(self, path: object, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = str(path)
        self.problem = problem


class CeilingsError(KernelscopeError):
    """No usable ceiling for a device (unknown device, missing precision)."""

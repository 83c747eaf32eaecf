"""Fixtures of the end-to-end tests (helpers live in tests/e2e/helpers.py)."""

from tests.e2e.helpers import extra_sshd_factory

__all__ = ["extra_sshd_factory"]

"""Markers of the graph tests (the services and the `clean_graph` fixture come from tests/conftest.py)."""

from __future__ import annotations


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "slow: a big input, about a minute on a quiet 2-core machine (deselect with -m 'not slow')")

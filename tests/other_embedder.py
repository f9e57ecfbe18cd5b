"""A model other than the built-in one, for `CHATETL_EMBEDDER=other_embedder:three_dimensions`:
three dimensions, so a graph embedded by the built-in model does not match it."""

from __future__ import annotations


def three_dimensions(texts: list[str]) -> list[list[float]]:
    return [[1.0, float(len(text) % 7), 0.5] for text in texts]

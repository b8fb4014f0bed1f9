"""Clustering of fact vectors: the data-driven side of the concept hierarchy.

``leader_kmeans`` picks k from the data: it opens a cluster for a vector farther than ``radius``
(cosine) from every centre, then refines with a few spherical k-means steps; clusters below
``min_size`` dissolve into their nearest surviving neighbour. Used by induction/concepts.py and
induction/ontology.py (CREATE / MERGE / SPLIT edits, names); the concept route reads the tree they
build (retrieval/seeds/concepts.py), not clusters of its own.
Deterministic: the input order decides ties.
"""

from __future__ import annotations

import numpy as np


def leader_kmeans(m: np.ndarray, radius: float = 0.45, min_size: int = 4, iters: int = 5,
                  max_clusters: int = 64) -> np.ndarray:
    """Cluster labels (0..c-1) for the rows of ``m`` (normalised). An empty input gives an empty array.

    >>> x = np.array([[1, 0], [0.99, 0.1], [0, 1], [0.1, 0.99]], dtype=np.float32)
    >>> leader_kmeans(x / np.linalg.norm(x, axis=1, keepdims=True), radius=0.8, min_size=1).tolist()
    [0, 0, 1, 1]
    """
    n = len(m)
    if n == 0:
        return np.zeros(0, dtype=int)
    centres = [m[0]]
    for v in m[1:]:
        if len(centres) < max_clusters and float(np.max(np.stack(centres) @ v)) < radius:
            centres.append(v)
    c = np.stack(centres)
    labels = np.zeros(n, dtype=int)
    for _ in range(iters):
        labels = np.argmax(m @ c.T, axis=1)
        sizes = np.bincount(labels, minlength=len(c))
        keep = sizes >= min(min_size, n)
        if not keep.any():
            keep[np.argmax(sizes)] = True
        c = np.stack([m[labels == j].mean(axis=0) for j in np.flatnonzero(keep)])
        c /= np.linalg.norm(c, axis=1, keepdims=True) + 1e-12
    labels = np.argmax(m @ c.T, axis=1)
    _, labels = np.unique(labels, return_inverse=True)
    return labels.astype(int)


def centroids(m: np.ndarray, labels: np.ndarray) -> np.ndarray:
    c = np.stack([m[labels == j].mean(axis=0) for j in range(int(labels.max()) + 1)]) if len(labels) else m[:0]
    out: np.ndarray = c / (np.linalg.norm(c, axis=1, keepdims=True) + 1e-12)
    return out


def two_means(m: np.ndarray, iters: int = 8) -> np.ndarray:
    """Split rows in two (farthest-pair start, spherical k-means); labels 0/1."""
    a = int(np.argmin(m @ m.mean(axis=0)))
    b = int(np.argmin(m @ m[a]))
    c = np.stack([m[a], m[b]])
    labels = np.zeros(len(m), dtype=int)
    for _ in range(iters):
        labels = np.argmax(m @ c.T, axis=1)
        if labels.min() == labels.max():
            break
        c = centroids(m, labels)
    return labels

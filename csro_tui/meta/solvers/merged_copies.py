"""Merging duplicated strategies of a matrix game before solving it.

CSRO populations often hold the same behaviour twice: code accepted twice,
or copies that differ only by a comment.  Such strategies have (nearly)
identical payoff rows and columns, which makes the set of equilibria a whole
face instead of a point, and an LP solver then puts all the weight on
whichever copy its pivoting reaches first.  Merging copies into one strategy,
solving the smaller game and splitting each merged weight equally between the
copies gives every copy the same weight, independently of their order.

Two rows are copies when no entry differs by more than `tol`.  Groups are
formed greedily in index order (each row not yet grouped leads a group of the
ungrouped rows within `tol` of it); with the tiny default tolerance chains of
almost-copies, the only case where the order could matter, do not occur.
"""

from __future__ import annotations

import numpy as np


def group_duplicates(vectors: np.ndarray, tol: float) -> np.ndarray:
    """Labels rows of `vectors` so that copies (max |difference| <= tol) share one.

    Labels are 0, 1, ... in the order of each group's first row.  Pairwise
    squared distances come from one Gram matrix product (no loop over
    entries); only the few pairs that this cheap bound leaves are checked
    exactly with the max-norm.
    """
    count, width = vectors.shape
    squared_norms = np.einsum("ij,ij->i", vectors, vectors)
    gram = vectors @ vectors.T
    norm_sums = squared_norms[:, None] + squared_norms[None, :]
    squared_distances = norm_sums - 2.0 * gram
    # max|a-b| <= tol implies |a-b|^2 <= width * tol^2; the relative slack
    # absorbs the round-off of the Gram formula so no true copy is missed.
    candidates = squared_distances <= width * tol * tol + 1e-9 * norm_sums
    np.fill_diagonal(candidates, False)
    if not candidates.any():  # the usual case: no two strategies alike
        return np.arange(count)
    labels = np.full(count, -1, dtype=np.int64)
    next_label = 0
    for leader in range(count):
        if labels[leader] >= 0:
            continue
        others = np.flatnonzero(candidates[leader] & (labels < 0))
        close = np.max(np.abs(vectors[others] - vectors[leader]), axis=1) <= tol
        labels[others[close]] = next_label
        labels[leader] = next_label
        next_label += 1
    return labels


def averaging_matrix(labels: np.ndarray) -> np.ndarray:
    """The (groups x members) matrix whose rows average each group's members."""
    group_count = int(labels.max()) + 1
    indicator = np.zeros((group_count, labels.size))
    indicator[labels, np.arange(labels.size)] = 1.0
    return indicator / indicator.sum(axis=1, keepdims=True)


def merge_duplicates(
    matrix: np.ndarray, tol: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Returns (reduced matrix, row labels, column labels).

    An entry of the reduced matrix is the mean of its block, so almost-copies
    contribute their average payoffs.
    """
    row_labels = group_duplicates(matrix, tol)
    col_labels = group_duplicates(matrix.T, tol)
    reduced = matrix
    if row_labels.max() + 1 < row_labels.size:
        reduced = averaging_matrix(row_labels) @ reduced
    if col_labels.max() + 1 < col_labels.size:
        reduced = reduced @ averaging_matrix(col_labels).T
    return reduced, row_labels, col_labels


def split_weights(group_weights: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Spreads each group's weight equally over its members."""
    group_sizes = np.bincount(labels)
    return group_weights[labels] / group_sizes[labels]

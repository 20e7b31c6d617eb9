"""The TD target of categorical critics (C51, Bellemare et al. 2017; FastTD3's and FastSAC's
critics, ``fast_td3.py`` and ``fast_sac.py``'s ``projection``).

    y = categorical_target(probs, reward, discount, support)    # (B, K)

A categorical critic's value is a distribution over K values ``support`` (z_1 < ... < z_K,
evenly spaced). Its soft TD target is the distribution of

    r - discount * alpha * log pi(a'|s') + discount * z,    z ~ the target critic at (s', a'),

(``discount``: gamma^n (1 - terminated)), clipped to [z_1, z_K] and split between the two
atoms on either side of each shifted value in proportion to its distance from them; a
value that lands exactly on an atom keeps its whole mass there (FastTD3's fix of the
floor == ceil case, commit 7acc3a3). The critic's loss is the cross-entropy of its
distribution to this one.
"""

from __future__ import annotations

import torch


def categorical_target(probs: torch.Tensor, reward: torch.Tensor, discount: torch.Tensor,
                       support: torch.Tensor) -> torch.Tensor:
    """(B, K) the projection onto ``support`` (K,) of ``reward + discount * z`` with z
    distributed as ``probs`` (B, K); ``reward`` and ``discount`` (B,) (the entropy term
    already in ``reward``)."""
    K = support.shape[0]
    v_min, v_max = support[0], support[-1]
    delta = (v_max - v_min) / (K - 1)
    z = (reward[:, None] + discount[:, None] * support[None]).clamp(v_min, v_max)
    b = (z - v_min) / delta  # (B, K) positions in atoms
    lower, upper = b.floor().long(), b.ceil().long()
    exact = lower == upper  # on an atom: the whole mass to it, through a neighbour's pair
    down, up = exact & (lower > 0), exact & (lower == 0)
    lower = torch.where(down, lower - 1, lower)
    upper = torch.where(up, upper + 1, upper)
    out = torch.zeros_like(probs)
    out.scatter_add_(1, lower, probs * (upper.to(b.dtype) - b))
    out.scatter_add_(1, upper, probs * (b - lower.to(b.dtype)))
    return out


def categorical_loss(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The critics' loss: the sum over members of the mean cross-entropy of their logits
    (N, B, K) to the target distributions (B, K)."""
    return -(target * logits.log_softmax(-1)).sum(-1).mean(1).sum()

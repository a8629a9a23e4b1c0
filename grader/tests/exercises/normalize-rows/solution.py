import torch


def normalize_rows(x: torch.Tensor) -> torch.Tensor:
    """Scale every row of a 2-D tensor to unit L2 norm; all-zero rows stay zero."""
    norms = x.norm(dim=1, keepdim=True)
    return x / norms.clamp_min(1e-12)

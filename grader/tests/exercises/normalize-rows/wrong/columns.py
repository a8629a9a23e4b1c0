import torch


def normalize_rows(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=0, keepdim=True).clamp_min(1e-12)

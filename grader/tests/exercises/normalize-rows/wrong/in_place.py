import torch


def normalize_rows(x: torch.Tensor) -> torch.Tensor:
    return x.div_(x.norm(dim=1, keepdim=True).clamp_min(1e-12))

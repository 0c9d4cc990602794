"""ScaleNorm (Nguyen & Salazar 2019): g x / ||x||, one learned scale g for the whole vector."""
import torch
from torch import nn

from zoo.model import Cost


class ScaleNorm(nn.Module):
    def __init__(self, d_model: int):  # a norm is built as Norm(d_model)
        super().__init__()
        self.g = nn.Parameter(torch.tensor(d_model ** 0.5))

    def forward(self, x):
        return self.g * x / x.norm(dim=-1, keepdim=True).clamp(min=1e-5)

    @staticmethod
    def cost(d_model: int) -> Cost:  # the constructor's arguments: one weight, no matrix product
        return Cost(params=1, activations=d_model + 1)

"""Small tensor helpers shared by the mechanism tests."""

import torch


def rand(*shape, dtype=torch.float64, requires_grad=True):
    """A random leaf tensor for forward/backward comparisons."""
    return torch.randn(*shape, dtype=dtype).requires_grad_(requires_grad)


def grads(output, inputs, upstream=None):
    """d<upstream, output>/d inputs, with a fixed random upstream gradient."""
    upstream = torch.randn_like(output) if upstream is None else upstream
    return torch.autograd.grad(output, inputs, upstream, allow_unused=True)

"""A vanilla recurrent network, the baseline attention is compared with: source 001 Eq. (5.4.1)."""

import math

import torch
from torch import nn

from ._validation import require_float, require_ndim, require_same_dtype

_NONLINEARITIES = {
    "tanh": torch.tanh,
    "relu": torch.relu,
    "linear": lambda z: z,  # identity: h_t is linear in h_{t-1}, so dh_T/dh_1 = W_hh^(T-1) exactly
}


class VanillaRNN(nn.Module):
    """h_t = f(W_hh h_{t-1} + W_xh x_t + b)   (source 001 Eq. 5.4.1, which has f = tanh and no b).

    f is ``"tanh"``, ``"relu"`` or ``"linear"`` (the identity). W_xh = ``weight_ih``
    (hidden, input), W_hh = ``weight_hh`` (hidden, hidden), b = ``bias_ih + bias_hh``: the
    names and the U(-1/sqrt(hidden), 1/sqrt(hidden)) initialization of ``nn.RNN``'s layer-0
    parameters, without the ``_l0`` suffix. ``forward(x (B, T, input_size), h0=None (B, hidden))``
    returns every hidden state (B, T, hidden); h_T is ``out[:, -1]``. h0 defaults to zeros.
    Information from step i reaches step j only through the j - i updates in between.
    """

    def __init__(
        self, input_size: int, hidden_size: int, nonlinearity: str = "tanh", bias: bool = True
    ):
        super().__init__()
        if input_size < 1 or hidden_size < 1:
            raise ValueError(
                f"input_size and hidden_size must be >= 1, got {input_size} and {hidden_size}"
            )
        if nonlinearity not in _NONLINEARITIES:
            raise ValueError(
                f"nonlinearity must be one of {sorted(_NONLINEARITIES)}, got {nonlinearity!r}"
            )
        self.input_size, self.hidden_size, self.nonlinearity = input_size, hidden_size, nonlinearity
        self.weight_ih = nn.Parameter(torch.empty(hidden_size, input_size))  # W_xh
        self.weight_hh = nn.Parameter(torch.empty(hidden_size, hidden_size))  # W_hh
        if bias:
            self.bias_ih = nn.Parameter(torch.empty(hidden_size))
            self.bias_hh = nn.Parameter(torch.empty(hidden_size))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)

    def forward(self, x: torch.Tensor, h0: torch.Tensor | None = None) -> torch.Tensor:
        require_float("x", x)
        require_ndim("x", x, 3, "(B, T, input_size)")
        if x.shape[-1] != self.input_size:
            raise ValueError(
                f"x must have input size {self.input_size} in its last dim, got {x.shape[-1]} "
                f"(shape {tuple(x.shape)})"
            )
        B, T, _ = x.shape
        if h0 is None:
            h = x.new_zeros(B, self.hidden_size)  # (B, hidden)
        else:
            require_float("h0", h0)
            require_ndim("h0", h0, 2, "(B, hidden_size)")
            if tuple(h0.shape) != (B, self.hidden_size):
                raise ValueError(
                    f"h0 must have shape (B, hidden_size) = {(B, self.hidden_size)}, "
                    f"got {tuple(h0.shape)}"
                )
            require_same_dtype(x=x, h0=h0)
            h = h0
        f = _NONLINEARITIES[self.nonlinearity]
        xw = x @ self.weight_ih.T  # (B, T, hidden) W_xh x_t for every t at once
        if self.bias_ih is not None:
            xw = xw + self.bias_ih + self.bias_hh  # (B, T, hidden)
        states = []
        for t in range(T):
            h = f(h @ self.weight_hh.T + xw[:, t])  # (B, hidden)
            states.append(h)
        return torch.stack(states, dim=1)  # (B, T, hidden)

    def extra_repr(self) -> str:
        return (
            f"{self.input_size}, {self.hidden_size}, nonlinearity={self.nonlinearity!r}, "
            f"bias={self.bias_ih is not None}"
        )

    @classmethod
    def from_torch(cls, module: nn.RNN) -> "VanillaRNN":
        """A copy of a single-layer, unidirectional ``nn.RNN``'s weights (``batch_first`` either
        way; the copy always takes (B, T, input_size))."""
        if not isinstance(module, nn.RNN):
            raise ValueError(f"expected nn.RNN, got {type(module).__name__}")
        if module.num_layers != 1 or module.bidirectional:
            raise ValueError(
                "only a single-layer, unidirectional nn.RNN can be copied, "
                f"got num_layers={module.num_layers}, bidirectional={module.bidirectional}"
            )
        ref = module.weight_ih_l0
        rnn = cls(module.input_size, module.hidden_size, module.nonlinearity, bias=module.bias)
        rnn = rnn.to(device=ref.device, dtype=ref.dtype)
        with torch.no_grad():
            rnn.weight_ih.copy_(module.weight_ih_l0)
            rnn.weight_hh.copy_(module.weight_hh_l0)
            if module.bias:
                rnn.bias_ih.copy_(module.bias_ih_l0)
                rnn.bias_hh.copy_(module.bias_hh_l0)
        return rnn

"""VanillaRNN (source 001 Eq. 5.4.1) against nn.RNN and a hand-written recurrence."""

import math

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from attncourse.rnn import VanillaRNN

DT = torch.float64


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def torch_rnn(input_size, hidden_size, nonlinearity="tanh", bias=True, batch_first=True):
    return nn.RNN(
        input_size,
        hidden_size,
        nonlinearity=nonlinearity,
        bias=bias,
        batch_first=batch_first,
        dtype=DT,
    )


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("with_h0", [False, True])
def test_matches_torch_rnn(nonlinearity, bias, with_h0):
    B, T, d_in, H = 3, 6, 4, 5
    ref = torch_rnn(d_in, H, nonlinearity, bias)
    ours = VanillaRNN.from_torch(ref)
    x = torch.randn(B, T, d_in, dtype=DT) * 2
    h0 = torch.randn(B, H, dtype=DT) if with_h0 else torch.zeros(B, H, dtype=DT)
    upstream = torch.randn(B, T, H, dtype=DT)

    x1, h1 = x.clone().requires_grad_(), h0.clone().requires_grad_()
    out = ours(x1, h1) if with_h0 else ours(x1)
    (out * upstream).sum().backward()
    x2, h2 = x.clone().requires_grad_(), h0.clone().requires_grad_()
    out_ref, h_last = ref(x2, h2.unsqueeze(0))  # torch takes h0 as (num_layers, B, H)
    (out_ref * upstream).sum().backward()

    assert_close(out, out_ref)
    assert_close(out[:, -1], h_last[0])  # the last row is h_T
    assert_close(x1.grad, x2.grad)
    if with_h0:
        assert_close(h1.grad, h2.grad)
    names = ["weight_ih", "weight_hh"] + (["bias_ih", "bias_hh"] if bias else [])
    for name in names:
        assert_close(
            getattr(ours, name).grad, getattr(ref, name + "_l0").grad, msg=f"gradient of {name}"
        )
    assert sorted(n for n, _ in ours.named_parameters()) == sorted(names)


def test_from_torch_ignores_batch_first():
    ref = torch_rnn(3, 4, batch_first=False)
    ours = VanillaRNN.from_torch(ref)
    x = torch.randn(2, 5, 3, dtype=DT)  # ours is always (B, T, input)
    out_ref, _ = ref(x.transpose(0, 1))  # (T, B, H)
    assert_close(ours(x), out_ref.transpose(0, 1))


def test_linear_matches_hand_written_loop():
    B, T, d_in, H = 2, 7, 3, 4
    rnn = VanillaRNN(d_in, H, nonlinearity="linear").to(DT)
    x = torch.randn(B, T, d_in, dtype=DT)
    h0 = torch.randn(B, H, dtype=DT)
    W_hh, W_xh = rnn.weight_hh.detach(), rnn.weight_ih.detach()
    b = (rnn.bias_ih + rnn.bias_hh).detach()
    out = rnn(x, h0).detach()
    for b_idx in range(B):
        h = h0[b_idx]
        for t in range(T):
            h = W_hh @ h + W_xh @ x[b_idx, t] + b  # no nonlinearity
            assert_close(out[b_idx, t], h)


def test_linear_gradient_path_is_a_matrix_power():
    """With f = identity, dh_T/dh_1 = W_hh^(T-1): source 001 Eq. (5.4.2) without the activation."""
    T, H = 6, 3
    rnn = VanillaRNN(2, H, nonlinearity="linear", bias=False).to(DT)
    x = torch.zeros(1, T, 2, dtype=DT)
    h0 = torch.randn(1, H, dtype=DT)
    jac = torch.autograd.functional.jacobian(lambda h: rnn(x, h)[0, -1], h0)[:, 0, :]  # dh_T/dh_0
    assert_close(jac, torch.linalg.matrix_power(rnn.weight_hh.detach(), T))


def test_tanh_and_relu_apply_their_nonlinearity():
    x = torch.randn(2, 3, 4, dtype=DT) * 5
    lin = VanillaRNN(4, 6, nonlinearity="linear").to(DT)
    for name, f in (("tanh", torch.tanh), ("relu", torch.relu)):
        rnn = VanillaRNN(4, 6, nonlinearity=name).to(DT)
        rnn.load_state_dict(lin.state_dict())
        pre = x[:, 0] @ rnn.weight_ih.T + rnn.bias_ih + rnn.bias_hh  # first step from h0 = 0
        assert_close(rnn(x)[:, 0], f(pre))
        assert_close(lin(x)[:, 0], pre)


def test_init_is_uniform_in_torch_bounds():
    H = 64
    rnn = VanillaRNN(32, H)
    bound = 1 / math.sqrt(H)
    for name, p in rnn.named_parameters():
        p = p.detach()
        assert p.abs().max() <= bound, name
        assert p.abs().max() > 0.9 * bound, (
            name
        )  # spread over the whole interval, not a narrower one
        assert abs(float(p.mean())) < 0.3 * bound, name


def test_gradcheck():
    rnn = VanillaRNN(3, 4).to(DT)
    x = torch.randn(2, 4, 3, dtype=DT, requires_grad=True)
    h0 = torch.randn(2, 4, dtype=DT, requires_grad=True)
    params = {n: p.detach().clone().requires_grad_() for n, p in rnn.named_parameters()}
    names = list(params)

    def f(x, h0, *ps):
        return torch.func.functional_call(rnn, dict(zip(names, ps)), (x, h0))

    assert torch.autograd.gradcheck(f, (x, h0, *params.values()))


def test_from_torch_rejects_what_it_cannot_copy():
    with pytest.raises(ValueError, match="num_layers=2"):
        VanillaRNN.from_torch(nn.RNN(3, 4, num_layers=2))
    with pytest.raises(ValueError, match="bidirectional=True"):
        VanillaRNN.from_torch(nn.RNN(3, 4, bidirectional=True))
    with pytest.raises(ValueError, match="expected nn.RNN"):
        VanillaRNN.from_torch(nn.GRU(3, 4))


def test_bad_input():
    rnn = VanillaRNN(3, 4).to(DT)
    with pytest.raises(ValueError, match="floating-point"):
        rnn(torch.ones(2, 5, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="3-D"):
        rnn(torch.ones(5, 3, dtype=DT))
    with pytest.raises(ValueError, match="input size 3 in its last dim, got 2"):
        rnn(torch.ones(2, 5, 2, dtype=DT))
    with pytest.raises(ValueError, match=r"\(2, 4\)"):
        rnn(torch.ones(2, 5, 3, dtype=DT), torch.zeros(3, 4, dtype=DT))
    with pytest.raises(ValueError, match="one dtype"):
        rnn(torch.ones(2, 5, 3, dtype=DT), torch.zeros(2, 4))
    with pytest.raises(ValueError, match="nonlinearity"):
        VanillaRNN(3, 4, nonlinearity="sigmoid")

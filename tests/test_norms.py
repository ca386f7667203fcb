"""LayerNorm, RMSNorm and BatchNorm1d against PyTorch's built-ins, plus their defining
properties.
"""

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from attncourse.guard import forbidden_builtins
from attncourse.norms import BatchNorm1d, LayerNorm, RMSNorm

DT = torch.float64


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def randomize(*modules):
    """Give every module the same non-trivial parameters (the defaults, ones and zeros, hide
    bugs).
    """
    params = [dict(m.named_parameters()) for m in modules]
    for name, p in params[0].items():
        value = torch.randn_like(p) * 0.5 + 1.0 if name == "weight" else torch.randn_like(p)
        for ps in params:
            with torch.no_grad():
                ps[name].copy_(value)


def forward_backward(module, x, upstream):
    """Output, input gradient and parameter gradients for loss = sum(output * upstream)."""
    x = x.clone().requires_grad_(True)
    module.zero_grad()
    out = module(x)
    (out * upstream).sum().backward()
    grads = {name: p.grad.clone() for name, p in module.named_parameters()}
    return out.detach(), x.grad, grads


def assert_same_as_torch(ours, ref, x):
    upstream = torch.randn(x.shape, dtype=x.dtype)  # every norm keeps the input's shape
    with forbidden_builtins():
        out, gx, gp = forward_backward(ours, x, upstream)
    out_ref, gx_ref, gp_ref = forward_backward(ref, x, upstream)
    assert_close(out, out_ref)
    assert_close(gx, gx_ref)
    assert gp.keys() == gp_ref.keys()
    for name in gp_ref:
        assert_close(gp[name], gp_ref[name], msg=f"gradient of {name}")


# ----------------------------------------------------------------------------- LayerNorm


@pytest.mark.parametrize(
    "normalized_shape, x_shape",
    [(8, (4, 8)), (8, (2, 3, 8)), ((3, 5), (2, 3, 5)), ((2, 3, 4), (2, 2, 3, 4)), (1, (3, 1))],
)
@pytest.mark.parametrize("affine, bias", [(True, True), (True, False), (False, True)])
def test_layernorm_matches_torch(normalized_shape, x_shape, affine, bias):
    ours = LayerNorm(normalized_shape, elementwise_affine=affine, bias=bias).to(DT)
    ref = nn.LayerNorm(normalized_shape, elementwise_affine=affine, bias=bias, dtype=DT)
    randomize(ours, ref)
    x = torch.randn(x_shape, dtype=DT) * 3 + 1
    assert_same_as_torch(ours, ref, x)


def test_layernorm_eps_matters_like_torch():
    # a tiny-variance input: sqrt(var + eps) is dominated by eps, so a wrong eps shows up
    x = torch.randn(4, 6, dtype=DT) * 1e-3
    for eps in (1e-5, 1e-2):
        assert_close(LayerNorm(6, eps=eps).to(DT)(x), nn.LayerNorm(6, eps=eps, dtype=DT)(x))


def test_layernorm_output_is_standardized():
    x = torch.randn(5, 16, dtype=DT) * 7 - 3
    y = LayerNorm(16, eps=0.0).to(DT)(x)
    assert_close(y.mean(-1), torch.zeros(5, dtype=DT))
    assert_close(y.pow(2).mean(-1), torch.ones(5, dtype=DT))  # biased variance 1


def test_layernorm_float32_and_half():
    x = torch.randn(3, 10) * 4
    assert_close(LayerNorm(10)(x), nn.LayerNorm(10)(x))
    xh = x.half()
    out = LayerNorm(10).half()(xh)
    assert out.dtype == torch.float16
    assert_close(out, nn.LayerNorm(10).half()(xh), atol=2e-3, rtol=2e-3)


def test_layernorm_state_dict_both_ways():
    ref = nn.LayerNorm((3, 4), dtype=DT)
    ours = LayerNorm((3, 4)).to(DT)
    randomize(ref)
    ours.load_state_dict(ref.state_dict())  # torch -> ours
    x = torch.randn(2, 3, 4, dtype=DT)
    assert_close(ours(x), ref(x))
    randomize(ours)
    back = nn.LayerNorm((3, 4), dtype=DT)
    back.load_state_dict(ours.state_dict())  # ours -> torch
    assert_close(back(x), ours(x))
    for affine, bias in ((False, True), (True, False)):
        assert (
            LayerNorm(4, elementwise_affine=affine, bias=bias).state_dict().keys()
            == nn.LayerNorm(4, elementwise_affine=affine, bias=bias).state_dict().keys()
        )


def test_layernorm_gradcheck():
    ln = LayerNorm((2, 3)).to(DT)
    randomize(ln)
    x = torch.randn(4, 2, 3, dtype=DT, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda x, w, b: torch.func.functional_call(ln, {"weight": w, "bias": b}, (x,)),
        (x, ln.weight.detach().clone().requires_grad_(), ln.bias.detach().clone().requires_grad_()),
    )


def test_layernorm_invariance_conditions():
    """Source 004 Eq. (5.3.9) LN(a x + b) = LN(x) holds for a scalar a > 0 and a scalar b only."""
    ln = LayerNorm(8, eps=1e-12).to(DT)  # gamma = 1, beta = 0: y is x_hat itself
    x = torch.randn(6, 8, dtype=DT)
    for a, b in ((2.5, 0.0), (0.3, -4.0), (10.0, 7.0)):
        assert_close(ln(a * x + b), ln(x))
    assert_close(ln(-2.0 * x), -ln(x))  # a < 0 flips the sign
    assert not torch.allclose(ln(-2.0 * x), ln(x), atol=1e-3)
    b_vec = torch.linspace(-2, 2, 8, dtype=DT)  # a different shift for every feature
    assert not torch.allclose(ln(x + b_vec), ln(x), atol=1e-3)
    # "up to eps": once a^2 * var is comparable to eps, the output shrinks
    ln_default = LayerNorm(8).to(DT)
    assert ln_default(1e-3 * x).abs().max() < 0.5 * ln_default(x).abs().max()


@pytest.mark.parametrize(
    "bad, match",
    [
        (torch.ones(2, 8, dtype=torch.long), "floating-point"),
        (torch.ones(2, 7, dtype=DT), r"normalized shape \(8,\)"),
    ],
)
def test_layernorm_bad_input(bad, match):
    with pytest.raises(ValueError, match=match):
        LayerNorm(8).to(DT)(bad)


def test_layernorm_bad_rank_and_shape():
    with pytest.raises(ValueError, match="at least 2-D"):
        LayerNorm((3, 4)).to(DT)(torch.ones(4, dtype=DT))
    with pytest.raises(ValueError, match=r"trailing shape \(4, 3\)"):
        LayerNorm((3, 4)).to(DT)(torch.ones(2, 4, 3, dtype=DT))
    with pytest.raises(ValueError, match="normalized_shape"):
        LayerNorm(0)


# ----------------------------------------------------------------------------- RMSNorm


@pytest.mark.parametrize(
    "normalized_shape, x_shape", [(8, (4, 8)), (8, (2, 3, 8)), ((3, 5), (2, 3, 5))]
)
@pytest.mark.parametrize("eps", [None, 1e-6, 0.5])
@pytest.mark.parametrize("affine", [True, False])
def test_rmsnorm_matches_torch(normalized_shape, x_shape, eps, affine):
    ours = RMSNorm(normalized_shape, eps=eps, elementwise_affine=affine).to(DT)
    ref = nn.RMSNorm(normalized_shape, eps=eps, elementwise_affine=affine, dtype=DT)
    randomize(ours, ref)
    x = torch.randn(x_shape, dtype=DT) * 2
    assert_same_as_torch(ours, ref, x)


def test_rmsnorm_default_eps_is_computation_type_epsilon():
    # tiny inputs: mean(x^2) is comparable to the default eps, so the eps choice is visible
    x64 = torch.full((2, 4), 1e-8, dtype=DT)
    expected = x64 / torch.sqrt(x64.pow(2).mean(-1, keepdim=True) + torch.finfo(DT).eps)
    assert_close(RMSNorm(4).to(DT)(x64), expected)
    assert_close(RMSNorm(4).to(DT)(x64), nn.RMSNorm(4, dtype=DT)(x64))
    # fp16 input: nn.RMSNorm uses float32's eps (the type it computes in), not float16's
    x16 = torch.full((2, 4), 1e-3, dtype=torch.float16)
    ours = RMSNorm(4).half()(x16)
    assert_close(ours, nn.RMSNorm(4).half()(x16))
    with_fp16_eps = x16.float() / torch.sqrt(
        x16.float().pow(2).mean(-1, keepdim=True) + torch.finfo(torch.float16).eps
    )
    assert not torch.allclose(ours.float(), with_fp16_eps, atol=0.1)
    x32 = torch.full((2, 4), 1e-4)
    assert_close(RMSNorm(4)(x32), nn.RMSNorm(4)(x32))


def test_rmsnorm_unit_rms_and_scale_invariance():
    rms = RMSNorm(16, eps=0.0).to(DT)
    x = torch.randn(5, 16, dtype=DT) + 3
    y = rms(x)
    assert_close(y.pow(2).mean(-1), torch.ones(5, dtype=DT))
    assert_close(rms(4.0 * x), y)  # RMSNorm is invariant to positive rescaling
    assert not torch.allclose(rms(x + 1.0), y, atol=1e-3)  # but not to shifts (no mean removed)


def test_rmsnorm_state_dict_both_ways():
    ref = nn.RMSNorm((2, 5), dtype=DT)
    ours = RMSNorm((2, 5)).to(DT)
    randomize(ref)
    ours.load_state_dict(ref.state_dict())
    x = torch.randn(3, 2, 5, dtype=DT)
    assert_close(ours(x), ref(x))
    randomize(ours)
    back = nn.RMSNorm((2, 5), dtype=DT)
    back.load_state_dict(ours.state_dict())
    assert_close(back(x), ours(x))
    assert (
        RMSNorm(4, elementwise_affine=False).state_dict().keys()
        == nn.RMSNorm(4, elementwise_affine=False).state_dict().keys()
    )


def test_rmsnorm_gradcheck():
    rms = RMSNorm(6, eps=1e-6).to(DT)
    x = torch.randn(3, 6, dtype=DT, requires_grad=True)
    w = (torch.randn(6, dtype=DT) + 1).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda x, w: torch.func.functional_call(rms, {"weight": w}, (x,)), (x, w)
    )


def test_rmsnorm_bad_input():
    with pytest.raises(ValueError, match="floating-point"):
        RMSNorm(4)(torch.ones(2, 4, dtype=torch.int32))
    with pytest.raises(ValueError, match=r"trailing shape \(5,\)"):
        RMSNorm(4)(torch.ones(2, 5))
    with pytest.raises(ValueError, match="at least 2-D"):
        RMSNorm((2, 4))(torch.ones(4))


# ----------------------------------------------------------------------------- BatchNorm1d


@pytest.mark.parametrize("x_shape", [(6, 4), (5, 4, 7), (2, 4, 1)])
@pytest.mark.parametrize("affine", [True, False])
def test_batchnorm_training_matches_torch(x_shape, affine):
    ours = BatchNorm1d(4, affine=affine).to(DT).train()
    ref = nn.BatchNorm1d(4, affine=affine, dtype=DT).train()
    randomize(ours, ref)
    x = torch.randn(x_shape, dtype=DT) * 2 + 0.5
    assert_same_as_torch(ours, ref, x)
    assert_close(ours.running_mean, ref.running_mean)
    assert_close(ours.running_var, ref.running_var)


@pytest.mark.parametrize("momentum", [0.1, 0.5, None])
@pytest.mark.parametrize("x_shape", [(8, 3), (4, 3, 5)])
def test_batchnorm_running_stats_then_eval(momentum, x_shape):
    ours = BatchNorm1d(3, momentum=momentum).to(DT)
    ref = nn.BatchNorm1d(3, momentum=momentum, dtype=DT)
    randomize(ours, ref)
    for step in range(5):
        x = torch.randn(x_shape, dtype=DT) * (step + 1) + step  # shifting statistics
        assert_close(ours(x), ref(x))
        assert_close(ours.running_mean, ref.running_mean)
        assert_close(ours.running_var, ref.running_var)
        assert int(ours.num_batches_tracked) == int(ref.num_batches_tracked) == step + 1
    ours.eval(), ref.eval()
    x = torch.randn(x_shape, dtype=DT) * 3
    assert_same_as_torch(ours, ref, x)
    before = ours.running_mean.clone()
    ours(x)
    assert_close(ours.running_mean, before, rtol=0, atol=0)  # eval never updates the estimates
    assert int(ours.num_batches_tracked) == 5


def test_batchnorm_cumulative_average_is_the_plain_mean():
    bn = BatchNorm1d(2, momentum=None).to(DT)
    batches = [torch.randn(6, 2, dtype=DT) + k for k in range(4)]
    for x in batches:
        bn(x)
    assert_close(bn.running_mean, torch.stack([x.mean(0) for x in batches]).mean(0))
    assert_close(bn.running_var, torch.stack([x.var(0, unbiased=True) for x in batches]).mean(0))


def test_batchnorm_eval_uses_running_statistics():
    bn = BatchNorm1d(3).to(DT).eval()
    with torch.no_grad():
        bn.running_mean.copy_(torch.tensor([1.0, -2.0, 0.5]))
        bn.running_var.copy_(torch.tensor([4.0, 0.25, 9.0]))
        bn.weight.copy_(torch.tensor([2.0, 1.0, -1.0]))
        bn.bias.copy_(torch.tensor([0.0, 1.0, 3.0]))
    x = torch.randn(5, 3, dtype=DT)
    expected = (x - bn.running_mean) / torch.sqrt(bn.running_var + bn.eps) * bn.weight + bn.bias
    assert_close(bn(x), expected)


def test_batchnorm_without_running_stats():
    ours = BatchNorm1d(3, track_running_stats=False).to(DT)
    ref = nn.BatchNorm1d(3, track_running_stats=False, dtype=DT)
    randomize(ours, ref)
    assert ours.state_dict().keys() == ref.state_dict().keys()
    x = torch.randn(6, 3, 4, dtype=DT)
    ours.eval(), ref.eval()  # still batch statistics: there are no estimates to use
    assert_same_as_torch(ours, ref, x)


def test_batchnorm_state_dict_both_ways():
    ref = nn.BatchNorm1d(4, dtype=DT)
    for _ in range(3):
        ref(torch.randn(8, 4, dtype=DT) * 3 + 1)
    randomize(ref)
    ours = BatchNorm1d(4).to(DT)
    ours.load_state_dict(ref.state_dict())  # torch -> ours
    assert int(ours.num_batches_tracked) == 3
    x = torch.randn(5, 4, dtype=DT)
    ours.eval(), ref.eval()
    assert_close(ours(x), ref(x))
    ours.train()
    for _ in range(2):
        ours(torch.randn(8, 4, dtype=DT) - 2)
    randomize(ours)
    back = nn.BatchNorm1d(4, dtype=DT)
    back.load_state_dict(ours.state_dict())  # ours -> torch
    assert int(back.num_batches_tracked) == 5
    ours.eval(), back.eval()
    assert_close(back(x), ours(x))
    assert_close(back.running_var, ours.running_var)
    assert (
        BatchNorm1d(4, affine=False).state_dict().keys()
        == nn.BatchNorm1d(4, affine=False).state_dict().keys()
    )


@pytest.mark.parametrize("x_shape", [(7, 3), (3, 3, 4)])
def test_batchnorm_gradcheck(x_shape):
    bn = BatchNorm1d(3, track_running_stats=False).to(DT)
    x = torch.randn(x_shape, dtype=DT, requires_grad=True)
    w = (torch.randn(3, dtype=DT) + 1).requires_grad_()
    b = torch.randn(3, dtype=DT, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda x, w, b: torch.func.functional_call(bn, {"weight": w, "bias": b}, (x,)), (x, w, b)
    )


def test_batchnorm_batch_of_one():
    ours = BatchNorm1d(3).to(DT)
    ref = nn.BatchNorm1d(3, dtype=DT)
    x = torch.randn(1, 3, dtype=DT)
    for shape in ((1, 3), (1, 3, 1)):
        with pytest.raises(ValueError, match="more than one value per channel"):
            ours(x.view(shape))
    with pytest.raises(ValueError):  # torch refuses too
        ref(x)
    assert int(ours.num_batches_tracked) == 0  # the failed call left no trace
    ours.eval(), ref.eval()
    assert_close(ours(x), ref(x))  # one sample is fine with the running statistics
    ours.train()
    x_seq = torch.randn(1, 3, 5, dtype=DT)  # one sequence, but five values per channel
    ref.train()
    assert_close(ours(x_seq), ref(x_seq))


def test_batchnorm_bad_input():
    bn = BatchNorm1d(4).to(DT)
    with pytest.raises(ValueError, match="floating-point"):
        bn(torch.ones(3, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="must have 4 channels in dim 1, got 5"):
        bn(torch.ones(3, 5, dtype=DT))
    with pytest.raises(ValueError, match="2-D or 3-D"):
        bn(torch.ones(4, dtype=DT))
    with pytest.raises(ValueError, match="2-D or 3-D"):
        bn(torch.ones(2, 4, 3, 3, dtype=DT))
    with pytest.raises(ValueError, match="momentum"):
        BatchNorm1d(4, momentum=1.5)

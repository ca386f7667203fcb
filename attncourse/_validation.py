"""Input checks shared by every mechanism: each raises ``ValueError`` saying what was
expected and what was given, so a learner sees the mistake, not a stack of matmul errors."""

import torch


def require_tensor(name: str, x) -> None:
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")


def require_float(name: str, x) -> None:
    """Attention and normalization are defined on real numbers: reject int/bool tensors."""
    require_tensor(name, x)
    if not x.is_floating_point():
        raise ValueError(
            f"{name} must be a floating-point tensor, got dtype {x.dtype} "
            f"(convert with {name}.float() or {name}.double())"
        )


def require_ndim(name: str, x: torch.Tensor, allowed, layout: str) -> None:
    """``allowed`` is an int (exact rank), a tuple of ranks, or a minimum rank as (n, None)."""
    if isinstance(allowed, int):
        ok, expected = x.dim() == allowed, f"{allowed}-D"
    elif isinstance(allowed, tuple) and len(allowed) == 2 and allowed[1] is None:
        ok, expected = x.dim() >= allowed[0], f"at least {allowed[0]}-D"
    else:
        ok, expected = x.dim() in allowed, " or ".join(f"{n}-D" for n in allowed)
    if not ok:
        raise ValueError(f"{name} must be {expected} {layout}, got shape {tuple(x.shape)}")


def require_size(name: str, x: torch.Tensor, dim: int, expected: int, what: str) -> None:
    if x.shape[dim] != expected:
        raise ValueError(
            f"{name} has {what} {x.shape[dim]} (shape {tuple(x.shape)}), expected {expected}"
        )


def require_same_dtype(**tensors: torch.Tensor) -> None:
    dtypes = {name: t.dtype for name, t in tensors.items()}
    if len(set(dtypes.values())) > 1:
        listed = ", ".join(f"{n}: {d}" for n, d in dtypes.items())
        raise ValueError(f"all inputs must share one dtype, got {listed}")


def require_positive(name: str, value: float) -> None:
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {value}")


def require_positive_int(name: str, value) -> None:
    """A count (length, batch size, steps, depth): an ``int`` >= 1, not a bool or a float."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")


def require_choice(name: str, value, choices) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")


def broadcast_batch(names: tuple, *shapes) -> torch.Size:
    """Broadcast the leading (batch) dimensions of several tensors, or say which ones clash."""
    try:
        return torch.broadcast_shapes(*shapes)
    except RuntimeError:
        listed = ", ".join(f"{n} {tuple(s)}" for n, s in zip(names, shapes))
        raise ValueError(f"batch dimensions do not broadcast: {listed}") from None


def check_mask(mask, scores_shape: torch.Size) -> None:
    """A mask is boolean (True = may attend) or floating (added to the scores)."""
    require_tensor("mask", mask)
    if mask.dtype != torch.bool and not mask.is_floating_point():
        raise ValueError(
            "mask must be bool (True = may attend) or float (added to the scores), "
            f"got {mask.dtype}"
        )
    try:
        shape = torch.broadcast_shapes(mask.shape, scores_shape)
    except RuntimeError:
        shape = None
    if shape != torch.Size(scores_shape):
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} does not broadcast to the scores' shape "
            f"{tuple(scores_shape)} (..., T queries, S keys)"
        )

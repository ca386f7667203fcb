"""The messages between the grader and the process that runs a submission: plain data only.

A message is a JSON header and, for the values it carries, NumPy arrays in ``.npz`` form, both
length-prefixed; arrays are read back with ``allow_pickle=False``, so nothing the submission sends
can make the grader run code. Values are tensors, numbers (numpy's scalars arrive as Python's),
strings, None, and tuples or lists of them (``encode`` / ``decode``); anything else, a tensor
subclass included, travels as a placeholder whose type has the value's type's name, as the
visible check names it. Every read is bounded (``MAX_HEADER`` for the JSON, ``MAX_MESSAGE`` and
``MAX_ARRAYS`` for the arrays) and names what was wrong with a malformed message. With a
``deadline`` (the grader's side), no write and no read waits past it: a peer that stops reading
or writing halfway raises ``Deadline``, never blocks.

Only the grader's own inputs may be richer: ``encode(..., pickle=True)`` sends anything else
(a sublayer, a module) pickled, for the sandbox to rebuild; the grader's ``decode`` refuses
pickled values, so the direction that matters stays plain data.
"""

from __future__ import annotations

import io
import json
import numbers
import os
import pickle as _pickle
import select
import struct
import time
import zipfile

import numpy as np
import torch

MAX_MESSAGE = 256 << 20  # bytes: an answer larger than this is refused
MAX_HEADER = 4 << 20  # bytes of JSON: the description of the values, never the values
MAX_ARRAYS = 4096  # arrays in one message
_LENGTH = struct.Struct(">Q")


class ProtocolError(Exception):
    """A message that is not what the protocol allows (too large, malformed, cut short)."""


class Deadline(TimeoutError):
    """The other side did not take or give a whole message before the deadline."""


class Placeholder:
    """What a value of an unsupported type becomes on the other side: it only names the type."""

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<a {self.type_name}>"


# ----------------------------------------------------------------------------------- values

_DTYPES = {
    torch.float64: "float64",
    torch.float32: "float32",
    torch.float16: "float16",
    torch.int64: "int64",
    torch.int32: "int32",
    torch.int16: "int16",
    torch.int8: "int8",
    torch.uint8: "uint8",
    torch.bool: "bool",
}
_TORCH_DTYPES = {name: dtype for dtype, name in _DTYPES.items()}
_TORCH_DTYPES["bfloat16"] = torch.bfloat16  # sent as float32, restored exactly


def encode(value, arrays: dict[str, np.ndarray], pickle: bool = False):
    """A JSON-able description of ``value``; its tensors go into ``arrays``. ``pickle``: values
    of other types are pickled (the grader's inputs only)."""
    if isinstance(value, torch.Tensor) and type(value) is not torch.Tensor:
        # a subclass (nn.Parameter, one of the learner's): the checks refuse it by its name
        return {"type": "other", "name": type(value).__name__}
    if isinstance(value, torch.Tensor):
        tensor = value.detach().cpu()
        name = "bfloat16" if tensor.dtype == torch.bfloat16 else _DTYPES.get(tensor.dtype)
        if name is None:
            return {"type": "other", "name": f"tensor of dtype {tensor.dtype}"}
        key = f"a{len(arrays)}"
        arrays[key] = (tensor.float() if name == "bfloat16" else tensor).numpy()
        return {"type": "tensor", "key": key, "dtype": name}
    if value is None or isinstance(value, bool | str):
        return {"type": "plain", "value": value}
    if isinstance(value, numbers.Integral):  # numpy's integers too, as the checks take them
        return (
            {"type": "plain", "value": int(value)}
            if abs(value) < 2**63
            else {"type": "other", "name": "int"}
        )
    if isinstance(value, float):  # numpy's float64 too: repr(float(...)) reads back everywhere
        return {"type": "float", "value": repr(float(value))}  # keeps nan and inf
    if isinstance(value, tuple | list):
        kind = "tuple" if isinstance(value, tuple) else "list"
        return {"type": kind, "items": [encode(v, arrays, pickle) for v in value]}
    if pickle:
        key = f"a{len(arrays)}"
        arrays[key] = np.frombuffer(_pickle.dumps(value), dtype=np.uint8)
        return {"type": "pickled", "key": key}
    return {"type": "other", "name": type(value).__name__}


def decode(description, arrays: dict[str, np.ndarray], depth: int = 0, pickled: bool = False):
    """The value ``encode`` described; a malformed description raises ``ProtocolError``.
    ``pickled``: accept pickled values (the sandbox reading the grader's inputs only)."""
    if depth > 32 or not isinstance(description, dict):
        raise ProtocolError("a value nested too deep, or not described")
    kind = description.get("type")
    if kind == "tensor":
        key, dtype = description.get("key"), _TORCH_DTYPES.get(description.get("dtype"))
        if key not in arrays or dtype is None:
            raise ProtocolError("a tensor whose data is missing")
        try:
            return torch.from_numpy(np.array(arrays[key])).to(dtype)
        except (TypeError, ValueError, RuntimeError) as error:
            raise ProtocolError(f"a tensor that does not load ({type(error).__name__})") from None
    if kind == "plain":
        value = description.get("value")
        if value is not None and not isinstance(value, bool | int | str):
            raise ProtocolError("a plain value of another type")
        return value
    if kind == "float":
        try:
            return float(description.get("value"))
        except (TypeError, ValueError):
            raise ProtocolError("a float that is not a number") from None
    if kind in ("tuple", "list"):
        items = description.get("items")
        if not isinstance(items, list):
            raise ProtocolError("a sequence without items")
        decoded = [decode(item, arrays, depth + 1, pickled) for item in items]
        return tuple(decoded) if kind == "tuple" else decoded
    if kind == "other":  # named as the value's own type, as a check's message names it
        name = str(description.get("name", "value"))[:80].replace("\0", "")
        return type(name, (Placeholder,), {})(name)
    if kind == "pickled" and pickled and description.get("key") in arrays:
        return _pickle.loads(arrays[description["key"]].tobytes())
    raise ProtocolError(f"an unknown kind of value {str(kind)[:40]!r}")


# --------------------------------------------------------------------------------- messages


def _wait(fd: int, event: int, deadline: float | None) -> None:
    """Until ``fd`` is ready for ``event`` (``select.POLLIN`` / ``POLLOUT``), or ``Deadline``."""
    if deadline is None:
        return
    poller = select.poll()
    poller.register(fd, event)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise Deadline("the other side did not answer in time")
        if poller.poll(max(1, int(left * 1000))):
            return


def _write_all(fd: int, data: bytes, deadline: float | None = None) -> None:
    view = memoryview(data)
    while view:
        _wait(fd, select.POLLOUT, deadline)
        try:
            written = os.write(fd, view)
        except BlockingIOError:  # a non-blocking pipe that filled up again
            continue
        view = view[written:]


def _read_exactly(fd: int, size: int, deadline: float | None = None) -> bytes:
    chunks, left = [], size
    while left:
        _wait(fd, select.POLLIN, deadline)
        try:
            chunk = os.read(fd, min(left, 1 << 20))
        except BlockingIOError:
            continue
        if not chunk:
            raise EOFError("the other side closed the channel")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def send(
    fd: int,
    header: dict,
    arrays: dict[str, np.ndarray] | None = None,
    deadline: float | None = None,
    header_limit: int = MAX_HEADER,
) -> None:
    """Write one message: the header as JSON, then the arrays as ``.npz`` (possibly empty);
    ``deadline`` (a ``time.monotonic()`` time): ``Deadline`` rather than wait past it (``fd``
    should then be non-blocking). ``header_limit``: larger only for the grader's requests (an
    answer cell's source), which the sandbox reads with the same limit."""
    body = json.dumps(header).encode()
    if len(body) > header_limit:
        raise ProtocolError(f"a header of {len(body)} bytes is too large")
    buffer = io.BytesIO()
    if arrays:
        np.savez(buffer, **arrays)
    payload = buffer.getvalue()
    if len(body) + len(payload) > MAX_MESSAGE:
        raise ProtocolError(f"a message of {len(body) + len(payload)} bytes is too large")
    data = _LENGTH.pack(len(body)) + body + _LENGTH.pack(len(payload)) + payload
    _write_all(fd, data, deadline)


def receive(
    fd: int,
    limit: int = MAX_MESSAGE,
    deadline: float | None = None,
    header_limit: int = MAX_HEADER,
) -> tuple[dict, dict[str, np.ndarray]]:
    """Read one message; ``EOFError`` if the other side is gone, ``ProtocolError`` if malformed,
    ``Deadline`` if it is not all there by ``deadline``."""
    (size,) = _LENGTH.unpack(_read_exactly(fd, _LENGTH.size, deadline))
    if size > header_limit:
        raise ProtocolError(f"a header of {size} bytes is too large")
    try:
        header = json.loads(_read_exactly(fd, size, deadline))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ProtocolError("a header that is not JSON (or nested too deep)") from None
    if not isinstance(header, dict):
        raise ProtocolError("a header that is not an object")
    (size,) = _LENGTH.unpack(_read_exactly(fd, _LENGTH.size, deadline))
    if size > limit:
        raise ProtocolError(f"a value of {size} bytes is too large")
    payload = _read_exactly(fd, size, deadline)
    arrays = {}
    if payload:
        try:
            with zipfile.ZipFile(io.BytesIO(payload)) as archive:  # no zip bomb: sizes first
                entries = archive.infolist()
                if len(entries) > MAX_ARRAYS:
                    raise ProtocolError(f"more than {MAX_ARRAYS} arrays")
                if sum(info.file_size for info in entries) > limit:
                    raise ProtocolError("arrays too large once unpacked")
            with np.load(io.BytesIO(payload), allow_pickle=False) as npz:
                arrays = {key: npz[key] for key in npz.files}
        except ProtocolError:
            raise
        except Exception as error:  # a malformed archive is the sender's fault, never a crash
            raise ProtocolError(f"arrays that do not load ({type(error).__name__})") from None
    return header, arrays

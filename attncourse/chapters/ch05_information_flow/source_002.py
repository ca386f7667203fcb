"""Run source 002's code blocks as printed (``SOURCE_BLOCKS``) and report what happens.

``run_source_block(name, call=None, extra=None)`` executes a block's text unchanged in a fresh
namespace (plus ``extra`` names, for what a block uses without defining or importing it), then
calls ``call(namespace)`` if given (most blocks only define a function), and returns a
``BlockRun``: whether it ran, the exception it raised, what it printed and what it returned.
``seaborn_stand_in`` replaces the one library the blocks import that the course does not install.
"""

from __future__ import annotations

import contextlib
import io
import sys
import types
import warnings
from typing import Any, NamedTuple

from .source_002_text import SECTIONS, SOURCE_BLOCKS


class BlockRun(NamedTuple):
    name: str
    ok: bool
    error: str | None  # "NameError: name 'zeros' is not defined"
    printed: str  # what the block printed before it finished or failed
    result: Any  # what ``call`` returned (None if it failed)

    def summary(self) -> str:
        lines = self.printed.count("\n")
        if self.ok:
            what = type(self.result).__name__
            if isinstance(self.result, dict):
                what = f"a dict of {len(self.result)} entries"
            return f"runs; returns {what}" + (f" (printed {lines} lines)" if lines else "")
        return f"{self.error}" + (f" (after printing {lines} lines)" if lines else "")


def run_source_block(name: str, call=None, extra: dict | None = None) -> BlockRun:
    """Execute source 002's block ``name`` as printed, then ``call(namespace)`` if given."""
    namespace: dict = {"__name__": f"source_002_{name}"}
    namespace.update(extra or {})
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. matplotlib's missing CJK glyphs
            exec(compile(SOURCE_BLOCKS[name], f"<source 002 {SECTIONS[name]}>", "exec"), namespace)
            result = call(namespace) if call is not None else None
    except Exception as error:  # what the block raises is the finding
        return BlockRun(name, False, f"{type(error).__name__}: {error}", printed.getvalue(), None)
    return BlockRun(name, True, None, printed.getvalue(), result)


def _heatmap(data, xticklabels=None, yticklabels=None, cmap=None, annot=False, fmt=".2g", **_):
    """seaborn.heatmap's layout: cell (i, j) covers [j, j + 1] × [i, i + 1], row 0 at the top,
    tick labels at the cell centres, values written in the cells when ``annot``."""
    import matplotlib.pyplot as plt
    import numpy as np

    values = np.asarray(data, dtype=float)
    ax = plt.gca()
    mesh = ax.pcolormesh(values, cmap=cmap)
    ax.set_xlim(0, values.shape[1])
    ax.set_ylim(values.shape[0], 0)  # row 0 at the top, as seaborn draws it
    ax.set_xticks(np.arange(values.shape[1]) + 0.5, xticklabels or [])
    ax.set_yticks(np.arange(values.shape[0]) + 0.5, yticklabels or [])
    if annot:
        for (i, j), v in np.ndenumerate(values):
            ax.text(j + 0.5, i + 0.5, format(v, fmt), ha="center", va="center", fontsize=7)
    plt.colorbar(mesh, ax=ax)
    return ax


@contextlib.contextmanager
def seaborn_stand_in():
    """While active, ``import seaborn`` gives a module whose ``heatmap`` draws as seaborn's does
    (same cell coordinates), so source 002's plotting block runs without seaborn installed. An
    installed seaborn is shadowed too, so the figure is the same everywhere."""
    module = types.ModuleType("seaborn")
    module.heatmap = _heatmap
    saved = sys.modules.get("seaborn")
    sys.modules["seaborn"] = module
    try:
        yield module
    finally:
        if saved is None:
            sys.modules.pop("seaborn", None)
        else:
            sys.modules["seaborn"] = saved


def source_entropy(weights) -> float:
    """The entropy the source's ``analyze_flow_statistics`` calls but never defines
    (``calculate_attention_entropy``), read as the mean row entropy in nats (Eq. 5.4.6)."""
    from ...metrics import attention_entropy

    return float(attention_entropy(weights).mean())

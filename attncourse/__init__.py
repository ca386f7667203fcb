"""attncourse: every attention and normalization mechanism of the course, from scratch.

The package holds three kinds of code, apart:

* **Mechanisms** (this top level; usable outside the course, never importing chapter code):
  ``attention`` (softmax, scaled dot-product, multi-head / GQA, additive, Luong, gated, linear,
  chunked, sparse), ``masks``, ``positional``, ``norms``, ``blocks``, ``rnn``, ``flow`` (how
  information moves through attention maps), ``metrics``, ``losses``, ``reparam``; with
  ``guard`` (the built-ins refused inside a from-scratch exercise), ``threads`` and ``viz`` (the
  widget figure every chapter draws with).
* **Chapters** (``attncourse.chapters``): each notebook's experiments, data and widgets.
* **Exercises** (``attncourse.exercises``): the check engine and each chapter's checks.
* **Classroom** (``attncourse.classroom``): the ``attncourse`` command, release and grading.

One chapter number links a chapter's pieces:

== ====================================== ======================================== ========
NN notebook (``notebooks/``)               code (``attncourse.chapters.``)          checks
== ====================================== ======================================== ========
00 ``00_how_to_use``                       ``ch00_how_to_use``                      ``ch00``
01 ``01_attention_as_selection``           ``ch01_attention_as_selection``          ``ch01``
02 ``02_seq2seq_bottleneck``               ``ch02_seq2seq_bottleneck``              ``ch02``
03 ``03_entropy_and_temperature``          ``ch03_entropy_and_temperature``         ``ch03``
04 ``04_gradient_paths``                   ``ch04_gradient_paths``                  ``ch04``
05 ``05_information_flow``                 ``ch05_information_flow``                ``ch05``
06 ``06_multi_head_information``           ``ch06_multi_head_information``          ``ch06``
07 ``07_positional_encoding``              ``ch07_positional_encoding``             ``ch07``
08 ``08_residual_highway_normalization``   ``ch08_residual_highway_normalization``  ``ch08``
09 ``09_pre_ln_vs_post_ln``                ``ch09_pre_ln_vs_post_ln``               ``ch09``
10 ``10_efficient_gated_attention``        ``ch10_efficient_gated_attention``       ``ch10``
== ====================================== ======================================== ========

The checks are ``attncourse.exercises.chNN``; the tests are ``tests/chapters/test_chNN_*.py`` and
``tests/exercises/test_chNN.py``; ``scripts/train_chNN.py`` makes a chapter's shipped weights.
"""

import importlib

# The mechanisms load on first use (``attncourse.attention``, or ``from attncourse import ...``),
# so that the ``attncourse`` command starts without importing PyTorch when it does not need it
# (``attncourse start``).
_MODULES = (
    "attention",
    "blocks",
    "flow",
    "guard",
    "losses",
    "masks",
    "metrics",
    "norms",
    "positional",
    "reparam",
    "rnn",
)


def __getattr__(name):
    if name in _MODULES:
        module = importlib.import_module(f".{name}", __name__)
        globals()[name] = module
        return module
    raise AttributeError(f"module 'attncourse' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_MODULES))


__version__ = "0.1.0"
__all__ = list(_MODULES)

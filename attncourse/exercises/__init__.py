"""The exercises' checks: ``engine`` (``check_function``, ``Case``, the from-scratch guard) and one
module of checks per chapter, ``chNN`` for notebook ``NN_*``. A graded test cell imports
``attncourse.exercises.chNN`` and reloads it (and the engine) before its hidden tests run.
"""

import importlib
import pkgutil
import re

# the modules besides the checks that speak to the learner at run time, each through
# ``attncourse.i18n.say`` and each listing what it says in its ``SENTENCES``: the refusals, the
# grader's notes and reports, the widgets' labels and captions
SPEAKERS = (
    "attncourse.guard",
    "attncourse.exercises.scan",
    "attncourse.classroom.submission",
    "attncourse.classroom.marking",
    "attncourse.classroom.feedback",
    "attncourse.chapters.ch01_attention_as_selection",
    "attncourse.chapters.ch02_seq2seq_bottleneck.widget",
    "attncourse.chapters.ch03_entropy_and_temperature.widget",
    "attncourse.chapters.ch04_gradient_paths.widget",
    "attncourse.chapters.ch05_information_flow.widget",
    "attncourse.chapters.ch06_multi_head_information.widget",
    "attncourse.chapters.ch07_positional_encoding.widget",
    "attncourse.chapters.ch08_residual_highway_normalization.widget",
    "attncourse.chapters.ch09_pre_ln_vs_post_ln.widget",
    "attncourse.chapters.ch10_efficient_gated_attention.widget",
)


def messages() -> list[str]:
    """Every sentence the course says at run time that ``attncourse.i18n.say`` translates, in a
    fixed order: the engine's sentences; each chapter's checks' named mistakes, case labels,
    hints and error notes, and what its hint functions say (its ``SENTENCES``); and the
    ``SENTENCES`` of the ``SPEAKERS``."""
    from . import engine

    texts = list(engine.SENTENCES)
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not re.fullmatch(r"ch\d\d", info.name):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for obj in vars(module).values():
            if isinstance(obj, engine.Exercise):
                texts += engine.messages_of(obj)
        texts += getattr(module, "SENTENCES", ())
    for name in SPEAKERS:
        texts += importlib.import_module(name).SENTENCES
    return list(dict.fromkeys(texts))

"""The exercises' checks: ``engine`` (``check_function``, ``Case``, the from-scratch guard) and one
module of checks per chapter, ``chNN`` for notebook ``NN_*``. A graded test cell imports
``attncourse.exercises.chNN`` and reloads it (and the engine) before its hidden tests run.
"""

import importlib
import pkgutil
import re


def messages() -> list[str]:
    """Every message a check can say that ``attncourse.i18n.say`` translates: the engine's
    sentences and each exercise's named mistakes, hints and error notes, in a fixed order."""
    from . import engine

    texts = list(engine.SENTENCES)
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not re.fullmatch(r"ch\d\d", info.name):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for obj in vars(module).values():
            if isinstance(obj, engine.Exercise):
                texts += engine.messages_of(obj)
    return list(dict.fromkeys(texts))

"""What the exercise-check tests share: a blank answer and the ways to expect a named failure."""

import re
from pathlib import Path

import pytest


def blank(*args, **kwargs):
    """The answer a release starts with."""
    raise NotImplementedError()


def fails(check, fn, match):
    """``check(fn)`` fails with a message matching the regular expression ``match``."""
    with pytest.raises(AssertionError, match=match):
        check(fn)


def fails_with(check, fn, *fragments):
    """``check(fn)`` fails with a message containing every fragment; returns the message."""
    with pytest.raises(AssertionError) as info:
        check(fn)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, message
    return message


def passes_on_seeds(check, answer, seeds, capsys, cases=None):
    """``check(answer, seed=s)`` passes for every seed, each saying so in one line (with the
    number of cases, when ``cases`` is given)."""
    for seed in seeds:
        check(answer, seed=seed)
    lines = capsys.readouterr().out.splitlines()
    passed = f"all {cases} checks passed" if cases is not None else "checks passed"
    assert len(lines) == len(seeds), lines
    assert all(line.startswith(f"✓ {answer.__name__}: ") and passed in line for line in lines), (
        lines
    )


def fails_on_seeds(check, answer, seeds, *fragments):
    """``check(answer, seed=s)`` fails for every seed with a message containing each fragment."""
    for seed in seeds:
        with pytest.raises(AssertionError) as info:
            check(answer, seed=seed)
        for fragment in fragments:
            assert fragment in str(info.value), f"seed {seed}: {info.value}"


def styles_per_check(styles, checks) -> dict:
    """How many correct styles the suite has for each check (the suites want three or more)."""
    return {check: sum(c is check for c, _ in styles) for check in checks}


def fails_when_unfinished(check):
    """A blank answer (the release's) and one that returns nothing fail, each saying so."""
    fails_with(check, blank, "blank is not implemented yet", "raise NotImplementedError()")
    fails_with(check, lambda *args, **kwargs: None, "returned None: did you forget `return`?")


def notebook_hidden_seeds(notebook: str, module) -> dict:
    """{check: seed} of the hidden tests in ``notebooks/<notebook>.py``, read from their
    ``ex.check_x(my_x, seed=N)`` lines."""
    text = (Path(__file__).parents[2] / "notebooks" / f"{notebook}.py").read_text()
    hidden = re.findall(r"ex\.(check_\w+)\(my_\w+, seed=(\d+)\)", text)
    return {getattr(module, name): int(seed) for name, seed in hidden}

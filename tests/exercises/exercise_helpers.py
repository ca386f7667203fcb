"""What the exercise-check tests share: a blank answer and the ways to expect a named failure."""

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

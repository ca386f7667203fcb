"""One intra-op thread for the course's small experiments."""

import functools

import torch


class single_thread:
    """Run a block (or, as a decorator, a function) on one intra-op thread, then restore the count.

    The course's experiments are long chains of tiny tensor operations (a 64-wide RNN step, a
    batch-64 optimiser step): a second thread cannot speed those up, and on a busy machine its
    synchronisation makes each operation many times slower.
    """

    def __enter__(self):
        self.saved = torch.get_num_threads()
        torch.set_num_threads(1)
        return self

    def __exit__(self, *exc):
        torch.set_num_threads(self.saved)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with single_thread():
                return fn(*args, **kwargs)

        return wrapped

"""attncourse.threads: one intra-op thread for a block or a function, then the count restored."""

import torch

from attncourse.threads import single_thread


def test_single_thread_restores_the_thread_count():
    saved = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with single_thread():
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
        assert single_thread()(torch.get_num_threads)() == 1 and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(saved)

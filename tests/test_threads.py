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


def _seeded_draw(seed: int, n: int) -> tuple:
    """A run that seeds itself and reports where it ran and on how many threads."""
    import os

    torch.manual_seed(seed)
    with single_thread():
        return torch.rand(n).tolist(), os.getpid(), torch.get_num_threads()


def test_side_by_side_returns_every_run_in_order_and_equal_to_running_them_one_by_one():
    import os

    from attncourse.threads import cores, side_by_side

    calls = [(seed, 3) for seed in range(5)]
    results = side_by_side(_seeded_draw, calls, progress=False)
    assert [r[0] for r in results] == [_seeded_draw(*c)[0] for c in calls]
    assert all(r[2] == 1 for r in results)
    if cores() >= 2:  # the runs went to worker processes
        assert os.getpid() not in {r[1] for r in results}
    assert side_by_side(_seeded_draw, [], progress=False) == []
    as_keywords = side_by_side(_seeded_draw, [{"seed": 3, "n": 2}], progress=False)
    assert as_keywords[0][0] == _seeded_draw(3, 2)[0]


def test_side_by_side_workers_do_not_hang_on_the_thread_pool_they_inherit():
    """A worker forked after the parent ran a large operation on two threads, running a large
    operation itself without ``single_thread``: it finishes (in a subprocess, under a timeout)."""
    import subprocess
    import sys

    code = (
        "import torch\n"
        "from attncourse.threads import side_by_side\n"
        "torch.set_num_threads(2)\n"
        "torch.ones(3000, 3000).exp().sum()\n"
        "def big(n):\n"
        "    return float(torch.ones(n, n).exp().sum()), torch.get_num_threads()\n"
        "print(side_by_side(big, [(2000,), (2000,)], progress=False))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    with single_thread():
        value = float(torch.ones(2000, 2000).exp().sum())
    assert done.stdout.strip() == str([(value, 1), (value, 1)])


def test_cores_are_capped_by_a_containers_cpu_quota(tmp_path):
    from attncourse.threads import cores

    cpu_max = tmp_path / "cpu.max"
    unlimited = cores(tmp_path / "absent")
    cpu_max.write_text("max 100000\n")
    assert cores(cpu_max) == unlimited
    cpu_max.write_text("150000 100000\n")  # 1.5 CPUs: two may run
    assert cores(cpu_max) == min(unlimited, 2)
    cpu_max.write_text("50000 100000\n")
    assert cores(cpu_max) == 1

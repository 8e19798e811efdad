"""A CPU job's thread count: its slots' share of the machine's cores."""

import pytest

from jobs.cputhreads import thread_environment


@pytest.mark.parametrize(("devices", "slots", "cores", "threads"), [
    (["cpu0"], 1, 2, "2"), (["cpu0"], 2, 2, "1"), (["cpu1"], 4, 2, "1"), (["cpu0", "cpu1"], 4, 16, "8"),
    (["cpu0"], 3, 16, "5"),
])
def test_the_share_of_the_cores_is_at_least_one_thread(devices, slots, cores, threads):
    assert thread_environment(devices, slots, cores, {}) == {"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}


def test_gpu_jobs_and_a_workers_own_setting_are_left_alone():
    assert thread_environment(["gpu0", "gpu1"], 1, 16, {}) == {}
    assert thread_environment(["cpu0"], 2, 16, {"OMP_NUM_THREADS": "3"}) == {}

"""Measured by ``python -m attncourse.chapters.ch10_efficient_gated_attention.costs
--stages``: where causal linear attention spends its time, {n: {stage: ms}} (processor
time, fastest of several runs, one thread; see ``linear.causal_linear_stages``)."""

MACHINE = "x86_64"
TORCH = "2.13.0+cpu"
SETUP = {"d": 64, "threads": 1, "dtype": "float32"}
STAGES = {
    256: {
        "whole forward": 13.767,
        "outer": 0.134,
        "prefix sum": 7.945,
        "read-out": 0.175,
        "prefix sum, positions last": 1.136,
    },
    512: {
        "whole forward": 32.421,
        "outer": 0.279,
        "prefix sum": 19.732,
        "read-out": 0.266,
        "prefix sum, positions last": 2.336,
    },
    1024: {
        "whole forward": 41.230,
        "outer": 1.485,
        "prefix sum": 43.091,
        "read-out": 1.475,
        "prefix sum, positions last": 4.764,
    },
    2048: {
        "whole forward": 188.181,
        "outer": 21.931,
        "prefix sum": 162.953,
        "read-out": 3.267,
        "prefix sum, positions last": 31.626,
    },
    4096: {
        "whole forward": 378.402,
        "outer": 42.827,
        "prefix sum": 354.025,
        "read-out": 5.773,
        "prefix sum, positions last": 62.289,
    },
    8192: {
        "whole forward": 746.618,
        "outer": 88.364,
        "prefix sum": 806.108,
        "read-out": 12.324,
        "prefix sum, positions last": 127.035,
    },
    16384: {
        "whole forward": 1636.737,
        "outer": 171.661,
        "prefix sum": 1514.249,
        "read-out": 24.708,
        "prefix sum, positions last": 243.913,
    },
}

"""The calls tests/apps/instrumented_calls.c makes for a number of rounds, per function, as its arguments
determine them: what the tests of the function helpers and `analyze calls` expect, and what
bench/preload-helpers divides its time by."""


def fib_calls(n):
    """(calls of fib, calls of leaf) made by one fib(n): fib itself, and leaf at each n < 2."""
    if n < 2:
        return 1, 1
    a, la = fib_calls(n - 1)
    b, lb = fib_calls(n - 2)
    return 1 + a + b, la + lb


def calls(rounds):
    """Calls per function of `instrumented-calls ROUNDS`: two workers making ROUNDS times fib(10) and
    outer(i) (inner, two leaves, fib(5)), and main fib(12) and outer(ROUNDS)."""
    fib10, leaf10 = fib_calls(10)
    fib5, leaf5 = fib_calls(5)
    fib12, leaf12 = fib_calls(12)
    return {"main": 1, "worker": 2, "outer": 2 * rounds + 1, "inner": 2 * rounds + 1,
            "fib": 2 * rounds * (fib10 + fib5) + fib12 + fib5,
            "leaf": 2 * rounds * (leaf10 + leaf5 + 2) + leaf12 + leaf5 + 2}


def total(rounds):
    """All the instrumented calls of `instrumented-calls ROUNDS`."""
    return sum(calls(rounds).values())

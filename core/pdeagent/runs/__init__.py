"""Benchmark runs: the run directory layout (and, with issue #6, the runner)."""

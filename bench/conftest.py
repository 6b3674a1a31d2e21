"""Benchmarks are never collected by pytest: they time things, and no test may assert a time."""

collect_ignore_glob = ["*"]

"""Measurements (not tests): ``python -m minisched.bench.<name>``. Timings are never asserted."""

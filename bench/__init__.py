"""Benchmarks: each prints ratios measured in one run; `./run bench` runs them all."""

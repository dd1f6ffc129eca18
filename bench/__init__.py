"""The throughput, latency and footprint benchmark; run ``python bench/run.py``."""

"""kafkaline's benchmarks.

``python -m benchmarks`` (``make bench``) runs the side-by-side producer benchmark of issue #5:
see :mod:`benchmarks.cli`. The ``micro_*.py`` scripts are micro-benchmarks of single layers,
run on their own.
"""

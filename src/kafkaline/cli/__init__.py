"""The ``kafkaline`` command line: ``produce``, ``perf``, ``broker`` and ``topics``.

One module per command (``produce_command``, ``perf_command``, ``broker_command``,
``topics_command``), the pure parts beside them (the line reader, the properties file parser,
the perf statistics, the progress bar, exit statuses), all wired together in :mod:`main`.
The commands use kafkaline's public API only; see :mod:`kafkaline.cli.topic_admin` for the
one place that speaks the wire protocol directly, and why.
"""

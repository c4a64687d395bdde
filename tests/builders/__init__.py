"""What the tests build their inputs with, in one place (as pytokio's ``tokiotest.py``): a test
module imports its inputs from here, never from another test module. One module per input:

- :mod:`~tests.builders.paths`: ``REPO``, ``FIXTURES`` (tests/fixtures), ``SHARED_DATA`` (the
  real samples), ``SCENARIOS`` (the shipped what-if scenarios).
- :mod:`~tests.builders.zabbix`: Zabbix real-time export lines, ``zabbix_line(host, clock,
  value, itemid=..., name=...)`` (``zabbix_record`` for the dict, ``zabbix_export`` for a
  file's text).
- :mod:`~tests.builders.sacct`: ``sacct -P`` text, ``sacct_text(header, lines)``,
  ``write_sacct`` (one-node jobs), ``write_sacct_with_steps`` (2-node jobs with a batch step),
  ``sacct_hours`` (jobs by start and end hour).
- :mod:`~tests.builders.hand_lake`: the hand lake of the metrics tests, ``build_hand_lake``,
  its rows (``JOBS``, ``NODE_IO``, ``DXT``, ...) and ``SETTINGS``.
- :mod:`~tests.builders.dxt`: ``darshan_dxt`` rows by hand, ``dxt_rows``, ``write_dxt``.
- :mod:`~tests.builders.traces`: Tianhe-1A traces for the scenarios, ``bursty_lake``.
- :mod:`~tests.builders.lake_window`: lakes, scenarios and scores of the lake_window workload.
- :mod:`~tests.builders.processes`: ``burstlake`` processes paused at a phase and killed.
- :mod:`~tests.builders.graphs`, :mod:`~tests.builders.modules`: checks on graphs, and what a
  product module imports.

Fixtures stay in the conftest.py files and build through these. This package imports nothing
heavy at import: tests/conftest.py reads its paths before Airflow's settings are set.
"""

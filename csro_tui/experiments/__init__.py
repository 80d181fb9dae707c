"""Experiments: a grid of sessions run at once (`csro sweep`) and their comparison (`csro compare`).

- `sweep_file`: the sweep file (TOML) parsed and checked before anything runs;
- `manifest`: which session runs which cell, kept beside the sessions;
- `session_task`: one cell run as an ordinary session (the same
  `new_engine`/`resume_engine` as `csro run`), in a local worker process or a Ray task;
- `scheduler`: runs the cells concurrently, locally or on a Ray cluster;
- `compare`: per configuration, figures across repeats with confidence intervals.
"""

"""Policy host launcher: `python -s -S -P host_start.py` runs `host_main.main()`;
with `--zygote` it runs `zygote_main.main()`, which forks hosts (zygote.py).

STDLIB ONLY, never imports csro_tui.  A script is compiled from its source
at every start (host_main.py's ~9 ms, more than a Kuhn iteration's share of
a host), while an imported module is read from its cached bytecode: the
parent keeps the host modules' `__pycache__` current (and binds it into
bubblewrap), so the host's code lives in modules and this file stays a few
lines.  The host never writes bytecode itself.
"""

import sys

sys.dont_write_bytecode = True  # never write .pyc files into the installation

import os  # noqa: E402

# -P keeps the script's directory off sys.path: add it for this one import
# (host_main adds it again for its layers and removes it).
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
try:
    if sys.argv[1:2] == ["--zygote"]:
        import zygote_main as entry  # noqa: E402
    else:
        import host_main as entry  # noqa: E402
finally:
    sys.path.remove(_HERE)

entry.main()

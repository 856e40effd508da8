"""The benchmark harness every script of scripts/ runs on.

- :mod:`.entry`: a script's entry point (:func:`run_script`), its options (:func:`parser`:
  ``--quick``, ``--record``), warnings, Ctrl-C and SIGTERM;
- :mod:`.timing`: wall and CPU of a stretch of code (:class:`Stopwatch`, :func:`timed`);
- :mod:`.stats`: medians and ranges (:class:`Spread`), least squares;
- :mod:`.alternation`: the sides of a comparison measured in turn (:func:`alternate`);
- :mod:`.ceiling`: the machine's ceiling for N processes (:func:`cpu_ceiling`);
- :mod:`.records`: figures as JSON records (script, commit, machine, parameters, figures);
- :mod:`.child`: child programs, modules of :mod:`.children` run as ``python -m``;
- :mod:`.processes`, :mod:`.owned`: processes run beside a script, and owned until gone;
- :mod:`.fleets`: Nornir objects on synthetic hosts or an inventory, no-op tasks, a checked run;
- :mod:`.jobs`: job files and ``nornir-bench`` commands;
- :mod:`.lab`: the router lab, started or attached (``--lab NAME``);
- :mod:`.servers`: the FakeNOS lab, the RTT server, a counting proxy.

Scripts run as ``python3 scripts/NAME.py``: scripts/ is then the first entry of ``sys.path``,
and ``import harness`` needs nothing more. No script imports another script: what two share
lives here.
"""

from harness.alternation import alternate
from harness.entry import Bench, Parser, number, parser, run_script, whole
from harness.stats import Spread
from harness.timing import Stopwatch, timed

__all__ = [
    "Bench",
    "Parser",
    "Spread",
    "Stopwatch",
    "alternate",
    "number",
    "parser",
    "run_script",
    "timed",
    "whole",
]

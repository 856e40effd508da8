"""Command lines of nornir-bench: thin layers over the public API, one module per command.

- ``nornir-bench run JOB.yaml`` (:mod:`~nornir_bench.cli.run`);
- ``nornir-bench lab`` / ``wait-lab`` / ``rtt-server`` (:mod:`~nornir_bench.cli.lab`);
- ``nornir-bench sweep`` (:mod:`~nornir_bench.cli.sweep`);
- ``scripts/script.py WORKERS RTT`` (:mod:`~nornir_bench.cli.script`);
- what they share: exit statuses, one-line errors, option types (:mod:`~nornir_bench.cli._common`).

Exit status, for all: 0 every host ok, 1 some host failed, 2 bad usage or a bad job (one-line
error, no traceback), 130 interrupted by Ctrl-C, 143 stopped by SIGTERM (as by Ctrl-C: the
hosts that finished are still reported).
"""

from typing import TYPE_CHECKING

from nornir_bench._lazy import lazy_exports
from nornir_bench.cli._common import (
    EXIT_BROKEN_PIPE,
    EXIT_FAILED_HOSTS,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
)

# Imported here, not on first use: ``main`` is also the name of its module, which would
# otherwise be what ``nornir_bench.cli.main`` is once the module has been imported. Both are
# light: each command imports what it runs.
from nornir_bench.cli.main import entry, main

if TYPE_CHECKING:
    from nornir_bench.cli.script import script_entry, script_main

# Imported on first use: nornir-bench needs no benchmark.
__getattr__, __dir__ = lazy_exports(
    __name__, {"nornir_bench.cli.script": ("script_entry", "script_main")}
)

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_FAILED_HOSTS",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "entry",
    "main",
    "script_entry",
    "script_main",
]

"""``python -m nornir_bench.runners._procmain FD``: start a processpool worker on socket FD.

A module of its own, which the package never imports: running a module the package has already
imported (``-m ..._procworker``) would execute it twice and warn in every worker.
"""

import sys
from multiprocessing.connection import Connection

from nornir_bench.runners._procworker import worker_main

if __name__ == "__main__":
    worker_main(Connection(int(sys.argv[1])))

"""``python -m nornir_bench.runners.processpool._main CONTROL FDS``: the processpool's fork server.

A module of its own, which the package never imports: running a module the package has already
imported (``-m ..._forkserver``) would execute it twice and warn. CONTROL and FDS are the
descriptors of its two sockets to the pool (see :mod:`~nornir_bench.runners.processpool.forkserver`).
"""

import os
import socket
import sys
from multiprocessing.connection import Connection

from nornir_bench.runners.processpool.forkserver import serve_forks

if __name__ == "__main__":
    serve_forks(Connection(int(sys.argv[1])), socket.socket(fileno=int(sys.argv[2])))
    # Its workers are reaped and it holds nothing to finalise: tearing down an interpreter
    # holding a 10,000-host run would only delay the pool's stop, which waits for this exit.
    sys.stderr.flush()
    os._exit(0)

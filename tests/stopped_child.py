"""A child program for tests/test_scripts.py that runs until it is stopped: it writes "ready" to
the file its spec names, sleeps ``seconds``, and writes "interrupted" there if stopped as by
Ctrl-C."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main(spec: dict[str, object]) -> None:
    said = Path(str(spec["path"]))
    said.write_text("ready\n")
    try:
        time.sleep(float(str(spec["seconds"])))
    except KeyboardInterrupt:
        with said.open("a") as out:
            out.write("interrupted\n")
        raise


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))

"""A library's deprecation of its own code stays with it; ours, and a library's about how we
call it, fail the tests and reach the terminal (nornir_bench/core/library_warnings.py).

The "library" is two modules written here, made to look like one: ``oldcrypto`` deprecates an
attribute as cryptography deprecates DSA (a ``UserWarning`` subclass, attributed to the code
that touched it), and ``oldssh`` touches it at import and in a call, as asyncssh does.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import types
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from nornir_bench.core.library_warnings import LIBRARY_DEPRECATIONS, OUR_MODULES

OLDCRYPTO = '''
import warnings


class OldCryptoDeprecationWarning(UserWarning):
    pass


def __getattr__(name):
    if name == "DSA":
        warnings.warn("DSA is deprecated and support will be removed",
                      OldCryptoDeprecationWarning, stacklevel=2)
        return object
    raise AttributeError(name)


def old_call():
    """Deprecated: the warning is about the caller's code."""
    warnings.warn("old_call() is deprecated, use new_call()", DeprecationWarning, stacklevel=2)
'''

OLDSSH = '''
import oldcrypto

KEY_TYPES = (oldcrypto.DSA,)  # touched at import


def sign():
    return oldcrypto.DSA  # touched in a call
'''


@pytest.fixture
def library(tmp_path: Path) -> Iterator[Path]:
    """The two modules, importable by name for the test's length."""
    (tmp_path / "oldcrypto.py").write_text(OLDCRYPTO, encoding="utf-8")
    (tmp_path / "oldssh.py").write_text(OLDSSH, encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("oldssh", "oldcrypto"):
            sys.modules.pop(name, None)


def called_from(module: str, code: str, **names: object) -> None:
    """``code`` run as if written in ``module``: a warning with ``stacklevel=2`` is
    attributed to it."""
    namespace = types.ModuleType(module).__dict__
    namespace.update(names)
    exec(compile(code, f"<{module}>", "exec"), namespace)


def test_a_librarys_deprecation_inside_itself_is_no_error_at_import_or_in_a_call(
    library: Path,
) -> None:
    """The tests' own filters: ``error`` and, after it, the library deprecations."""
    import oldssh  # type: ignore[import-not-found]

    assert oldssh.sign() is object


def test_a_librarys_deprecation_about_our_call_is_an_error(library: Path) -> None:
    import oldcrypto  # type: ignore[import-not-found]

    with pytest.raises(DeprecationWarning, match="old_call"):
        called_from("nornir_bench.tasks.probe", "oldcrypto.old_call()", oldcrypto=oldcrypto)
    with pytest.raises(UserWarning, match="DSA is deprecated"):
        called_from("nornir_bench.tasks.probe", "oldcrypto.DSA", oldcrypto=oldcrypto)


def test_our_own_deprecation_is_an_error() -> None:
    with pytest.raises(DeprecationWarning, match="ours"):
        called_from("nornir_bench.core.probe",
                    "warnings.warn('ours is deprecated', DeprecationWarning)",
                    warnings=warnings)


def test_only_a_module_that_is_not_ours_counts_as_a_library() -> None:
    (module_filter,) = {found.module for found in LIBRARY_DEPRECATIONS}
    for ours in (*OUR_MODULES, "nornir_bench.tasks.checks.commands", "tests.core.test_x"):
        assert re.match(module_filter, ours) is None, ours
    for theirs in ("asyncssh.crypto.dsa", "nornir", "nornir_benchmarks", "testsuite"):
        assert re.match(module_filter, theirs) is not None, theirs


COMMAND = '''
import warnings
from nornir_bench.cli._common import exit_with


def command(terminated):
    import oldssh
    oldssh.sign()
    probe = {"__name__": "nornir_bench.jobs.probe", "oldcrypto": __import__("oldcrypto")}
    exec("oldcrypto.old_call()", probe)
    exec("import warnings; warnings.warn('ours is deprecated', DeprecationWarning)", probe)
    print("done")
    return 0


exit_with(command)
'''


def test_a_command_shows_ours_and_the_call_we_make_and_not_the_librarys_own(
    library: Path,
) -> None:
    """As a user's terminal shows them, without the tests' filters (a process of its own)."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(COMMAND)],
        capture_output=True, text=True, timeout=60, cwd=library,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(library)},
    )
    assert (done.returncode, done.stdout) == (0, "done\n"), done.stderr
    assert done.stderr.splitlines() == [
        "nornir-bench: warning: old_call() is deprecated, use new_call()",
        "nornir-bench: warning: ours is deprecated",
    ]


WORKER_COMMAND = '''
from nornir import InitNornir
from nornir_bench.cli._common import exit_with


def command(terminated):
    from oldtask import touch

    nr = InitNornir(
        inventory={"plugin": "synthetic", "options": {"hosts": 2}},
        runner={"plugin": "processpool", "options": {"num_procs": 1}},
        logging={"enabled": False},
    )
    try:
        result = nr.run(task=touch)
    finally:
        nr.runner.close()
    print(sorted(r[0].result for r in result.values()))
    return 0


exit_with(command)
'''


def test_a_process_pools_workers_keep_a_librarys_deprecation_of_itself_quiet_too(
    library: Path,
) -> None:
    """The workers are fresh interpreters of the package's, sharing the command's terminal."""
    (library / "oldtask.py").write_text(
        "def touch(task):\n    import oldssh\n    return oldssh.sign().__name__\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(WORKER_COMMAND)],
        capture_output=True, text=True, timeout=120, cwd=library,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(library)},
    )
    assert (done.returncode, done.stdout) == (0, "['object', 'object']\n"), done.stderr
    assert done.stderr == ""

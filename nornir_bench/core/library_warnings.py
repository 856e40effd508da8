"""Deprecation warnings a library raises about itself stay with that library.

A library deprecating something inside itself (asyncssh touching cryptography's DSA classes
at import) is neither the user's business nor ours: nothing either can change. A warning is
the library's own when the module it is attributed to (the ``module`` field of a warnings
filter: the caller of ``warnings.warn`` at its ``stacklevel``) is not ours. A library warning
about how *we* call it is attributed to our module, and still reaches users and fails tests.

"A deprecation" is a warning of the two deprecation categories, or any warning whose text says
"deprecated": some libraries deprecate with a ``UserWarning`` subclass, shown by default
(cryptography's ``CryptographyDeprecationWarning``).

One list of filters, read two ways: the commands install it (:func:`quiet_library_deprecations`),
and the tests add it after their ``error`` filter (:func:`filterwarnings_lines`).
"""

from __future__ import annotations

import warnings
from typing import Literal, NamedTuple

__all__ = [
    "LIBRARY_DEPRECATIONS",
    "OUR_MODULES",
    "WarningFilter",
    "filterwarnings_lines",
    "quiet_library_deprecations",
]

OUR_MODULES = ("nornir_bench", "tests", "scripts", "__main__")
"""The modules whose warnings are ours: the package, its tests and benchmarks, a script run."""

# No colon in it (no ``(?:``): pytest's filter lines are fields separated by colons.
_NOT_OURS = rf"(?!({'|'.join(OUR_MODULES)})(\.|$))"


class WarningFilter(NamedTuple):
    """One ``warnings.filterwarnings`` call: ``message`` and ``module`` are regular
    expressions matched at the start (``message`` ignoring case)."""

    action: Literal["default", "error", "ignore", "always", "module", "once"]
    message: str
    category: type[Warning]
    module: str


LIBRARY_DEPRECATIONS = (
    WarningFilter("ignore", "", DeprecationWarning, _NOT_OURS),
    WarningFilter("ignore", "", PendingDeprecationWarning, _NOT_OURS),
    WarningFilter("ignore", r".*\bdeprecat", Warning, _NOT_OURS),
)
"""Deprecation warnings attributed to a module that is not ours: ignored."""


def quiet_library_deprecations() -> None:
    """Install :data:`LIBRARY_DEPRECATIONS` in this process (a command's own, never on
    import), and show our own deprecations, which Python hides outside ``__main__``."""
    warnings.filterwarnings("default", category=DeprecationWarning, module=r"nornir_bench(\.|$)")
    for found in LIBRARY_DEPRECATIONS:
        warnings.filterwarnings(found.action, found.message, found.category, found.module)


def filterwarnings_lines() -> list[str]:
    """:data:`LIBRARY_DEPRECATIONS` as lines of pytest's ``filterwarnings`` setting (added
    after ``error``, which they then take precedence over)."""
    return [
        f"{found.action}:{found.message}:{found.category.__qualname__}:{found.module}"
        for found in LIBRARY_DEPRECATIONS
    ]

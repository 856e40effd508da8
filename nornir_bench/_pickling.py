"""Make nornir's results survive pickling.

nornir's ``NornirSubTaskError(task, result)`` pickles but does not unpickle (``Exception``
pickles its empty ``args`` and ``__init__`` then misses both arguments), so any result holding a
failed subtask, nornir's own runners' included, cannot be saved or sent to another process.
Registering a reducer fixes that for every pickler in the process. The rebuilt exception keeps
the subtask's ``result`` and, in place of the ``Task`` (which holds the whole ``Nornir`` object),
the task's name, so ``str()`` reads as before.
"""

from __future__ import annotations

import copyreg
from typing import Any

from nornir.core.exceptions import NornirSubTaskError

__all__: list[str] = []


def _rebuild_subtask_error(task_name: str, result: Any) -> NornirSubTaskError:
    return NornirSubTaskError(task=task_name, result=result)


def _reduce_subtask_error(exc: NornirSubTaskError) -> tuple[Any, ...]:
    return (_rebuild_subtask_error, (str(getattr(exc.task, "name", exc.task)), exc.result))


copyreg.pickle(NornirSubTaskError, _reduce_subtask_error)

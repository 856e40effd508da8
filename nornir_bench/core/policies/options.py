"""The run policies' options: names, defaults and checks, the same for every runner.

Every runner of nornir-bench takes these keyword options besides its own, and hands them to
:class:`RunPolicy`, which checks them all when the runner is built: a bad value is one
``ValueError`` line saying what is allowed (``threadpool runner: retries must be a whole number
from 0 to 100, got -1``). Values may come from YAML (a job's ``runner.options``), so bounds
keep a hostile file from asking for 10**9 retries or a year of backoff.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from functools import partial
from typing import Any

from nornir_bench.core.checks import (
    is_whole_number,
    number,
    seconds_or_none,
    whole_number,
)
from nornir_bench.core.closing import is_close_connections_task
from nornir_bench.core.policies.exception_types import (
    MAX_NAME_LENGTH,
    MAX_NAMES,
    ExceptionTypes,
)

__all__ = [
    "DEFAULT_LOGIN_RETRIES",
    "DEFAULT_RETRY_NEVER",
    "DEFAULT_RETRY_ON",
    "POLICY_OPTIONS",
    "Policed",
    "RunPolicy",
]

# Exception types by dotted name. Those of device libraries are looked up only in modules
# already imported (see ExceptionTypes): a run whose task never imported netmiko cannot have
# raised netmiko's errors, and importing it to find out would cost a third of a second.
DEFAULT_RETRY_ON = (
    "OSError",  # ConnectionRefusedError, ConnectionResetError, TimeoutError (socket.timeout) ...
    "TimeoutError",  # nornir_bench.TaskTimeout is one
    "EOFError",  # a session that closed under the task
    "paramiko.ssh_exception.SSHException",  # netmiko's NetmikoTimeoutException is one
    "netmiko.exceptions.NetmikoTimeoutException",
    "netmiko.exceptions.ReadTimeout",
    "asyncssh.misc.ConnectionLost",
    "asyncssh.misc.DisconnectError",
    "scrapli.exceptions.ScrapliTimeout",
    "scrapli.exceptions.ScrapliConnectionError",
)
"""What ``retry_on`` is by default: errors of the connection, not of the task's logic."""

DEFAULT_RETRY_NEVER = (
    "PermissionError",  # nornir-bench's own SSH session: wrong credentials, enable refused
    "netmiko.exceptions.NetmikoAuthenticationException",
    "paramiko.ssh_exception.AuthenticationException",
    "asyncssh.misc.PermissionDenied",
    "scrapli.exceptions.ScrapliAuthenticationFailed",
    "nornir_bench.core.exceptions.RunTimeout",  # the run's deadline: no attempt can meet it
)
"""What ``retry_never`` is by default: authentication failures (retrying them locks accounts)
and the run's own deadline."""

_MAX_RETRIES = 100
DEFAULT_LOGIN_RETRIES = 8
"""Logins an SSH server refused before authentication, tried again per host by default
(``core.policies.logins``); 0 turns that off."""
_MAX_SECONDS = 86_400.0  # a day: no delay, timeout or deadline of a run is longer
_MAX_BATCHES = 1_000


@dataclass(frozen=True)
class GroupLimit:
    """A limit per group of hosts: for the hosts' nornir groups (``key`` ``"group"``) or for
    each value of a host attribute (``"site"``, ``"platform"``).

    ``each`` applies to every value (``site: 5``); ``values`` to named ones only
    (``group: {core: 2}``).
    """

    key: str
    each: int | None = None
    values: Mapping[str, int] = field(default_factory=dict)

    def limit(self, value: str) -> int | None:
        return self.values.get(value, self.each)

    @property
    def smallest(self) -> float:
        """The smallest limit it sets, for any value (``math.inf``: none)."""
        limits = [*self.values.values(), *([] if self.each is None else [self.each])]
        return min(limits, default=math.inf)


def _group_limits(what: str, given: object, *, minimum: int) -> tuple[GroupLimit, ...]:
    if given is None:
        return ()
    allowed = (
        f"{what} must be a mapping of a host attribute or 'group' to a whole number >= "
        f"{minimum}, or to a mapping of its values to one (e.g. {{site: 5}}, "
        "{group: {core: 2}})"
    )
    if not isinstance(given, Mapping) or len(given) > MAX_NAMES:
        raise ValueError(f"{allowed}, got {given!r}")
    limits = []
    for key, value in given.items():
        if not isinstance(key, str) or not key or len(key) > MAX_NAME_LENGTH:
            raise ValueError(f"{allowed}, got key {key!r}")
        if is_whole_number(value, minimum):
            limits.append(GroupLimit(key, each=value))
            continue
        if not isinstance(value, Mapping) or not value or len(value) > MAX_NAMES:
            raise ValueError(f"{allowed}, got {key}: {value!r}")
        for name, count in value.items():
            if not isinstance(name, str) or not is_whole_number(count, minimum):
                raise ValueError(f"{allowed}, got {key}: {{{name!r}: {count!r}}}")
        limits.append(GroupLimit(key, values=dict(value)))
    return tuple(limits)


def _batches(what: str, given: object) -> tuple[int | float, ...]:
    """Counts stay ints; percentages become fractions of the run's hosts (``"10%"`` -> 0.1)."""
    if given is None:
        return ()
    allowed = (
        f"{what} must be a list of 1 to {_MAX_BATCHES} batch sizes, each a host count (a whole "
        "number >= 1) or a percentage of the run's hosts (more than '0%', at most '100%'), "
        "such as [1, '10%', '100%']"
    )
    if not isinstance(given, (list, tuple)) or not given or len(given) > _MAX_BATCHES:
        raise ValueError(f"{allowed}, got {given!r}")
    sizes: list[int | float] = []
    for item in given:
        if is_whole_number(item, 1):
            sizes.append(item)
            continue
        text = item.strip() if isinstance(item, str) else ""
        try:
            percent = float(text[:-1]) if text.endswith("%") else math.nan
        except ValueError:
            percent = math.nan
        if not (0 < percent <= 100):  # also refuses nan
            raise ValueError(f"{allowed}, got {item!r}")
        sizes.append(percent / 100)
    return tuple(sizes)


def _seconds(what: str, value: object) -> float:
    return number(what, value, minimum=0.0, maximum=_MAX_SECONDS, unit="a number of seconds")


def _limit(what: str, value: object) -> float | None:
    """A deadline in seconds (> 0), at most a day; or ``None``: none."""
    seconds = seconds_or_none(what, value)
    if seconds is not None and seconds > _MAX_SECONDS:
        raise ValueError(f"{what} must be at most {_MAX_SECONDS:g} s, got {value!r}")
    return seconds


_Check = Callable[[str, Any], Any]
"""An option's check: ``check(what, value)`` returns the value to keep, or raises ValueError."""


def _option(
    default: object = MISSING, *, factory: Callable[[], object] | None = None, check: _Check
) -> Any:
    """A field of :class:`RunPolicy`: its default (or a ``factory`` making it), and its check."""
    if factory is not None:
        return field(default_factory=factory, metadata={"check": check})
    return field(default=default, metadata={"check": check})


def _or_none(check: _Check) -> _Check:
    """``check``, letting ``None`` (no limit) through."""
    return lambda what, value: None if value is None else check(what, value)


@dataclass(frozen=True)
class RunPolicy:
    """The run policies of one runner: one object, checked once, shared by every runner.

    See docs/runners.md ("Run policies") for what each does; :data:`POLICY_OPTIONS` lists
    the names. ``None`` turns a limit off. Each field holds its option's only default.
    """

    task_timeout: float | None = _option(None, check=_limit)
    retries: int = _option(0, check=partial(whole_number, minimum=0, maximum=_MAX_RETRIES))
    retry_delay: float = _option(1.0, check=_seconds)
    retry_backoff: float = _option(2.0, check=partial(number, minimum=1, maximum=10))
    retry_max_delay: float = _option(30.0, check=_seconds)
    retry_jitter: float = _option(1.0, check=_seconds)
    # The defaults' names are looked up when matched; the names a user gives must exist.
    retry_on: ExceptionTypes = _option(
        factory=lambda: ExceptionTypes("retry_on", DEFAULT_RETRY_ON, strict=False),
        check=partial(ExceptionTypes, strict=True),
    )
    retry_never: ExceptionTypes = _option(
        factory=lambda: ExceptionTypes("retry_never", DEFAULT_RETRY_NEVER, strict=False),
        check=partial(ExceptionTypes, strict=True),
    )
    max_failures: int | None = _option(None, check=_or_none(partial(whole_number, minimum=0)))
    max_fail_percentage: float | None = _option(
        None, check=_or_none(partial(number, minimum=0, maximum=100))
    )
    batches: tuple[int | float, ...] = _option((), check=_batches)
    max_starts_per_second: float | None = _option(
        None, check=_or_none(partial(number, above=0, maximum=1_000_000))
    )
    max_start_burst: int | None = _option(
        None, check=_or_none(partial(whole_number, minimum=1, maximum=1_000_000))
    )
    group_limits: tuple[GroupLimit, ...] = _option((), check=partial(_group_limits, minimum=1))
    group_max_failures: tuple[GroupLimit, ...] = _option(
        (), check=partial(_group_limits, minimum=0)
    )
    run_timeout: float | None = _option(None, check=_limit)
    login_retries: int = _option(
        DEFAULT_LOGIN_RETRIES, check=partial(whole_number, minimum=0, maximum=_MAX_RETRIES)
    )

    @classmethod
    def build(cls, what: str, options: Mapping[str, Any]) -> RunPolicy:
        """Check ``options`` (names from :data:`POLICY_OPTIONS`) and build the policy.

        Args:
            what: the runner, as messages name it (``"threadpool runner"``).
            options: the policy options given; the rest keep their defaults.

        Raises:
            ValueError: an unknown name or a bad value, in one line saying what is allowed.
        """
        unknown = [name for name in options if name not in POLICY_OPTIONS]
        if unknown:
            raise ValueError(
                f"{what}: no option {unknown[0]!r}; run policy options: "
                f"{', '.join(POLICY_OPTIONS)}"
            )
        if (
            options.get("max_start_burst") is not None
            and options.get("max_starts_per_second") is None
        ):
            raise ValueError(
                f"{what}: max_start_burst sizes the bucket of max_starts_per_second, which is "
                "not set: set it too, or drop max_start_burst"
            )
        policy = cls(
            **{
                f.name: f.metadata["check"](f"{what}: {f.name}", options[f.name])
                for f in fields(cls)
                if f.name in options
            }
        )
        if policy.retries and not policy.retry_on.names:
            raise ValueError(
                f"{what}: retry_on is empty, so retries {policy.retries} would retry nothing: "
                "name the exception types to retry, or leave retry_on out for the defaults"
            )
        return policy

    def for_task(self, func: Callable[..., Any]) -> RunPolicy:
        """The policy a run of task ``func`` keeps: none for nornir's ``close_connections``
        (closing what the hosts hold logs in nowhere, and must not wait for a start rate or
        a batch: 2,000 hosts at 25 starts a second took 80 s to close)."""
        return _NO_POLICY if is_close_connections_task(func) else self

    @property
    def schedules(self) -> bool:
        """Whether it decides which hosts start when (else hosts simply start in order)."""
        return bool(
            self.max_failures is not None
            or self.max_fail_percentage is not None
            or self.batches
            or self.max_starts_per_second is not None
            or self.group_limits
            or self.group_max_failures
            or self.run_timeout is not None
        )

    @property
    def longest_host_time(self) -> float | None:
        """The longest one host may take under ``task_timeout``, with every retry and the
        longest wait before each; ``None`` without a ``task_timeout``."""
        if self.task_timeout is None:
            return None
        waits = sum(
            min(self.retry_max_delay, self.retry_delay * self.retry_backoff ** (n - 1))
            + self.retry_jitter
            for n in range(1, self.retries + 1)
        )
        return (self.retries + 1) * self.task_timeout + waits

    def given(self) -> dict[str, Any]:
        """The options that differ from the defaults, as they were given (for ``repr``)."""
        default = RunPolicy()
        shown: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value != getattr(default, f.name):
                shown[f.name] = value
        return shown


POLICY_OPTIONS = tuple(f.name for f in fields(RunPolicy))
"""The names of the run policy options, which every runner takes."""

_NO_POLICY = RunPolicy(login_retries=0)  # nornir's close_connections: see RunPolicy.for_task


class Policed:
    """What a runner with run policies has: ``policy``, and each option as an attribute
    (``runner.retries``), as nornir tools read a runner's options back."""

    policy: RunPolicy
    policy_options: tuple[str, ...] = POLICY_OPTIONS  # what its **policy takes

    def __getattr__(self, name: str) -> Any:
        policy = self.__dict__.get("policy")
        if policy is not None and name in POLICY_OPTIONS:
            return getattr(policy, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _policy_repr(self) -> str:
        """The policy options that differ from the defaults, for the runner's ``repr``."""
        return "".join(f", {k}={v!r}" for k, v in self.policy.given().items())

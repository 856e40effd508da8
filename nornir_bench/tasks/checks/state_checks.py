"""State checks: what must hold on the network, read from parsed output with JMESPath.

A check is a mapping, as a job file gives it::

    {"name": "r2's BGP sessions", "host": "r2",
     "command": "show bgp ipv4 unicast summary json", "parse": "json",
     "path": "length(peers.*.state[?@ == 'Established'])", "expect": "no_fewer"}

- ``command``: one line, run on ``host`` (an inventory host's name; by default the host the
  step runs on), or on the host named by the changed host's data key ``host_from`` (each
  router's own neighbour: ``host_from: bgp_neighbour``); or, around a NETCONF change,
  ``xpath`` instead: a ``<get>`` with that XPath filter, its data parsed to Python
  (:func:`~nornir_bench.tasks.dialects.netconf_xml.parse_data`);
- ``parse``: ``json`` (the default), ``textfsm`` or ``ttp``, with ``template_file`` for the
  last two (:mod:`nornir_bench.tasks.checks.output_parsers`);
- ``path``: the value to take, a JMESPath expression (the language of Ansible's
  ``json_query``); without it, the whole parsed output;
- ``expect``: what must hold: ``same`` (equal to before the change), ``no_fewer`` (a number,
  or a list's or mapping's length, no smaller than before), ``present``, ``absent``, or
  ``{equals: VALUE}``. ``same`` by default.

Around a change every check is read before and after; after, each must hold. ``same`` and
``no_fewer`` compare with before; ``present``, ``absent`` and ``equals`` hold or not by
themselves (a route announced by the change is absent before it). A step of checks alone (an
audit: :func:`check_state`, :func:`acheck_state`) reads them once, and takes only the last
three (:mod:`nornir_bench.tasks.checks.audit`). Reading them is a plan (:func:`read_checks`) that
either driver runs (:mod:`nornir_bench.tasks.sessions._plan`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from nornir_bench.core.read_only import READ_ONLY_COMMANDS, reads_only_commands
from nornir_bench.tasks.checks.output_parsers import check_parser, parse_output
from nornir_bench.tasks.dialects.netconf_xml import parse_data
from nornir_bench.tasks.sessions._netconf_requests import Get
from nornir_bench.tasks.sessions._plan import Command, PastDeadline, Plan

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import Task

__all__ = [
    "EXPECTS",
    "CheckOutcome",
    "StateCheck",
    "checks_from",
    "checks_text",
    "failures_said",
    "read_checks",
    "resolved",
]

EXPECTS = ("same", "no_fewer", "present", "absent", "equals")
_RELATIVE = ("same", "no_fewer")
_KEYS = ("name", "host", "host_from", "command", "xpath", "parse", "template_file", "path",
         "expect")
HOSTS = "_hosts"
"""The key a job gives a ``host_from`` check, with every host it may name (a worker has no
inventory to find them in)."""
MAX_CHECKS = 50


@dataclass(frozen=True)
class StateCheck:
    """One check (see the module). ``host`` is an inventory host's name, or the ``Host``
    itself (a job gives the host so that a worker without the inventory can reach it)."""

    name: str
    command: str
    parse: str = "json"
    path: str | None = None
    expect: str = "same"
    value: Any = None
    host: str | Host | None = None
    template_file: str | None = None
    host_from: str | None = None
    hosts: Mapping[str, Host] | None = None
    xpath: str | None = None  # read over NETCONF, instead of the command

    @property
    def host_name(self) -> str | None:
        return self.host if self.host is None or isinstance(self.host, str) else self.host.name

    @property
    def relative(self) -> bool:
        """Whether it compares with the value before the change."""
        return self.expect in _RELATIVE

    def take(self, data: Any) -> Any:
        """The value ``path`` takes from the parsed output."""
        return data if self.path is None else _compiled(self.path).search(data)

    def fails(self, before: Any, after: Any) -> str | None:
        """Why ``after`` (and ``before``, for ``same`` and ``no_fewer``) breaks the check, or
        ``None`` when it holds."""
        if self.expect == "same":
            return None if after == before else f"was {_shown(before)}, now {_shown(after)}"
        if self.expect == "no_fewer":
            was, now = _count(before), _count(after)
            if was is None or now is None:
                return f"no_fewer needs a number, list or mapping: was {_shown(before)}, now " \
                       f"{_shown(after)}"
            return None if now >= was else f"was {was}, now {now}: fewer"
        if self.expect == "present":
            return None if _present(after) else "absent"
        if self.expect == "absent":
            return None if not _present(after) else f"present: {_shown(after)}"
        return None if after == self.value else f"{_shown(after)}, not {_shown(self.value)}"

    def said(self) -> str:
        """The check in words: ``'r2 sessions' (no_fewer) on h2``."""
        what = f"equals {_shown(self.value)}" if self.expect == "equals" else self.expect
        on = f" on {self.host_name}" if self.host is not None else ""
        return f"check {self.name!r} ({what}){on}"


@dataclass(frozen=True)
class CheckOutcome:
    """A check's values around a change (``before`` is ``None`` in an audit), and why it
    failed (``None``: it held, or was not read after yet: ``after_read`` false; one that could
    not be read before the change says so, and was never read after)."""

    check: StateCheck
    before: Any = None
    after: Any = None
    after_read: bool = False
    failure: str | None = None

    def record(self) -> dict[str, Any]:
        """The outcome as records keep it."""
        check = self.check
        return {
            "name": check.name, "host": check.host_name, "command": check.command,
            **({"xpath": check.xpath} if check.xpath is not None else {}),
            "path": check.path, "expect": check.expect,
            **({"value": check.value} if check.expect == "equals" else {}),
            "before": self.before, "after": self.after if self.after_read else None,
            "held": None if not self.after_read else self.failure is None,
            "failure": self.failure,
        }


def checks_text(records: Sequence[Mapping[str, Any]]) -> str:
    """The checks' outcomes (:meth:`CheckOutcome.record`) in lines, values shortened:
    ``check 'peers' (no_fewer) on h2: before 2, after 1: FAILED: was 2, now 1: fewer``."""
    lines = []
    for record in records:
        what = (f"equals {_shown(record.get('value'))}" if record["expect"] == "equals"
                else record["expect"])
        on = f" on {record['host']}" if record["host"] else ""
        if record["held"] is None and record.get("failure"):  # not read before the change
            lines.append(f"check {record['name']!r} ({what}){on}: {record['failure']}")
            continue
        values = []
        if record["expect"] in _RELATIVE or record["before"] is not None:
            values.append(f"before {_shown(record['before'])}")
        if record["held"] is not None:
            values.append(f"after {_shown(record['after'])}" if values
                          else _shown(record["after"]))
        held = {True: "held", False: f"FAILED: {record['failure']}",
                None: "to hold after the change"}[record["held"]]
        lines.append(f"check {record['name']!r} ({what}){on}: {', '.join(values)}: {held}")
    return "\n".join(lines)


def checks_from(
    given: object, *, audit: bool = False, where: str = "checks", netconf: bool = False
) -> tuple[StateCheck, ...]:
    """The checks of a task's ``checks`` parameter, each checked before any device is touched.

    Args:
        audit: checks read once (no change to compare with): ``same`` and ``no_fewer`` are
            refused.
        netconf: checks around a NETCONF change: each reads an ``xpath``, not a command.

    Raises:
        ValueError: a mapping that is not a check, naming its place (``checks[2].path``) and
            what is allowed: an unknown key, parser or ``expect``, a JMESPath syntax error, a
            missing or unreadable template.
    """
    if given is None:
        return ()
    if not isinstance(given, Sequence) or isinstance(given, str) or not given:
        raise ValueError(f"{where} must be a list of 1 to {MAX_CHECKS} checks, got {given!r}")
    if len(given) > MAX_CHECKS:
        raise ValueError(f"{where}: at most {MAX_CHECKS} checks, got {len(given)}")
    return tuple(_check(item, f"{where}[{k + 1}]", audit, netconf)
                 for k, item in enumerate(given))


def _check(item: object, where: str, audit: bool, netconf: bool) -> StateCheck:
    if isinstance(item, StateCheck):
        return item
    if not isinstance(item, Mapping):
        raise ValueError(f"{where} must be a mapping with a {_READS[netconf]}, got {item!r}")
    unknown = [key for key in item if key not in (*_KEYS, HOSTS)]
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r}; a check takes {', '.join(_KEYS)}")
    reads = _xpath_read(item, where, netconf) if netconf or "xpath" in item \
        else _command_read(item, where)
    path = item.get("path")
    if path is not None:
        if not isinstance(path, str) or not path.strip():
            raise ValueError(f"{where}.path must be a JMESPath expression, got {path!r}")
        _compile(path, f"{where}.path")
    expect, value = _expect(item.get("expect", "same"), f"{where}.expect")
    if audit and expect in _RELATIVE:
        raise ValueError(
            f"{where}.expect: {expect} compares with the state before a change, and this step "
            "changes nothing: use present, absent or {equals: VALUE}"
        )
    host = item.get("host")
    if host is not None and not isinstance(host, str) and not hasattr(host, "connections"):
        raise ValueError(f"{where}.host must be an inventory host's name, got {host!r}")
    host_from = item.get("host_from")
    if host_from is not None and (not isinstance(host_from, str) or not host_from):
        raise ValueError(f"{where}.host_from must be the name of a key of the hosts' data, got "
                         f"{host_from!r}")
    if host_from is not None and host is not None:
        raise ValueError(f"{where}: give host or host_from, not both")
    name = item.get("name")
    if name is not None and not isinstance(name, str):
        raise ValueError(f"{where}.name must be text, got {name!r}")
    read = reads.xpath or reads.command
    return replace(
        reads, name=name or (f"{read} | {path}" if path else read), path=path, expect=expect,
        value=value, host=host, host_from=host_from, hosts=item.get(HOSTS),
    )


_READS = {False: "command", True: "xpath"}


def _command_read(item: Mapping[str, Any], where: str) -> StateCheck:
    """What a check reads by a command: the command and its parser."""
    command = item.get("command")
    if not isinstance(command, str) or not command.strip() or "\n" in command:
        raise ValueError(f"{where}.command must be one line of text, got {command!r}")
    if not reads_only_commands({"command": command}):  # --check runs them: they must not write
        raise ValueError(
            f"{where}.command: a check reads, and {command!r} may not: it must start with "
            f"{', '.join(READ_ONLY_COMMANDS)}"
        )
    parse = item.get("parse", "json")
    check_parser({"parse": parse, "template_file": item.get("template_file")},
                 where=f"{where}.parse")
    return StateCheck(
        name="", command=command.strip(), parse=parse,
        template_file=None if item.get("template_file") is None else str(item["template_file"]),
    )


def _xpath_read(item: Mapping[str, Any], where: str, netconf: bool) -> StateCheck:
    """What a check reads over NETCONF: ``<get>`` of an ``xpath`` (the data is XML: no
    parser)."""
    if not netconf:
        raise ValueError(f"{where}.xpath: a check by xpath reads over NETCONF, around "
                         "netconf_edit_config or anetconf_edit_config; give a command here")
    for key in ("command", "parse", "template_file"):
        if key in item:
            raise ValueError(f"{where}.{key}: a NETCONF change's check reads its data with "
                             "<get> and an xpath: give xpath, not command, parse or "
                             "template_file")
    xpath = item.get("xpath")
    if not isinstance(xpath, str) or not xpath.strip() or "\n" in xpath:
        raise ValueError(f"{where}.xpath must be an XPath expression on one line, got {xpath!r}")
    return StateCheck(name="", command="", xpath=xpath.strip())


def _expect(given: object, where: str) -> tuple[str, Any]:
    if isinstance(given, Mapping) and list(given) == ["equals"]:
        return "equals", given["equals"]
    if isinstance(given, str) and given in EXPECTS and given != "equals":
        return given, None
    raise ValueError(
        f"{where} must be same, no_fewer, present, absent or {{equals: VALUE}}, got {given!r}"
    )


def _compile(path: str, where: str) -> None:
    import jmespath.exceptions

    try:
        _compiled(path)
    except jmespath.exceptions.JMESPathError as exc:
        said = " ".join(str(exc).split())
        raise ValueError(f"{where}: JMESPath syntax error in {path!r}: {said}") from None


@functools.lru_cache(maxsize=256)
def _compiled(path: str) -> Any:
    import jmespath

    return jmespath.compile(path)


def _count(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, (list, Mapping)):
        return len(value)
    return None


def _present(value: Any) -> bool:
    return value is not None and value != [] and value != {}


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:60] + " ..." + text[-15:]


# -- reading them --------------------------------------------------------------------------


def resolved(task: Task, checks: tuple[StateCheck, ...]) -> tuple[StateCheck, ...]:
    """``checks`` with each ``host`` named by a name given as the inventory's ``Host``.

    Raises:
        ValueError: a host the run's inventory does not have (a job checks this as it loads;
            a worker elsewhere has no inventory, and the job gives it the hosts themselves).
    """
    hosts = getattr(getattr(task.nornir, "inventory", None), "hosts", {})
    found = []
    for check in checks:
        if check.host_from is not None:
            name = task.host.get(check.host_from)
            if not isinstance(name, str):
                raise ValueError(f"{check.said()}: host {task.host.name} has no data "
                                 f"{check.host_from!r} naming the host to check on")
            check = replace(check, host=name, host_from=None)
        if isinstance(check.host, str):
            # The hosts a job gave the check first: a worker's inventory is empty.
            host = (check.hosts or {}).get(check.host) or hosts.get(check.host)
            if host is None:
                raise ValueError(f"{check.said()}: no host {check.host!r} in the inventory")
            check = replace(check, host=host)
        found.append(check)
    return tuple(found)


def read_checks(
    checks: tuple[StateCheck, ...], platform: str | None
) -> Plan[list[tuple[Any, str | None]]]:
    """Each check's value, read from its host, or why it could not be (``platform``: the
    host's own, for ntc-templates)."""
    values: list[tuple[Any, str | None]] = []
    for check in checks:
        try:
            if check.xpath is not None:
                data = parse_data((yield Get(check.xpath, check.host)))
                values.append((check.take(data), None))
                continue
            text = yield Command(check.command, check.host)
            data = parse_output(
                text, check.parse, command=check.command, template_file=check.template_file,
                platform=platform if check.host is None else getattr(check.host, "platform", None),
            )
            values.append((check.take(data), None))
        except PastDeadline:
            raise
        except Exception as exc:  # noqa: BLE001 - what a check could not read fails it
            values.append((None, f"not read: {type(exc).__name__}: {exc}"))
    return values


def failures_said(outcomes: Sequence[CheckOutcome]) -> str:
    """The checks that failed, in one line: ``check 'peers' (no_fewer) on h2: was 2, now 1``."""
    return "; ".join(f"{o.check.said()}: {o.failure}" for o in outcomes if o.failure)

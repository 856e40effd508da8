"""State checks: what must hold on the network, read from parsed output with JMESPath.

A check is a mapping, as a job file gives it::

    {"name": "r2's BGP sessions", "host": "r2",
     "command": "show bgp ipv4 unicast summary json", "parse": "json",
     "path": "length(peers.*.state[?@ == 'Established'])", "expect": "no_fewer"}

- ``command``: one line, run on ``host`` (an inventory host's name; by default the host the
  step runs on), or on the host named by the changed host's data key ``host_from`` (each
  router's own neighbour: ``host_from: bgp_neighbour``); or, around a NETCONF change,
  ``xpath`` instead: a ``<get>`` with that XPath filter (or ``filter``: a subtree filter, XML
  text, for a server without ``:xpath``), its data parsed to Python
  (:func:`~nornir_bench.tasks.dialects.netconf_xml.parse_data`), the elements named in
  ``force_list`` made lists even when the reply holds one (``[interface]``: a ``path`` then
  reads one interface as it reads several);
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
three (:mod:`nornir_bench.tasks.checks.audit`).

This module is what a check is and how a job's mapping becomes one (:func:`checks_from`);
reading checks on the devices and what came of them is
:mod:`nornir_bench.tasks.checks.check_outcomes`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from nornir_bench.core.read_only import READ_ONLY_COMMANDS, reads_only_commands
from nornir_bench.tasks.checks.output_parsers import check_parser
from nornir_bench.tasks.dialects.netconf_xml import (
    NetconfFilterError,
    check_force_list,
    netconf_filter,
)

if TYPE_CHECKING:
    from nornir.core.inventory import Host

__all__ = [
    "EXPECTS",
    "HOSTS",
    "MAX_CHECKS",
    "RELATIVE",
    "StateCheck",
    "checks_from",
    "shown_value",
]

EXPECTS = ("same", "no_fewer", "present", "absent", "equals")
RELATIVE = ("same", "no_fewer")
_KEYS = ("name", "host", "host_from", "command", "xpath", "filter", "force_list", "parse",
         "template_file", "path", "expect")
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
    subtree: str | None = None  # or read with a subtree filter (XML text)
    force_list: tuple[str, ...] = ()  # over NETCONF: elements parsed as lists, even one

    @property
    def host_name(self) -> str | None:
        return self.host if self.host is None or isinstance(self.host, str) else self.host.name

    @property
    def get_filter(self) -> str | tuple[str, str] | None:
        """The ``<get>``'s filter of a check read over NETCONF, as ncclient takes it (a
        subtree's ``<filter>`` element as text, or ``("xpath", expression)``); ``None``: a
        check by command."""
        if self.xpath is not None:
            return ("xpath", self.xpath)
        return None if self.subtree is None else str(netconf_filter(subtree=self.subtree))

    @property
    def relative(self) -> bool:
        """Whether it compares with the value before the change."""
        return self.expect in RELATIVE

    def take(self, data: Any) -> Any:
        """The value ``path`` takes from the parsed output."""
        return data if self.path is None else _compiled(self.path).search(data)

    def fails(self, before: Any, after: Any) -> str | None:
        """Why ``after`` (and ``before``, for ``same`` and ``no_fewer``) breaks the check, or
        ``None`` when it holds."""
        if self.expect == "same":
            if after == before:
                return None
            return f"was {shown_value(before)}, now {shown_value(after)}"
        if self.expect == "no_fewer":
            was, now = _count(before), _count(after)
            if was is None or now is None:
                return (f"no_fewer needs a number, list or mapping: was {shown_value(before)}, "
                        f"now {shown_value(after)}")
            return None if now >= was else f"was {was}, now {now}: fewer"
        if self.expect == "present":
            return None if _present(after) else "absent"
        if self.expect == "absent":
            return None if not _present(after) else f"present: {shown_value(after)}"
        if after == self.value:
            return None
        return f"{shown_value(after)}, not {shown_value(self.value)}"

    def said(self) -> str:
        """The check in words: ``'r2 sessions' (no_fewer) on h2``."""
        what = f"equals {shown_value(self.value)}" if self.expect == "equals" else self.expect
        on = f" on {self.host_name}" if self.host is not None else ""
        return f"check {self.name!r} ({what}){on}"


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
    reads = _netconf_read(item, where, netconf) if netconf or "xpath" in item or \
        "filter" in item else _command_read(item, where)
    path = item.get("path")
    if path is not None:
        if not isinstance(path, str) or not path.strip():
            raise ValueError(f"{where}.path must be a JMESPath expression, got {path!r}")
        _compile(path, f"{where}.path")
    expect, value = _expect(item.get("expect", "same"), f"{where}.expect")
    if audit and expect in RELATIVE:
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
    read = reads.xpath or " ".join((reads.subtree or "").split()) or reads.command
    return replace(
        reads, name=name or (f"{read} | {path}" if path else read), path=path, expect=expect,
        value=value, host=host, host_from=host_from, hosts=item.get(HOSTS),
    )


_READS = {False: "command", True: "xpath or filter"}


def _command_read(item: Mapping[str, Any], where: str) -> StateCheck:
    """What a check reads by a command: the command and its parser."""
    if "force_list" in item:
        raise ValueError(f"{where}.force_list: element names made lists in a NETCONF reply's "
                         "data, for a check by xpath or filter; a command's output is read by "
                         "its parse")
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


def _netconf_read(item: Mapping[str, Any], where: str, netconf: bool) -> StateCheck:
    """What a check reads over NETCONF: ``<get>`` filtered by an ``xpath`` or a subtree
    ``filter`` (the data is XML: no parser)."""
    if not netconf:
        key = "xpath" if "xpath" in item else "filter"
        raise ValueError(f"{where}.{key}: a check by {key} reads over NETCONF, around "
                         "netconf_edit_config or anetconf_edit_config; give a command here")
    for key in ("command", "parse", "template_file"):
        if key in item:
            raise ValueError(f"{where}.{key}: a NETCONF change's check reads its data with "
                             "<get> and an xpath or a subtree filter: give xpath or filter, "
                             "not command, parse or template_file")
    force_list = check_force_list(item.get("force_list"), f"{where}.force_list")
    if "xpath" in item and "filter" in item:
        raise ValueError(f"{where}: give xpath or filter (a subtree), not both")
    if "filter" in item:
        subtree = item["filter"]
        try:
            netconf_filter(subtree=subtree)
        except NetconfFilterError as exc:
            raise ValueError(f"{where}.{exc}") from None
        return StateCheck(name="", command="", subtree=subtree.strip(), force_list=force_list)
    xpath = item.get("xpath")
    if not isinstance(xpath, str) or not xpath.strip() or "\n" in xpath:
        raise ValueError(f"{where}.xpath must be an XPath expression on one line (or give "
                         f"filter, a subtree filter), got {xpath!r}")
    return StateCheck(name="", command="", xpath=xpath.strip(), force_list=force_list)


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


def shown_value(value: Any) -> str:
    """``value`` as a check's words show it: its ``repr``, shortened past 80 characters."""
    text = repr(value)
    return text if len(text) <= 80 else text[:60] + " ..." + text[-15:]

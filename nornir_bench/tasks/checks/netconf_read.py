"""Read a device over NETCONF: ``netconf_get`` / ``netconf_get_config`` and their async twins.

A ``<get>`` (state and configuration) or a ``<get-config>`` of a datastore (``running`` by
default, ``candidate``, ``startup``), filtered by a subtree (``filter``: XML text) or by
XPath (``xpath``, with its ``namespaces``; only where the server advertises ``:xpath``), over
the host's NETCONF session (ncclient, kept in ``host.connections["ncclient"]`` across runs
until ``nr.close_connections()``: tasks/sessions/netconf_session.py). The result is the reply's
``<data>`` as Python (tasks/dialects/netconf_xml.py), its XML text in the result's ``raw``;
``parse: false`` gives the text itself.

``anetconf_get`` and ``anetconf_get_config`` run the same ncclient calls off the event loop,
in the run's thread pool: on this project's NETCONF lab ncclient answers as fast as
scrapli-netconf over asyncssh (docs/netconf.md), and it matches replies to requests by
message id, where scrapli-netconf loses a request netconfd reads with its hello.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from nornir.core.task import Result

from nornir_bench.core.checks import number
from nornir_bench.core.deadlines import bounded
from nornir_bench.core.read_only import read_only
from nornir_bench.core.subtasks import async_twin
from nornir_bench.tasks._needs import DEVICES_EXTRA, needs, require_libraries
from nornir_bench.tasks._params import check_params_with
from nornir_bench.tasks.dialects.netconf_xml import (
    check_datastore,
    check_force_list,
    netconf_filter,
    parse_data,
    require_xpath,
)
from nornir_bench.tasks.sessions.netconf_session import netconf_session

if TYPE_CHECKING:
    from nornir.core.task import Task

__all__ = [
    "DEFAULT_NETCONF_TIMEOUT",
    "anetconf_get",
    "anetconf_get_config",
    "netconf_get",
    "netconf_get_config",
]

DEFAULT_NETCONF_TIMEOUT = 30.0
"""Seconds for the login, and again for each reply."""

_LIBRARIES = ["ncclient", "xmltodict"]


def _check_read(params: Mapping[str, Any]) -> None:
    """The job loader's check of a read's parameters, as the task does it."""
    netconf_filter(params.get("filter"), params.get("xpath"), params.get("namespaces"))
    check_force_list(params.get("force_list"))
    number("timeout", params.get("timeout", DEFAULT_NETCONF_TIMEOUT), above=0,
           unit="a number of seconds")
    if "source" in params:
        check_datastore(params["source"])


@read_only
@needs(libraries=_LIBRARIES, install=DEVICES_EXTRA)
@check_params_with(_check_read)
def netconf_get(
    task: Task,
    *,
    filter: str | None = None,  # NETCONF's own word, as ncclient's
    xpath: str | None = None,
    namespaces: Mapping[str, str] | None = None,
    force_list: list[str] | None = None,
    parse: bool = True,
    timeout: float = DEFAULT_NETCONF_TIMEOUT,
) -> Result:
    """A ``<get>``: the device's state and configuration (blocking, ncclient).

    Args:
        filter: a subtree filter, as XML text (``<interfaces xmlns="..."/>``).
        xpath: an XPath filter instead (the server must advertise ``:xpath``).
        namespaces: the prefixes ``xpath`` uses, each to its namespace URI.
        force_list: element names that are lists in the result even when the reply holds
            one (``[interface]``).
        parse: the result as Python (the XML text in ``raw``); ``False``: the XML text.
        timeout: seconds for the login, and again for the reply (bounded by the host's
            ``task_timeout``).

    Returns:
        A ``Result`` whose ``result`` is the reply's ``<data>``, parsed unless ``parse`` is
        false.

    Raises:
        NetconfFilterError: a filter that cannot be sent (before connecting).
        NetconfCapabilityMissing: ``xpath`` to a server without ``:xpath`` (nothing sent).
        HostKeyMismatch, HostKeyUnknown: the host's key is not trusted; nothing was sent.
        ncclient.operations.RPCError: the server answered with an ``<rpc-error>``.
        ncclient.operations.TimeoutExpiredError: no reply within ``timeout`` (the session
            is dropped).
    """
    flt = _checked(filter, xpath, namespaces, force_list, timeout)
    return _read(task, "get", None, flt, force_list, parse, timeout)


@read_only
@needs(libraries=_LIBRARIES, install=DEVICES_EXTRA)
@check_params_with(_check_read)
def netconf_get_config(
    task: Task,
    *,
    source: str = "running",
    filter: str | None = None,
    xpath: str | None = None,
    namespaces: Mapping[str, str] | None = None,
    force_list: list[str] | None = None,
    parse: bool = True,
    timeout: float = DEFAULT_NETCONF_TIMEOUT,
) -> Result:
    """A ``<get-config>`` of datastore ``source`` (``running``, ``candidate``, ``startup``);
    otherwise as :func:`netconf_get`."""
    source = check_datastore(source)
    flt = _checked(filter, xpath, namespaces, force_list, timeout)
    return _read(task, "get-config", source, flt, force_list, parse, timeout)


anetconf_get = async_twin(netconf_get, name="anetconf_get", doc="""\
:func:`netconf_get` for event-loop runners: the same call in the run's thread pool (the loop
goes on meanwhile).""")

anetconf_get_config = async_twin(netconf_get_config, name="anetconf_get_config", doc="""\
:func:`netconf_get_config` for event-loop runners, as :func:`anetconf_get`.""")


def _checked(subtree: object, xpath: object, namespaces: object, force_list: object,
             timeout: object) -> str | tuple[str, Any] | None:
    check_force_list(force_list)
    number("timeout", timeout, above=0, unit="a number of seconds")
    return netconf_filter(subtree, xpath, namespaces)


def _read(task: Task, operation: str, source: str | None, flt: str | tuple[str, Any] | None,
          force_list: list[str] | None, parse: bool, timeout: float) -> Result:
    """One read on the host's session (opened if it is not); the session is dropped when the
    reply did not come (a late one must not answer the next request)."""
    require_libraries(netconf_get)
    from ncclient.operations import TimeoutExpiredError
    from ncclient.transport import TransportError

    host = task.host
    wait = bounded(task, timeout)
    session = netconf_session(host)
    with session.lock:
        manager = session.manager
        if manager is None or not session.is_open:
            manager = session.login(host, wait)
        if isinstance(flt, tuple):
            require_xpath(manager.server_capabilities, host.name)
        manager.timeout = wait
        try:
            reply = (manager.get(filter=flt) if operation == "get"
                     else manager.get_config(source=source, filter=flt))
        except (TimeoutExpiredError, TransportError):
            session.close()
            raise
    text = str(reply.data_xml)
    if not parse:
        return Result(host=host, result=text)
    return Result(host=host, result=parse_data(text, force_list or ()), raw=text)

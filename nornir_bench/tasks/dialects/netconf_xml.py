"""NETCONF's XML, no device touched: a read's filter checked and made, a reply's data as Python.

- :func:`netconf_filter`: ``filter`` (a subtree: XML text) or ``xpath`` (an expression, with
  its ``namespaces`` prefixes), checked once (a job's load, a task's start) and made into
  ncclient's ``filter`` argument; a mistake is one line saying what is allowed.
- :func:`parse_data`: the ``<data>`` of a ``<get>`` or ``<get-config>`` reply as dicts and
  lists (xmltodict's mapping: an element's children by name, a repeated element a list, text
  as strings), namespace declarations left out; elements named in ``force_list`` are lists
  even when the reply holds one (``interface``: one interface or many read alike).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "DATASTORES", "XPATH_CAPABILITY", "NetconfFilterError", "check_datastore", "check_force_list",
    "netconf_filter", "parse_data",
]

DATASTORES = ("running", "candidate", "startup")
XPATH_CAPABILITY = "urn:ietf:params:netconf:capability:xpath:1.0"
_BASE = "urn:ietf:params:xml:ns:netconf:base:1.0"


class NetconfFilterError(ValueError):
    """A filter that cannot be sent: what was wrong and what is allowed, in one line."""


def netconf_filter(
    subtree: object = None, xpath: object = None, namespaces: object = None
) -> str | tuple[str, Any] | None:
    """ncclient's ``filter`` for a read: a subtree as the whole ``<filter>`` element (text:
    ncclient's tuple form takes one top element only, a subtree filter may hold several),
    ``("xpath", (namespaces, expression))``, or ``None`` (the whole datastore).

    Raises:
        NetconfFilterError: both given, text that is not well-formed XML (its line and
            line), an empty expression, ``namespaces`` that is not prefixes to URIs.
    """
    if subtree is not None and xpath is not None:
        raise NetconfFilterError("give filter (a subtree) or xpath, not both")
    if namespaces is not None and xpath is None:
        raise NetconfFilterError("namespaces are the prefixes of an xpath: give xpath too")
    if subtree is not None:
        if not isinstance(subtree, str) or not subtree.strip():
            raise NetconfFilterError(f"filter must be a subtree as XML text, got {subtree!r}")
        _well_formed(subtree)
        return f'<filter xmlns="{_BASE}" type="subtree">{subtree.strip()}</filter>'
    if xpath is not None:
        if not isinstance(xpath, str) or not xpath.strip():
            raise NetconfFilterError(f"xpath must be a non-empty expression, got {xpath!r}")
        prefixes = _prefixes(namespaces)
        return ("xpath", (prefixes, xpath.strip()) if prefixes else xpath.strip())
    return None


def _well_formed(text: str) -> None:
    from xml.etree import ElementTree

    try:
        # a subtree filter may hold several top elements: wrapped, as it is sent
        ElementTree.fromstring(f"<filter>{text}</filter>")
    except ElementTree.ParseError as exc:
        what = str(exc).split(":", 1)[0]
        raise NetconfFilterError(
            f"filter is not well-formed XML: {what} (line {exc.position[0]})"
        ) from None


def _prefixes(namespaces: object) -> dict[str, str]:
    if namespaces is None:
        return {}
    if not isinstance(namespaces, Mapping) or not all(
        isinstance(k, str) and k and isinstance(v, str) and v for k, v in namespaces.items()
    ):
        raise NetconfFilterError(
            "namespaces must map each prefix of the xpath to its namespace URI, e.g. "
            f"{{if: urn:ietf:params:xml:ns:yang:ietf-interfaces}}, got {namespaces!r}"
        )
    return dict(namespaces)


def check_datastore(source: object) -> str:
    """``source`` if it names a datastore a ``<get-config>`` reads."""
    if source not in DATASTORES:
        raise NetconfFilterError(
            f"source must be one of {', '.join(DATASTORES)}, got {source!r}"
        )
    return str(source)


def check_force_list(force_list: object) -> tuple[str, ...]:
    """``force_list`` as element names (a list of strings)."""
    if force_list is None:
        return ()
    if isinstance(force_list, str) or not isinstance(force_list, Sequence) or not all(
        isinstance(name, str) and name for name in force_list
    ):
        raise NetconfFilterError(
            f"force_list must be a list of element names, e.g. [interface], got {force_list!r}"
        )
    return tuple(force_list)


def parse_data(data_xml: str, force_list: Sequence[str] = ()) -> dict[str, Any]:
    """The content of a reply's ``<data>`` element (``data_xml``: the element as text) as
    Python: ``{}`` for an empty one."""
    import xmltodict

    def drop_namespaces(path: Any, key: str, value: Any) -> tuple[str, Any] | None:
        return None if key == "@xmlns" or key.startswith("@xmlns:") else (key, value)

    parsed = xmltodict.parse(data_xml, postprocessor=drop_namespaces,
                             force_list=tuple(force_list) or None)
    data = next(iter(parsed.values())) if parsed else None  # the <data> element
    return dict(data) if isinstance(data, Mapping) else {}

"""NETCONF's XML, no device touched: a read's filter checked and made, a reply's data as Python.

- :func:`netconf_filter`: ``filter`` (a subtree: XML text) or ``xpath`` (an expression, with
  its ``namespaces`` prefixes), checked once (a job's load, a task's start) and made into
  ncclient's ``filter`` argument; a mistake is one line saying what is allowed.
  :func:`require_xpath`: an XPath filter sent only to a server that advertises ``:xpath``.
- :func:`parse_data`: the ``<data>`` of a ``<get>`` or ``<get-config>`` reply as dicts and
  lists (xmltodict's mapping: an element's children by name, a repeated element a list, text
  as strings), namespace declarations left out; elements named in ``force_list`` are lists
  even when the reply holds one (``interface``: one interface or many read alike).
- :func:`config_xml`: a change's XML (``<config>``, or the elements inside one) checked and
  made the ``<config>`` an ``<edit-config>`` takes, without entities, DTDs or network access
  (it comes from a job file or a template); a mistake is one line at its line and column.
- :func:`config_text`, :func:`xml_diff`: a datastore's contents as indented text (what a
  change's backup holds) and two of them diffed; :func:`as_config`: a ``<data>`` made the
  ``<config>`` that puts it back.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "DATASTORES", "NETCONF_NS", "XPATH_CAPABILITY", "NetconfCapabilityMissing",
    "NetconfFilterError", "as_config", "check_datastore", "check_force_list", "config_text",
    "config_xml", "netconf_filter", "parse_data", "require_xpath", "xml_diff",
]

DATASTORES = ("running", "candidate", "startup")
XPATH_CAPABILITY = "urn:ietf:params:netconf:capability:xpath:1.0"
NETCONF_NS = "urn:ietf:params:xml:ns:netconf:base:1.0"
MAX_CONFIG_XML = 16 * 1024 * 1024


class NetconfFilterError(ValueError):
    """A filter that cannot be sent: what was wrong and what is allowed, in one line."""


class NetconfCapabilityMissing(ValueError):
    """The request needs a capability the server does not advertise (``:xpath``)."""


def require_xpath(capabilities: Iterable[str], host: str) -> None:
    """Raise :class:`NetconfCapabilityMissing` unless ``capabilities`` (the URIs the server's
    hello advertised: ncclient's ``server_capabilities``) hold ``:xpath``, naming ``host``,
    the capability and the way out: a subtree filter (a read's and a check's ``filter``).
    An XPath filter is not sent to a server without it, which may refuse it, or ignore the
    filter and answer with everything."""
    if not any(uri.split("?", 1)[0] == XPATH_CAPABILITY for uri in capabilities):
        raise NetconfCapabilityMissing(
            f"{host} does not advertise :xpath ({XPATH_CAPABILITY}): give a subtree filter "
            "(filter) instead"
        )


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
        return f'<filter xmlns="{NETCONF_NS}" type="subtree">{subtree.strip()}</filter>'
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


def check_force_list(force_list: object, where: str = "force_list") -> tuple[str, ...]:
    """``force_list`` as element names (a list of strings); ``where``: its place, in the
    error's words."""
    if force_list is None:
        return ()
    if isinstance(force_list, str) or not isinstance(force_list, Sequence) or not all(
        isinstance(name, str) and name for name in force_list
    ):
        raise NetconfFilterError(
            f"{where} must be a list of element names, e.g. [interface], got {force_list!r}"
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


# -- a change's configuration -----------------------------------------------------------


def _parser() -> Any:
    from lxml import etree

    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                           remove_blank_text=True, remove_comments=True, huge_tree=False)


def config_xml(text: str, where: str = "config") -> str:
    """``text`` as the ``<config>`` element an ``<edit-config>`` takes: as it is when its root
    is ``config`` (in any namespace), else its elements wrapped in one (the data of several
    modules side by side).

    Raises:
        ValueError: not well-formed XML, in one line (``where``, the parser's line and column
            in ``text``).
    """
    from lxml import etree

    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{where} must be the XML of the configuration to edit, got {text!r}")
    if len(text) > MAX_CONFIG_XML:
        raise ValueError(f"{where}: larger than {MAX_CONFIG_XML:,} characters: not a change")
    try:
        elements = [etree.fromstring(text.lstrip().encode(), _parser())]
    except etree.XMLSyntaxError as exc:
        if not str(exc.msg).startswith("Extra content at the end of the document"):
            raise ValueError(f"{where}: not well-formed XML: {_said(exc)}") from None
        elements = _side_by_side(text.lstrip(), where)
    if len(elements) == 1 and etree.QName(elements[0]).localname == "config":
        return str(etree.tostring(elements[0], encoding="unicode"))
    config = etree.Element(f"{{{NETCONF_NS}}}config", nsmap={None: NETCONF_NS})
    config.extend(elements)
    return str(etree.tostring(config, encoding="unicode"))


def _side_by_side(text: str, where: str) -> list[Any]:
    """The elements of ``text``, several at its top level."""
    from lxml import etree

    try:
        return list(etree.fromstring(f"{_WRAPPER}{text}</config>".encode(), _parser()))
    except etree.XMLSyntaxError as exc:
        raise ValueError(f"{where}: not well-formed XML: {_said(exc, len(_WRAPPER))}") from None


_WRAPPER = f'<config xmlns="{NETCONF_NS}">'
_POSITION = re.compile(r",? line \d+, column \d+$")


def _said(exc: Any, shift: int = 0) -> str:
    """The parser's error in one line, at its place in the user's text (``shift``: the
    characters put before its first line)."""
    message = _POSITION.sub("", " ".join(str(exc.msg).split()))
    line, column = exc.position
    if line == 1:
        column = max(1, column - shift)
    return f"line {line}, column {column}: {message}"


def as_config(data: str) -> str:
    """A datastore's contents (``<data>``, as ``<get-config>`` returns them) as the
    ``<config>`` element an ``<edit-config>`` takes."""
    from lxml import etree

    root = etree.fromstring(data.encode(), _parser())
    config = etree.Element(f"{{{NETCONF_NS}}}config")
    config.extend(list(root))
    return str(etree.tostring(config, encoding="unicode"))


def config_text(xml: str) -> str:
    """A datastore's contents (``<data>`` or ``<config>``, as ``<get-config>`` returns them)
    as indented text, a line per element: what a backup holds and a diff compares."""
    from lxml import etree

    root = etree.fromstring(xml.encode(), _parser())
    for element in root.iter():
        if element.text is not None and not element.text.strip():
            element.text = None
        element.tail = None
    etree.cleanup_namespaces(root)
    parts = [etree.tostring(child, encoding="unicode", pretty_print=True) for child in root]
    return "".join(parts)


def xml_diff(before: str, after: str) -> str:
    """The unified diff of two datastores' :func:`config_text` (empty: the same)."""
    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), "running",
                                 "candidate", lineterm="", n=2)
    return "\n".join(lines)

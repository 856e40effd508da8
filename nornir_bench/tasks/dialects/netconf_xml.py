"""A NETCONF configuration as XML, no device touched: the user's ``<config>`` checked
(:func:`config_xml`), a datastore's contents as text one can diff (:func:`config_text`,
:func:`xml_diff`), and XML data as Python (:func:`xml_data`) for checks to take values from
with JMESPath.

The user's XML is parsed without entities, DTDs or network access: it comes from a job file
or a template, and a configuration needs none of them.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

__all__ = ["NETCONF_NS", "as_config", "config_text", "config_xml", "xml_data", "xml_diff"]

NETCONF_NS = "urn:ietf:params:xml:ns:netconf:base:1.0"
MAX_CONFIG_XML = 16 * 1024 * 1024


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


def xml_data(xml: str) -> Any:
    """XML data (``<data>``, as ``<get>`` returns it) as Python: an element holding others as
    a mapping of their local names (one that repeats as a list), a leaf as its text (``None``
    when empty)."""
    from lxml import etree

    root = etree.fromstring(xml.encode(), _parser())
    return _value(root) or {}


def _value(element: Any) -> Any:
    from lxml import etree

    children = [child for child in element if isinstance(child.tag, str)]
    if not children:
        text = (element.text or "").strip()
        return text or None
    found: dict[str, Any] = {}
    for child in children:
        name = etree.QName(child).localname
        value = _value(child)
        if name not in found:
            found[name] = value
        elif isinstance(found[name], list):  # no value is a list: this one is the repeats'
            found[name].append(value)
        else:
            found[name] = [found[name], value]
    return found

"""Which configuration dialect a host speaks, as a hier_config driver: FRR's of our own
(:class:`FRRDriver`), hier_config's own for the platforms it knows.

A host's dialect is its ``config_platform`` (host, group or defaults data), else its nornir
``platform`` (``cisco_ios``, ``arista_eos`` ...). FRR speaks a Cisco-like CLI through vtysh,
so its hosts carry netmiko's ``cisco_ios`` platform for the login; ``config_platform: frr``
says what their configuration is. A merge is worked out with hier_config's generic driver
where no driver is known; a replace needs the platform's own rules, and is refused without.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from hier_config import HConfig, HConfigChild, Platform, get_hconfig_driver
from hier_config.models import (
    IdempotentCommandsRule,
    MatchRule,
    NegationSubRule,
    PerLineSubRule,
    SectionalExitingRule,
)
from hier_config.platforms.driver_base import HConfigDriverBase, HConfigDriverRules

if TYPE_CHECKING:
    from nornir.core.inventory import Host

__all__ = [
    "DIALECTS", "FRRDriver", "SHOW_RUNNING", "dialect_of", "driver_for", "frr_remediation",
    "hier_config_platform", "running_config_command",
]

# nornir's platform names (netmiko's, scrapli's, napalm's) for the dialects hier_config has.
_HIER_CONFIG = {
    "cisco_ios": Platform.CISCO_IOS, "cisco_iosxe": Platform.CISCO_IOS, "ios": Platform.CISCO_IOS,
    "cisco_nxos": Platform.CISCO_NXOS, "nxos": Platform.CISCO_NXOS,
    "nxos_ssh": Platform.CISCO_NXOS, "cisco_iosxr": Platform.CISCO_XR,
    "cisco_xr": Platform.CISCO_XR, "iosxr": Platform.CISCO_XR,
    "arista_eos": Platform.ARISTA_EOS, "eos": Platform.ARISTA_EOS,
    "aruba_aoscx": Platform.ARUBA_AOSCX, "hp_procurve": Platform.HP_PROCURVE,
    "hp_comware": Platform.HP_COMWARE5, "vyos": Platform.VYOS,
}
DIALECTS = ("frr", *sorted(_HIER_CONFIG))
"""The dialects a replace knows: ``frr``, and nornir's names for hier_config's platforms."""

SHOW_RUNNING = "show running-config"
# The dialects whose running configuration another command prints.
_SHOW_RUNNING = {
    "hp_comware": "display current-configuration", "huawei": "display current-configuration",
    "huawei_vrp": "display current-configuration", "juniper_junos": "show configuration",
    "junos": "show configuration",
}

_NEIGHBOR = r"^neighbor (\S+) "


def _idempotent(*lineage: str) -> IdempotentCommandsRule:
    """A setting a new value replaces (sent alone, not after ``no`` of the old value)."""
    return IdempotentCommandsRule(match_rules=tuple(MatchRule(re_search=r) for r in lineage))


def _drop_empty_sections(config: HConfig) -> None:
    # FRR prints no ``interface X`` and no address family without lines under them: an empty
    # one is no configuration.
    for child in tuple(config.children):
        if child.text.startswith("interface ") and not child.children:
            child.delete()
    for bgp in config.get_children(startswith="router bgp "):
        for family in tuple(bgp.children):
            if family.text.startswith("address-family ") and not family.children:
                family.delete()


class FRRDriver(HConfigDriverBase):
    """FRR's vtysh configuration: one space per level, ``exit`` closing a section and
    ``exit-address-family`` an address family, and its settings that take a new value in
    place (``hostname``, a neighbour's ``remote-as``, ``description`` and timers)."""

    @staticmethod
    def _instantiate_rules() -> HConfigDriverRules:
        in_bgp = r"^router bgp "
        return HConfigDriverRules(
            indentation=1,
            per_line_sub=[
                PerLineSubRule(search=r"^(Building configuration|Current configuration).*",
                               replace=""),
                PerLineSubRule(search=r"^\s*!.*", replace=""),
                # The lines that close a section: its indentation already says where it ends.
                PerLineSubRule(search=r"^\s*(end|exit|exit-address-family|exit-vrf|exit-vnc|quit)"
                                      r"\s*$", replace=""),
                # FRR prints its build's version and the defaults profile it started with:
                # ``frr version X`` is taken as a no-op and ``no frr version`` refused, so
                # neither is configuration to compare or send.
                PerLineSubRule(search=r"^frr (version|defaults) .*", replace=""),
            ],
            sectional_exiting=[
                SectionalExitingRule(
                    match_rules=(MatchRule(startswith="router bgp"),
                                 MatchRule(startswith="address-family")),
                    exit_text="exit-address-family",
                ),
            ],
            idempotent_commands=[
                _idempotent(r"^hostname "),
                _idempotent(r"^log syslog"),
                _idempotent(r"^interface ", r"^description "),
                _idempotent(in_bgp, r"^bgp router-id "),
                _idempotent(in_bgp, _NEIGHBOR + "remote-as "),
                _idempotent(in_bgp, _NEIGHBOR + "description "),
                _idempotent(in_bgp, _NEIGHBOR + "advertisement-interval "),
                _idempotent(in_bgp, _NEIGHBOR + r"timers connect "),
                _idempotent(in_bgp, _NEIGHBOR + r"timers \d"),
                _idempotent(r"^route-map ", r"^description "),
                _idempotent(r"^route-map ", r"^set local-preference "),
                _idempotent(r"^route-map ", r"^set metric "),
                _idempotent(r"^route-map ", r"^set weight "),
                _idempotent(r"^route-map ", r"^set origin "),
            ],
            negation_sub=[
                # ``no neighbor X remote-as Y`` removes the whole neighbour; FRR takes it as
                # ``no neighbor X``, the form frr-reload.py sends.
                NegationSubRule(
                    match_rules=(MatchRule(startswith="router bgp"),
                                 MatchRule(re_search=_NEIGHBOR + "remote-as ")),
                    search=r"^no neighbor (\S+) remote-as .*", replace=r"no neighbor \1",
                ),
                # An interface's description is removed with ``no description`` alone: FRR
                # refuses it with the text after it.
                NegationSubRule(
                    match_rules=(MatchRule(startswith="interface "),
                                 MatchRule(startswith="description ")),
                    search=r"^no description .*", replace="no description",
                ),
            ],
            post_load_callbacks=[_drop_empty_sections],
        )


def frr_remediation(running: HConfig, remediation: HConfig) -> None:
    """FRR's rules that hier_config has no rule kind for, applied in place to
    ``remediation``, the lines that change ``running``:

    - a neighbour removed whole (``no neighbor X``) takes its other lines with it, in its
      address families too, and FRR refuses a ``no neighbor X ...`` after it (frr#11080):
      those are dropped;
    - an interface is the kernel's (``no interface lo`` is refused), and an address family
      has no ``no address-family``: one left out of the target is emptied line by line.
    """
    for bgp in remediation.get_children(startswith="router bgp "):
        was = running.get_child(equals=bgp.text)
        if was is not None:
            _emptied(bgp, was, "no address-family ")
        gone = {m.group(1) for c in bgp.children
                if (m := re.fullmatch(r"no neighbor (\S+)", c.text))}
        for child in tuple(bgp.all_children()):
            words = child.text.split()
            if words[:2] == ["no", "neighbor"] and len(words) > 3 and words[2] in gone:
                child.delete()
    _emptied(remediation, running, "no interface ")
    _drop_empty_sections(remediation)  # families left with nothing to do


def _emptied(remediation: HConfig | HConfigChild, running: HConfig | HConfigChild,
             negation: str) -> None:
    """Each ``negation``-line of ``remediation`` (``no interface lo``) in place of which the
    section is kept, each of its lines in ``running`` negated."""
    for child in tuple(remediation.children):
        section = running.get_child(equals=child.text[3:]) \
            if child.text.startswith(negation) else None
        if section is None:
            continue
        child.delete()
        emptied = remediation.add_child(section.text)
        for line in section.children:
            emptied.add_deep_copy_of(line).negate()


def driver_for(dialect: str | None, *, replace: bool) -> HConfigDriverBase:
    """The hier_config driver of ``dialect`` (see :func:`dialect_of`). Without one, a merge
    gets the generic driver; a replace is a ``ValueError`` naming the dialects there are."""
    known = dialect if dialect in DIALECTS else None
    if known is None and replace:
        raise ValueError(
            f"mode: replace has no configuration driver for platform {dialect!r}: give the "
            f"host's config_platform, one of {', '.join(DIALECTS)}"
        )
    return _driver(known)


@functools.cache
def _driver(dialect: str | None) -> HConfigDriverBase:
    # One per dialect for the process: a driver is its rules, which hier_config only reads.
    if dialect == "frr":
        return FRRDriver()
    return get_hconfig_driver(hier_config_platform(dialect) or Platform.GENERIC)


def hier_config_platform(dialect: str | None) -> Platform | None:
    """hier_config's platform for a dialect nornir names (``cisco_ios``, ``eos`` ...);
    ``None`` for FRR's and for one it does not know."""
    return _HIER_CONFIG.get(dialect or "")


def dialect_of(host: Host) -> str | None:
    """The host's configuration dialect: its ``config_platform`` data, else its platform."""
    given = host.get("config_platform")
    return str(given) if given else host.platform


def running_config_command(host: Host) -> str:
    """The command that prints the host's running configuration: its ``running_config_command``
    data (host, group or defaults), else its dialect's (``show running-config`` but for the
    few that say ``display current-configuration`` or ``show configuration``)."""
    given = host.get("running_config_command")
    if given:
        return str(given)
    return _SHOW_RUNNING.get(dialect_of(host) or "", SHOW_RUNNING)

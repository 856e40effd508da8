"""A configuration line refused, in the words of the device's dialect.

A device answers each line sent in configuration mode; whether the answer refuses the line
depends on the CLI. FRR's vtysh prints nothing for a line it takes, so anything it prints
refuses the line (``BGP is already running; AS is 65003`` has no ``%``), except a few notes
it prints for a line it took. The Cisco-like CLIs mark their refusals (a line beginning
``% ``) and print other lines that are not (IOS's log, EOS's ``!`` warnings, NX-OS's
``Warning:``). Each dialect (:func:`~nornir_bench.tasks.dialects.dialects.dialect_of`: the host's
``config_platform``, else its platform) has its :class:`RefusalRule` here, with where the
rule comes from; a dialect not named keeps the ``% `` rule.

The rules read the device's answer alone: scrapli's ``response.result`` is that already;
netmiko's ``send_config_set`` reply also holds the line's echo and the prompt after the
answer, which :func:`answer_in` takes off.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from hier_config import Platform

from nornir_bench.tasks.dialects.dialects import hier_config_platform

__all__ = ["FRR", "PERCENT", "RefusalRule", "answer_in", "refusal", "rule_for"]


@dataclass(frozen=True)
class RefusalRule:
    """How a dialect's CLI says it did not take a configuration line.

    Attributes:
        refusing: a line of the answer that refuses (``re.match`` on the line as printed, so
            an indented ``%`` is not ``% `` at the line's start); ``None``: every line that
            is not a note refuses (a CLI that prints nothing for a line it takes).
        notes: lines printed for a line taken (``re.fullmatch`` on the stripped line), read
            where ``refusing`` is ``None``.
    """

    refusing: re.Pattern[str] | None
    notes: tuple[re.Pattern[str], ...] = ()

    def refusal(self, answer: str) -> str | None:
        """The device's words when ``answer`` (to one line, without its echo and prompt)
        refuses the line; ``None`` when it takes it."""
        if self.refusing is not None:
            said = next((line for line in answer.splitlines() if self.refusing.match(line)), None)
            return None if said is None else said.strip()
        words = [
            line.strip() for line in answer.splitlines()
            if line.strip() and not any(note.fullmatch(line.strip()) for note in self.notes)
        ]
        return " ".join(words) or None


PERCENT = RefusalRule(re.compile(r"% "))
"""A reply line beginning ``% ``: IOS's ``% Invalid input detected at '^' marker.`` (after
its caret line), ``% Incomplete command.``, ``% Ambiguous command: "..."``. Not a ``%``
within a line, an indented one, or IOS's log (``%SYS-5-CONFIG_I: ...``). The rule of a
dialect not named below."""

FRR = RefusalRule(
    None,
    notes=(
        # FRR 8.4's lib/routemap.c, route_map_lookup_warn_noexist(): a reference to a
        # route-map not defined (yet) is kept, and vtysh is told so.
        re.compile(r"The route-map '.*' does not exist\."),
        # bgpd/bgp_vty.c, neighbor_tcp_mss: printed before the setting is applied (a
        # refusal of the neighbour may follow it: "% Specify remote-as ...").
        re.compile(r"Warning: Reset BGP session for tcp-mss value to take effect"),
        # zebra/table_manager.c, table_manager_range(): a new range is kept for the next start.
        re.compile(r"% New range will be taken into account at restart"),
    ),
)
"""FRR's vtysh: anything printed refuses the line (vtysh's own ``% Unknown command: ...``,
a daemon's ``BGP is already running; AS is 65003``, ``ospfd is not running``), but the notes
FRR prints for a line it took, found in FRR's source where a configuration command prints
and returns ``CMD_SUCCESS``. Not notes, though FRR returns ``CMD_SUCCESS``: lines whose
configuration does not follow (staticd's ``% Refusing to remove a non-existent route``,
``% "log monitor" is deprecated and does nothing.``)."""

# Each platform's rule, from what its drivers and Ansible's network collections read as an
# error: scrapli's failed_when_contains (scrapli/driver/core/*/base_driver.py;
# scrapli_community's platforms), and the terminal plugins' terminal_stderr_re.
_RULES: Mapping[Platform, RefusalRule] = MappingProxyType({
    # scrapli cisco_iosxe: "% Ambiguous command", "% Incomplete command", "% Invalid input
    # detected", "% Unknown command"; Ansible cisco.ios: "% ?Error", "% Invalid".
    Platform.CISCO_IOS: RefusalRule(re.compile(r"%(?: |Error\b)")),
    # scrapli cisco_nxos: "% Invalid command at", "% Invalid parameter", ...; Ansible
    # cisco.nxos: "^% \w+", "\nerror:(.*)" (any case). Its "Warning: ..." takes the line.
    Platform.CISCO_NXOS: RefusalRule(re.compile(r"%(?: |Error\b)|(?i:error:)")),
    # scrapli cisco_iosxr: "% Invalid input detected", ...; Ansible cisco.iosxr:
    # "% ?Error", "% ?This command is not authorized".
    Platform.CISCO_XR: RefusalRule(re.compile(r"%(?: |Error\b)")),
    # scrapli arista_eos: "% Invalid input", "% Error", "% Cannot commit", ...; Ansible
    # arista.eos: "% ?Error". EOS's warnings begin "! " and take the line.
    Platform.ARISTA_EOS: RefusalRule(re.compile(r"%(?: |Error\b)")),
    # scrapli_community aruba_aoscx: "% Command incomplete.", "Invalid input:",
    # "doesn't exist".
    Platform.ARUBA_AOSCX: RefusalRule(re.compile(r"% |Invalid input:|.*\bdoesn't exist\b")),
    # aruba/aos-switch-ansible-collection's arubaoss terminal: "^% \w+", "% ?Error",
    # "Error:", "invalid input", "(?:incomplete|ambiguous) command" (any case).
    Platform.HP_PROCURVE: RefusalRule(re.compile(
        r"%(?: |Error\b)|(?i:\s*(?:invalid input|error:|(?:incomplete|ambiguous) command))"
    )),
    # scrapli_community hp_comware: "% Unrecognized command found at '^' position."; its
    # others: "% Ambiguous command", "% Wrong parameter", "% Incomplete command", "% Too
    # many parameters". Comware's log lines begin "%Jan ..." (no space).
    Platform.HP_COMWARE5: RefusalRule(re.compile(r"% ")),
    # Ansible vyos.vyos: "\n\s*Invalid command:", "\nCommit failed", "\n\s+Set failed",
    # "\n\s+Delete failed"; scrapli_community vyos: "Invalid value", "Ambiguous command",
    # "Incomplete command", "Need to specify the config node to set". "[edit]" takes it.
    Platform.VYOS: RefusalRule(re.compile(
        r"\s*(?:Invalid command:|Invalid value|Set failed|Delete failed|Commit failed|"
        r"Ambiguous command|Incomplete command|Need to specify the config node to set)"
    )),
})


def rule_for(dialect: str | None) -> RefusalRule:
    """The refusal rule of ``dialect`` (``frr``, nornir's platform names); :data:`PERCENT`
    for one not known."""
    if dialect == "frr":
        return FRR
    platform = hier_config_platform(dialect)
    return PERCENT if platform is None else _RULES.get(platform, PERCENT)


def refusal(answer: str, dialect: str | None) -> str | None:
    """The device's words when ``answer`` (its answer to one configuration line, without
    the line's echo and the prompt) refuses the line, by ``dialect``'s rule."""
    return rule_for(dialect).refusal(answer)


def answer_in(reply: str, line: str, prompt: str) -> str:
    """The device's answer in ``reply``, netmiko's ``send_config_set`` text for one
    ``line``: what follows the line's echo (the first reply line that is the line, after
    spaces or the ``prompt``), without the prompt ending it. A reply without the echo is
    kept whole but for its prompt: a refusal is not lost."""
    lines = reply.splitlines()
    sent = line.strip()
    for index, text in enumerate(lines):
        before, echo, after = text.strip().rpartition(sent)
        if echo and not after and (not before.strip() or before.startswith(prompt)):
            lines = lines[index + 1:]
            break
    while lines and not lines[-1].strip():
        lines.pop()
    if lines and prompt and lines[-1].strip().startswith(prompt):
        lines.pop()
    return "\n".join(lines).rstrip()

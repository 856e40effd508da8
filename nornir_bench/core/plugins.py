"""``InitNornir``, importing only the plugins a run uses.

nornir's ``InitNornir`` registers every plugin installed before it builds anything: every
runner, every inventory plugin and every connection plugin, whatever the run uses. With
nornir-netmiko installed, the last imports netmiko and paramiko: 0.17-0.23 s of a 0.7 s
benchmark process, paid by every job too, also those that never open an SSH session. And each
kind's registration reads the installed packages' entry points again (about 8 ms each).

:func:`init_nornir` builds the same ``Nornir`` the same way (configuration, logging, state,
nornir's public constructor) from one read of the entry points, and imports only the runner,
inventory plugin and transform function its configuration names, and the connection plugins
the caller names. Plugins registered in code (``RunnersPluginRegister.register(...)``) are
found as ``InitNornir`` finds them. nornir itself is not changed in any way: ``InitNornir``
called later in the same process still registers everything.

:func:`registered_plugins` and :func:`register_plugins` carry what this process has registered
(entry points and ``XPluginRegister.register(name, cls)`` calls alike) into another process: a
processpool worker is a fresh interpreter, and a task there must find the plugins the user
registered at run time, as it would in the user's process.
"""

from __future__ import annotations

from collections.abc import Collection
from importlib import metadata
from typing import Any, TypeVar

from nornir.core import Nornir
from nornir.core.configuration import Config
from nornir.core.inventory import Inventory
from nornir.core.plugins.connections import (
    CONNECTIONS_PLUGIN_PATH,
    ConnectionPluginRegister,
)
from nornir.core.plugins.inventory import (
    INVENTORY_PLUGIN_PATH,
    TRANSFORM_FUNCTION_PLUGIN_PATH,
    InventoryPluginRegister,
    TransformFunctionRegister,
)
from nornir.core.plugins.register import PluginRegister
from nornir.core.plugins.runners import RUNNERS_PLUGIN_PATH, RunnersPluginRegister
from nornir.core.state import GlobalState

from nornir_bench.core._logging import configure_nornir_logging
from nornir_bench.core._pickling import cloudpickles

__all__ = ["init_nornir", "register_plugins", "registered_plugins"]

_Plugin = TypeVar("_Plugin")


def init_nornir(
    config_file: str = "",
    dry_run: bool = False,
    *,
    connections: Collection[str] | None = None,
    **kwargs: Any,
) -> Nornir:
    """``InitNornir(config_file, dry_run, **kwargs)``, importing only the plugins it names.

    Args:
        config_file, dry_run, kwargs: as for ``InitNornir`` (``inventory``, ``runner``,
            ``logging`` ...).
        connections: the connection plugins to register, by name (``{"netmiko"}``); ``None``:
            every one installed, as ``InitNornir``. A task that opens a connection whose
            plugin is not registered fails with nornir's ``PluginNotRegistered``.

    Raises:
        PluginNotRegistered: a plugin named is neither installed nor registered, as
            ``InitNornir`` raises it.
    """
    installed = _Installed()
    if connections is None:
        installed.register_all(ConnectionPluginRegister, CONNECTIONS_PLUGIN_PATH)
    else:
        for name in connections:
            installed.plugin(ConnectionPluginRegister, CONNECTIONS_PLUGIN_PATH, name)
    config = Config.from_file(config_file, **kwargs) if config_file else Config.from_dict(**kwargs)
    data = GlobalState(dry_run=dry_run)
    configure_nornir_logging(config.logging)
    inventory = _load_inventory(config, installed)
    runner = installed.plugin(RunnersPluginRegister, RUNNERS_PLUGIN_PATH, config.runner.plugin)
    return Nornir(
        inventory=inventory,
        runner=runner(**config.runner.options),
        config=config,
        data=data,
    )


def _load_inventory(config: Config, installed: _Installed) -> Inventory:
    """nornir's ``load_inventory``, loading only the plugins ``config`` names."""
    inventory_plugin = installed.plugin(
        InventoryPluginRegister, INVENTORY_PLUGIN_PATH, config.inventory.plugin
    )
    inventory = inventory_plugin(**config.inventory.options).load()
    if config.inventory.transform_function:
        transform = installed.plugin(
            TransformFunctionRegister,
            TRANSFORM_FUNCTION_PLUGIN_PATH,
            config.inventory.transform_function,
        )
        for host in inventory.hosts.values():
            transform(host, **(config.inventory.transform_function_options or {}))
    return inventory


# Every plugin register of nornir, by kind. nornir's registers share one class-level dict unless
# one was reset (``deregister_all``), so each is read and written on its own.
_REGISTERS: dict[str, PluginRegister[Any]] = {
    "connections": ConnectionPluginRegister,
    "inventory": InventoryPluginRegister,
    "runners": RunnersPluginRegister,
    "transform_functions": TransformFunctionRegister,
}


def registered_plugins() -> dict[str, dict[str, Any]]:
    """Every plugin registered in this process, by kind and name, that can be sent to another
    (cloudpickle: classes of importable modules by reference, others by value).

    A plugin that cannot be pickled is left out: a task in the other process that uses it gets
    nornir's ``PluginNotRegistered``, naming it.
    """
    return {
        kind: {name: plugin for name, plugin in register.available.items() if cloudpickles(plugin)}
        for kind, register in _REGISTERS.items()
    }


def register_plugins(plugins: dict[str, dict[str, Any]]) -> None:
    """Register ``plugins`` (from :func:`registered_plugins`) in this process's registers; a
    name registered here already is given the other process's plugin."""
    for kind, by_name in plugins.items():
        register = _REGISTERS.get(kind)
        if register is not None:
            register.available.update(by_name)


class _Installed:
    """The installed packages' entry points, read once."""

    def __init__(self) -> None:
        self._entry_points = metadata.entry_points()

    def register_all(self, register: PluginRegister[Any], group: str) -> None:
        """Every plugin of ``group``, registered as ``register.auto_register()`` does."""
        for entry_point in self._entry_points.select(group=group):
            register.register(entry_point.name, entry_point.load())

    def plugin(self, register: PluginRegister[_Plugin], group: str, name: str) -> _Plugin:
        """The plugin ``name`` of ``register``; if it is not registered yet, its entry point
        in ``group`` alone is loaded and registered."""
        if name not in register.available:
            for entry_point in self._entry_points.select(group=group, name=name):
                register.register(name, entry_point.load())
        return register.get_plugin(name)

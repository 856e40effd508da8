"""Inventory plugins of nornir-bench."""

from nornir_bench.inventory.synthetic import SyntheticInventory

__all__ = ["SyntheticInventory"]

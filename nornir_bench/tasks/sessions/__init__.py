"""A device talked to: its sessions (netmiko's channel, scrapli's async driver), each login
through its jump host with its host key checked, and a plan: a conversation written once that
either session's driver runs (``_plan``)."""

"""A configuration change (``send_config``): its input checked, its flow (read, diff, back up,
send, verify, check, roll back, save), its backups, the journal of changes pending
confirmation, and a router restored from its backup."""

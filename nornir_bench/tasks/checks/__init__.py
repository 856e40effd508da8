"""Tasks that read a device and change nothing: a command (``send_command``) and its output as
data, state checks (a command, a parser, what must hold) and the fleet audit built on them."""

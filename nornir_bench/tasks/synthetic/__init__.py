"""Tasks that need no device: a simulated round trip (``sim_rtt``), a TCP ping, and CPU-bound
parsing of a realistic ``show interfaces``."""

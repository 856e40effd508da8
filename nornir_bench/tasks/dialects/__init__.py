"""A device's configuration language, with no device touched: its dialect (a hier_config
driver), what it answers to a line it refuses, and a configuration as text (a change merged, a
replace's target, the remediation and its diff)."""

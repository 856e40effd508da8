"""Seeing what a run did, from its records file: two runs compared (:mod:`.compare`), and a
report page (:mod:`.page`)."""

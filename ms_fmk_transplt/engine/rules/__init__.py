"""The rule families: one folder per family (the prefix of its rule ids), each holding the
modules that declare its ids and implement them; registry.py lists them in order."""

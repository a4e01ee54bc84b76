"""The application: the ``tokenlaw`` command line, its subcommands, the pytest plugin and scaffolding.

The top layer: thin calls into the registry, the tiers and the report model; nothing below imports it.
"""

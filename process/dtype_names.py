"""The four floating dtypes tokenlaw judges, by name, in report order: the one list (torch-free).

:mod:`tokenlaw.operators.dtypes` maps them to torch dtypes and holds the facts the tiers share about them;
the command line checks ``--dtype`` against these names before importing torch (issue 47).
"""
NAMES: tuple = ("float64", "float32", "float16", "bfloat16")

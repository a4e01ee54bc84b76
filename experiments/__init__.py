"""The papers' composition experiments (``tokenlaw reproduce ablation|retrofit``), seeded.

One module per experiment (``ablation``, ``retrofit``, with ``tabular_model``,
``tabular_tasks`` and ``retrofit_plot``); each returns its result, and the
app's ``reproduce`` command (``app/reproduce_cmd.py``) writes the reports and maps the result
to an exit code.
"""

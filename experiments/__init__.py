"""The papers' experiments (``tokenlaw reproduce all|NAME``), seeded.

One module per experiment: ``exactness``, ``ablation`` and ``retrofit`` (paper 1; with ``tabular_model``,
``tabular_tasks`` and ``retrofit_plot``), ``recall``, ``distractors``, ``unanswerable`` and ``sink`` (the
pn_fir_tau paper; with ``tiny_attention``, ``recall_tasks``, ``recall_runs``, ``stdlib_corpus`` and
``curves_plot``).  Each returns its result and its ``figures``; ``fidelity`` runs them all and puts every
paper figure beside ours, and the app's ``reproduce`` command (``app/reproduce_cmd.py``) writes the reports.
"""

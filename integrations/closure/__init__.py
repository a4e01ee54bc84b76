"""The closure analyser for ``nn.Module`` s (``tokenlaw closure``): where a model stops commuting with null-token
insertion (:mod:`.analyser`), and example models to run it on (:mod:`.examples`).

A subpackage, not a top-level module of ``integrations``: the report's ``kernel_sources`` digests the backends'
own modules (the top level of ``integrations/``), and the analyser is no backend.
"""

"""The attention-normaliser zoo: sparsemax, entmax-1.5, softmax+1, learned sinks, sigmoid, ReLA, softpick.

Part of the default registry (``properties.catalogue.collect`` names this
package beside ``tokenlaw.operators``): each is judged in every tier and gets a
row of the normaliser law table.  One operator per file, as in ``operators/``.
"""

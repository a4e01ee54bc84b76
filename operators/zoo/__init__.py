"""The attention-normaliser zoo: sparsemax, entmax-1.5, softmax+1, learned sinks, sigmoid, ReLA, softpick.

Opt-in for now: ``tokenlaw check --operators tokenlaw.operators.zoo`` (add
``--with-builtins`` to judge them beside sdpa and the FIR family).  They are
not in the default registry because their cells cost far more than the
built-ins' (measured on a loaded 2-core machine: 114 rows in 786 s at the smoke
profile; one operator's default-profile check ran past 15 minutes), which would
break the everyday check's 5-minute budget and CI's 20; making them cheap is
the open work of issue 22.  One operator per file, as in ``operators/``.
"""

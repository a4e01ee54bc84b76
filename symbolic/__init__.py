"""Symbolic tier: sympy and z3 trace the operators written against the array namespace."""

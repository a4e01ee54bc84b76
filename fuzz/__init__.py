"""Fuzz tier: Hypothesis strategies and the cell runner."""

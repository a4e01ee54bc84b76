"""Triton kernels (forward passes) registered as torch custom ops."""

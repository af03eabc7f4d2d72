"""Cabling plans: an engineer's devices and cables, with their own names and ports."""

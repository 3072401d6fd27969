"""Fidelity scoring shared by `s2c eval` and the tool workers (docs/eval.md)."""

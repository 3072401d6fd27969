"""Benchmarks: scripts that print tables (see README.md). They import production code;
production never imports them."""

"""`s2c eval`: score generated pages against reference pages (docs/eval.md)."""

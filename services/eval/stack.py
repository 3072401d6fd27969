"""The stack eval asks for unless told otherwise: a leaf both the light `eval` subcommand
and the runner read, so neither imports the other."""

# Upstream's default and the stack most generations use; its Tailwind renders offline from
# the vendored copy, so eval scores what users get (docs/eval.md).
DEFAULT_STACK = "html_tailwind"

"""negbench: measure, explain and improve how language models understand negation."""
__version__ = "0.1.0"

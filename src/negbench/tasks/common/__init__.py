"""Helpers shared by several benchmarks: the error analysis of negation choices (NUBench,
KoNUBench, negation-mini), minimal pairs (JSTS-Neg, JNLI-Neg) and llm-jp-eval's prompt format."""

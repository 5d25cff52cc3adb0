"""Benchmark construction tools: JSTS-Neg built from JGLUE JSTS by the JNLI-Neg method.

``ja_negation`` (cue insertion), ``judge`` (LLM well-formedness filter), ``jsts_neg`` (pipeline,
annotation export/import, in-house set), ``agreement`` (Fleiss' kappa), ``cli`` (``negbench build``).
"""

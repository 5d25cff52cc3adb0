"""negbench inside other tools (lm-evaluation-harness's model ``negbench``)."""

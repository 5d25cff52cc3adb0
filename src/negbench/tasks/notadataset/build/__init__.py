"""``negbench build notadataset``: This is not a Dataset built the way the paper did — WordNet
3.0 read directly (``wordnet.py``), the triples of the 11 patterns (``triples.py``), the editable
templates (``templates.py``, ``shipped_templates/``), English inflection (``inflect_en.py``) and
the command line (``cli.py``).  See ``README.md`` here."""

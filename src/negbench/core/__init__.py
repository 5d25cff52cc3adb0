"""The core of an evaluation: requests and responses, the token trie, the on-disk response cache
and the engine that deduplicates, caches, batches and shares prefixes.  Nothing here knows a
benchmark, a prompt or a command line."""

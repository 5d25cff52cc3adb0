"""What ``negbench tasks`` says of the built-in tasks is what a run scores: the summaries count
the scored items and name the few-shot pool (negation-mini once said 48 items where runs scored
40)."""

from __future__ import annotations

import re

from negbench.tasks import get_task


def test_negation_mini_summary_counts_the_scored_items_and_names_the_pool():
    t = get_task("negation-mini")
    test, dev = t.load(t.test_split), t.load(t.fewshot_split)
    assert f"{len(test) + len(dev)} hand-written" in t.summary
    assert f"{len(test)} scored (test)" in t.summary
    first, last = dev[0].id, dev[-1].id
    assert f"the first {len(dev)} ({first}..{last}) the few-shot pool (dev)" in t.summary


def test_truefalse_mini_summary_counts_the_scored_pairs_and_items():
    t = get_task("truefalse-mini")
    test, dev = t.load(t.test_split), t.load(t.fewshot_split)
    pairs = {d["pair"] for d in test}
    pool = sorted({d["pair"] for d in dev})
    m = re.search(r"(\d+) hand-written .* (\d+) scored \((\d+) items, test\)", t.summary)
    assert m, t.summary
    assert (int(m.group(1)), int(m.group(2)), int(m.group(3))) == (
        len(pairs) + len(pool),
        len(pairs),
        len(test),
    )
    assert f"pairs {pool[0]}-{pool[-1]} the few-shot pool (dev)" in t.summary

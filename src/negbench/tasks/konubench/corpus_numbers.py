"""The corpus numbers Thunder-KoNUBench reports (§3.2 Table 2, §3.3), beside which ``negbench
analyze negation`` prints its own counts (:mod:`negbench.analyze`)."""

from __future__ import annotations

from typing import TypedDict


class PaperTable2(TypedDict):
    """Table 2's counts: sentences, negated ones, and those by type and by clause."""

    sentences: int
    negated: int
    types: dict[str, int]
    clauses: dict[str, int]


#: The paper's Table 2 (§3.2): 3,160 negated sentences among 29,476.
PAPER_TABLE2: PaperTable2 = {
    "sentences": 29476,
    "negated": 3160,
    "types": {"an-short": 795, "an-long": 1598, "mot-short": 174, "mot-long": 473, "malda": 120},
    "clauses": {
        "adnominal": 1022,
        "adverbial": 624,
        "noun": 98,
        "quotation": 132,
        "subordinate": 241,
        "main": 1043,
    },
}
#: §3.3: negated questions the paper extracted from KMMLU (the release holds 7,154).
PAPER_KMMLU_NEGATED = 7153

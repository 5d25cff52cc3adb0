"""Fill a review sheet: rev = {id: {label_col: new_text or None, ...}, disagree labels, comment}."""
import csv, io, sys
LABELS = ("original", "standard_negation", "local_negation", "contradiction", "paraphrase")
def fill(src, dst, decisions):
    rows = list(csv.DictReader(io.StringIO(open(src, encoding='utf-8-sig').read())))
    cols = list(rows[0].keys())
    for r in rows:
        for l in LABELS: r[f"agree_{l}"] = "agree"
        d = decisions.get(r["id"])
        if d:
            for l in d["disagree"]: r[f"agree_{l}"] = "disagree"
            for k, v in d.get("revise", {}).items(): r[k] = v
            r["comment"] = d["comment"]
    buf = io.StringIO(); w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n"); w.writeheader(); w.writerows(rows)
    open(dst, "w", encoding="utf-8").write(buf.getvalue())
R1 = {
 "2-2": {"disagree": ["paraphrase"], "comment": "paraphrase drops 'usually': 'can buy' is stronger than 'can usually buy', so it is not entailed",
         "revise": {"paraphrase": "Customers who come before the morning rush can usually get warm croissants more cheaply, because the bakery sells the first trays at a discount to reduce waste."}},
 "7-1": {"disagree": ["local_negation"], "comment": "'climbers not descending' negates a noun-modifying participle (a reduced relative), not a participle clause of Table 3; negate the so-that clause instead (adverbial)",
         "revise": {"local_negation": "When heavy fog covers the ridge in the late afternoon, the wardens switch on a bright lamp above the door so that climbers descending from the summit cannot find the hut.",
                    "local_negation_type": "adverb_part", "local_negation_element": "can find the hut"}},
 "6-1": {"disagree": ["contradiction"], "comment": "thin shirts and thick coats can be worn together: not incompatible",
         "revise": {"contradiction": "Because the depot has no heating, the musicians wear thick coats during rehearsals in January, and the conductor keeps the sessions longer than usual to protect the string instruments from the cold."}},
 "3-0": {"disagree": ["contradiction"], "comment": "flooding in September does not exclude flooding in April",
         "revise": {"contradiction": "The narrow river that flows through the valley floods the lower meadows only about once a decade, when the snow on the surrounding hills melts faster than the ground can absorb the water."}},
 "7-0": {"disagree": ["contradiction"], "comment": "three weeks in advance also satisfies 'at least three days': not incompatible",
         "revise": {"contradiction": "The mountain hut above the glacier is staffed by two wardens from June to September, and hikers who want to stay overnight may reserve a bed on the day they arrive."}},
}
R2 = {
 "6-1": {"disagree": ["contradiction"], "comment": "round-1 revision is incompatible but incoherent (longer sessions do not protect instruments from the cold); keep the purpose clause out",
         "revise": {"contradiction": "Because the depot has no heating, the musicians wear thick coats during rehearsals in January, and the conductor keeps the sessions longer than usual despite the cold."}},
}
if __name__ == "__main__":
    fill(sys.argv[1], sys.argv[2], R1 if sys.argv[3] == "1" else R2)

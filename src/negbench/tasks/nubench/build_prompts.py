"""The construction prompts of Thunder-NUBench (App. K), verbatim (Thunder-KoNUBench's are in
``tasks/konubench/build_prompts.py``).

These are the papers' published method text (the defaults of ``negbench build mcq``), each with
the listing or figure it comes from.  What "verbatim" means here (docs/build_mcq.md lists it):

* the papers print Python f-strings inside triple quotes; we keep the text the API received minus
  the source-code indentation and the blank first/last line of the triple-quoted string;
* lines broken only by the PDF column width are joined again (the listings number every visual
  line, so a wrap cannot be told from a newline by the numbers; we keep a newline where a new
  sentence starts a new item — bullets, examples, labels — and join running prose);
* escaped quotes (``\\"``, ``\\'``) are written as the characters Python produces;
* three extraction artefacts are repaired: Figure 6 Korean "년 부정 표현" → "넌 부정 표현" (its
  English: "You are an expert"), Figure 5 "만들 어도" → "만들어도", and Listing 6's closing
  ``""`` → ``\"\"\"`` (the f-string's end, not prompt text).

``{sentence}`` / ``{text}`` is the only placeholder; :func:`render` substitutes it with
``str.replace`` (the prompts contain no other braces, but a user's prompt file may).
"""

from __future__ import annotations

from negbench.scoring.construction import Prompt


# -- Thunder-NUBench, App. K ---------------------------------------------------------------------
#: Listing 2 (``merge_sentences_with_gpt``, GPT-4-turbo-preview), the " \n " kept as printed.
EN_MERGE = Prompt(
    "merge",
    "Thunder-NUBench App. K.1, Listing 2",
    "Merge sentences into a single one.",
    "Merge these sentences: {sentence} \n Provide only the resulting sentence without any "
    "additional explanation or introduction.",
)

#: Listing 4 (``generate_conditionals``, GPT-4o-mini).
EN_CONDITIONALS = Prompt(
    "conditionals",
    "Thunder-NUBench App. K.2, Listing 4",
    "You are a helpful assistant that specializes in generating conditional sentences.",
    "Based on the sentence below, write a conditional sentence that uses the main topic of the "
    "sentence.\n"
    "The conditional sentence should express a hypothetical situation or cause-effect "
    "relationship related to the topic. It can be slightly complex in structure.\n"
    "For example:\n"
    "- If it rains tomorrow, I will stay home.\n"
    "Sentence:\n"
    "'{sentence}'",
)

#: Listing 5 (``generate_contradiction``, GPT-4o).
EN_CONTRADICTION = Prompt(
    "contradiction",
    "Thunder-NUBench App. K.2, Listing 5",
    "You are a helpful assistant tasked with generating logical contradictions. Do not use "
    "negation to make contradiction.",
    "You will be given a sentence. Generate a contradictory sentence that directly conflicts "
    "with the original sentence without using standard negation.\n"
    "\n"
    "Definitions:\n"
    "- Standard negation: Directly negating the main verb or using words like 'not', 'no', "
    "'never', or negative contractions such as 'isn't', 'doesn't', or 'can't'.\n"
    "- Contradiction: A sentence that logically conflicts with the original statement. The "
    "contradiction must be such that both sentences cannot logically be true at the same time "
    "under any circumstances.\n"
    "\n"
    "Important:\n"
    "- Do not change the main verb from the original sentence.\n"
    "- Do not use 'never' or other negative words to form the contradiction.\n"
    "- Ensure the contradicted sentence logically excludes the possibility of the original "
    "sentence being true simultaneously.\n"
    "\n"
    "Examples:\n"
    'Original sentence: "The tallest student won the award."\n'
    'Contradicted sentence: "The shortest student won the award."\n'
    "\n"
    'Original sentence: "The room was completely dark."\n'
    'Contradicted sentence: "The room was brightly lit."\n'
    "\n"
    'Original sentence: "The event took place in the morning."\n'
    'Contradicted sentence: "The event took place in the evening."\n'
    "\n"
    'Original sentence: "All people are dying."\n'
    'Contradicted sentence: "Some people are dying."\n'
    "\n"
    "Now, generate a contradictory sentence without standard negation, without changing the "
    "main verb, and ensuring the two sentences are logically incompatible, for the following:\n"
    "\n"
    'Original sentence: "{sentence}"\n'
    "\n"
    "Contradicted sentence:",
)

#: Listing 6 (``generate_paraphrase``, GPT-4o).
EN_PARAPHRASE = Prompt(
    "paraphrase",
    "Thunder-NUBench App. K.2, Listing 6",
    "You are a helpful assistant skilled at generating paraphrases while keeping the meaning of "
    "sentences unchanged.",
    "Paraphrase the following sentence using synonyms or slight structural variations without "
    "changing its meaning.\n"
    "Do not add or remove any main verbs. Keep the original intent of the sentence intact.\n"
    "\n"
    'Original sentence: "{sentence}"\n'
    "\n"
    "Paraphrased sentence:",
)

#: The default prompt of each LLM stage.
PROMPTS: dict[str, Prompt] = {
    "merge": EN_MERGE,
    "conditionals": EN_CONDITIONALS,
    "contradiction": EN_CONTRADICTION,
    "paraphrase": EN_PARAPHRASE,
}

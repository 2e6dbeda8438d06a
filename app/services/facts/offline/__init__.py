"""Fact extraction without an LLM: sentence rules that run everywhere, instantly.

The default configuration has no language model, so these heuristics decide what
Elephant remembers. They aim for what an LLM extractor would produce on the easy
majority of turns: drop chit-chat, rewrite first-person statements as third-person
facts about the speaker ("I'm" -> "Caroline is"), resolve "you" to the other speaker,
replace relative dates by absolute ones, and attach the names the sentence mentions.
A fact is a whole sentence (a subject, a finite verb, no dangling end), one per claim;
markdown layout (headings, list labels, code, tables, links) is never one. An
assistant's turn gives only its concrete statements, marked as the assistant's and
trusted less. Everything is regex and word lists, so the output is deterministic and
thousands of turns take well under a second.

The modules, in the order a turn passes through them:

- extract: the entry point, extract_offline; one fact per claim.
- markdown: a turn's layout dropped, its prose and list items kept.
- sentences: sentences and clauses, small talk stripped or recognised.
- rewrite: one clause into one attributed fact (with dating, pronouns, names).
- dating: relative dates made absolute.
- pronouns: "I", "you", "we" resolved to names; implicit subjects added.
- names: names and their entity types.
- grammar: finite verbs, dangling ends, instructions, verb agreement.
- lexicon: the word lists they share (also read by gate scoring and dedup).
"""

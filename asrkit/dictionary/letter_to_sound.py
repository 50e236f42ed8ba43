"""Pronunciations for words outside CMUdict, from festival's CMU lexicon and its letter-to-sound rules.

festival (Debian's festival with festlex-cmu) looks a word up in its copy of CMUdict and, for a word
it does not have, predicts the phones with the CART letter-to-sound rules trained on that lexicon.
Its phones are CMUdict's, lower-case, grouped in syllables with a stress flag; here they become
upper-case phones without stress, as asrkit.dictionary.pronunciations gives CMUdict's.  All words
go to one festival process, so a few thousand take a second or two.
"""

import os
import re
import shutil
import subprocess
import tempfile

from asrkit.dictionary.pronunciations import ARPABET_PHONES
from asrkit.errors import AsrkitError
from asrkit.io.atomic import atomic_output

FESTIVAL_TIMEOUT_S = 600
_SPELLABLE = re.compile(r"^[A-Z][A-Z']*$")
_LINE = re.compile(r"^LTS\t(?P<word>\S+)\t(?P<phones>.*)$")
# festival's CMU lexicon writes the reduced vowel as ax where CMUdict has AH0.
FESTIVAL_PHONE_MAP = {"AX": "AH"}


class LetterToSoundError(AsrkitError):
    """festival is missing, fails, or returns phones outside the phone set."""


def _scheme_script(words, output_path):
    # One (lex.lookup ...) per word; festival's lookup falls back to the LTS rules by itself.  The
    # apostrophe is dropped for the lookup (the rules know letters only): SPARKY'S -> sparkys.
    lines = ['(lex.select "cmu")', f'(set! out (fopen "{output_path}" "w"))']
    for word in words:
        spelling = word.replace("'", "").lower()
        lines.append(f'(format out "LTS\\t{word}\\t%l\\n" (lex.lookup "{spelling}" nil))')
    lines.append("(fclose out)")
    return "\n".join(lines) + "\n"


def _phones(entry, word):
    """Phones of festival's printed entry ("word" nil (((k l ah ng k) 1)) ...) without stress."""
    syllables = entry.split(None, 2)[2] if entry.count(" ") >= 2 else ""
    phones = [FESTIVAL_PHONE_MAP.get(phone.upper(), phone.upper()) for phone in re.findall(r"[a-z]+", syllables)]
    unknown = sorted(set(phones) - set(ARPABET_PHONES))
    if unknown:
        raise LetterToSoundError(f"festival gave {word} phones outside CMUdict's set: {', '.join(unknown)} "
                                 f"(entry {entry})")
    return tuple(phones)


def check_transcripts_spellable(path):
    """A Kaldi text file whose words letter-to-sound rules can spell (upper-case letters and apostrophes, after
    upper-casing), else a LetterToSoundError naming the file, line, utterance and word, and the fix."""
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            fields = line.split()
            for word in fields[1:]:
                if not _SPELLABLE.match(word.upper()) and word != "<UNK>":
                    raise LetterToSoundError(
                        f"{path}:{number}: utterance {fields[0]}: {word!r} is not a word of letters and apostrophes "
                        f"(fix: utils/normalize_text DATA_DIR writes numbers, symbols and abbreviations out in "
                        f"words; the librispeech recipe's --normalize-text true does it)")


def festival_pronunciations(words, festival="festival"):
    """{WORD: (phone, ...)} for upper-case words of letters and apostrophes, one pronunciation each.

    Words with other characters are refused (they would not be in a lexicon either).  Raises
    LetterToSoundError when festival is missing or fails.
    """
    words = sorted(set(words))
    bad = [word for word in words if not _SPELLABLE.match(word)]
    if bad:
        raise LetterToSoundError(f"letter-to-sound needs upper-case words of letters and apostrophes; "
                                 f"got {', '.join(bad[:10])}")
    if not words:
        return {}
    if shutil.which(festival) is None:
        raise LetterToSoundError(f"{festival} is not installed (Debian: apt-get install festival festlex-cmu; "
                                 "bin/setup-env does it as root)")
    with tempfile.TemporaryDirectory(prefix="asrkit-lts-") as scratch:
        script = os.path.join(scratch, "lookup.scm")
        output = os.path.join(scratch, "pronunciations.txt")
        with open(script, "w", encoding="ascii") as handle:
            handle.write(_scheme_script(words, output))
        try:
            completed = subprocess.run([festival, "-b", script], capture_output=True, text=True,
                                       timeout=FESTIVAL_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise LetterToSoundError(f"festival failed on {len(words)} words: {error}") from None
        if completed.returncode != 0 or not os.path.exists(output):
            raise LetterToSoundError(f"festival exited with {completed.returncode} on {len(words)} words: "
                                     f"{completed.stderr.strip()[-1000:]}")
        with open(output, encoding="ascii", errors="replace") as handle:
            found = {}
            for line in handle:
                match = _LINE.match(line.rstrip("\n"))
                if match:
                    found[match.group("word")] = _phones(match.group("phones"), match.group("word"))
    missing = [word for word in words if not found.get(word)]
    if missing:
        raise LetterToSoundError(f"festival gave no phones for {len(missing)} words: {', '.join(missing[:10])}")
    return found


def write_generated_lexicon(path, pronunciations):
    """The generated pronunciations as a CMUdict-format file (`WORD  PH1 PH2 ...`), sorted, for review."""
    with atomic_output(path) as handle:
        for word in sorted(pronunciations):
            handle.write(f"{word}  {' '.join(pronunciations[word])}\n")

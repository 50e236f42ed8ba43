"""The lexicon transducer L (phones -> words) with optional silence, and its disambiguated form.

The construction follows Kaldi's utils/lang/make_lexicon_fst.py (read for its
behaviour): a loop state where every word starts and ends; after each word
(and at the start of the utterance) the optional silence phone is taken with
probability sil_prob.  The word label sits on the first phone arc; a word with
an empty pronunciation is an epsilon-input arc.
"""

import math

from asrkit.graph.fst_arrays import build_fst

START_STATE, LOOP_STATE, SILENCE_STATE = 0, 1, 2


def add_disambiguation(lexicon):
    """Kaldi's add_lex_disambig.pl: append #1, #2, ... to pronunciations that are homophones or prefixes.

    Returns (list of (Pronunciation, phones with disambiguation symbol names), highest #N used).
    A pronunciation shared by several words gets #1, #2, ... in lexicon order;
    one that is a proper prefix of another pronunciation, or empty, gets #1 too.
    """
    count = {}
    for pron in lexicon:
        count[pron.phones] = count.get(pron.phones, 0) + 1
    prefixes = set()
    for pron in lexicon:
        for end in range(len(pron.phones)):
            prefixes.add(pron.phones[:end])
    next_symbol, result, highest = {}, [], 0
    for pron in lexicon:
        phones = pron.phones
        if count[phones] > 1 or phones in prefixes or not phones:
            number = next_symbol.get(phones, 1)
            next_symbol[phones] = number + 1
            highest = max(highest, number)
            result.append((pron, phones + (f"#{number}",)))
        else:
            result.append((pron, phones))
    return result, highest


def make_lexicon_fst(entries, phone_table, word_table, silence_phone, sil_prob, silence_disambig=None):
    """L.fst (or L_disambig.fst when `entries` carry #N symbols) as a kaldifst StdVectorFst.

    entries: (Pronunciation, phone names) pairs; sil_prob: probability of the
    optional silence between words (0 disables it); silence_disambig: the
    phone symbol put on the arc that leaves the silence state (Kaldi's
    --sil-disambig, used in L_disambig so that LG stays determinizable).
    """
    arcs = []
    if sil_prob > 0.0:
        sil_cost, no_sil_cost = -math.log(sil_prob), -math.log(1.0 - sil_prob)
        silence = phone_table[silence_phone]
        # The silence state is where a word ends when silence follows; silence itself is its way out.
        arcs.append((START_STATE, LOOP_STATE, 0, 0, no_sil_cost))
        arcs.append((START_STATE, SILENCE_STATE, 0, 0, sil_cost))
        next_state = 3
        if silence_disambig is None:
            arcs.append((SILENCE_STATE, LOOP_STATE, silence, 0, 0.0))
        else:
            arcs.append((SILENCE_STATE, next_state, silence, 0, 0.0))
            arcs.append((next_state, LOOP_STATE, phone_table[silence_disambig], 0, 0.0))
            next_state += 1
    else:
        sil_cost = no_sil_cost = 0.0
        next_state = 2
        arcs.append((START_STATE, LOOP_STATE, 0, 0, 0.0))
    for pron, phones in entries:
        word = word_table[pron.word]
        pron_cost = -math.log(pron.probability)
        phone_ids = [phone_table[phone] for phone in phones]
        if not phone_ids:
            phone_ids = [0]
        source, output, cost = LOOP_STATE, word, pron_cost
        for phone in phone_ids[:-1]:
            arcs.append((source, next_state, phone, output, cost))
            source, output, cost = next_state, 0, 0.0
            next_state += 1
        last = phone_ids[-1]
        if sil_prob > 0.0:
            arcs.append((source, LOOP_STATE, last, output, cost + no_sil_cost))
            arcs.append((source, SILENCE_STATE, last, output, cost + sil_cost))
        else:
            arcs.append((source, LOOP_STATE, last, output, cost))
    return build_fst(START_STATE, arcs, {LOOP_STATE: 0.0})

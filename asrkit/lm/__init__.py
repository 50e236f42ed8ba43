"""n-gram language models: estimation (modified Kneser-Ney, Witten-Bell), ARPA files, perplexity.

    from asrkit.lm.ngram import estimate_ngram_lm
    from asrkit.lm.arpa import read_arpa, write_arpa
"""

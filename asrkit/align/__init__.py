"""Alignment: flat start (equal alignment), Viterbi forced alignment, and the ali dir they write."""

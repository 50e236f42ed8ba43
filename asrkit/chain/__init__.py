"""Lattice-free MMI ([Povey2016], Kaldi's chain models): the phone LM, the denominator graph, numerator
supervision with tolerances, and the forward-backward that gives the objective and its gradient."""

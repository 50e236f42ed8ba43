"""The phonetic decision tree: context statistics from a monophone alignment, questions, greedy splits,
and the conversion of alignments to the tree's leaves (pdfs)."""

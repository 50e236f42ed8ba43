"""HMM side of the hybrid model: topology (Kaldi's topo file), context dependency ("tree"), and H.fst."""

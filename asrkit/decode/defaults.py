"""The decoder's defaults, in one place: asrkit-decode's and asrkit-export's options, DecoderOptions, DecodeOptions
and a package's decode.json take them from here (tests/cli/test_decode_defaults.py checks that they do).

asrkit's frames are 30 ms (three 10-ms analysis frames stacked, asrkit.frontend.config), a third as many as the
10-ms frames Kaldi's defaults (acoustic scale 0.1, LM weights 7 to 17) were tuned for, and each frame's
log-likelihood stands for three of them: the LM weights dev chooses for asrkit's models lie between 1 and 3.5
(egs/*/RESULTS), so the default is 3 (acoustic scale 1/3) and the sweep runs from 0.5 to 5.  The beams are
Kaldi's: they bound costs per frame, and the recipes tune them on dev (egs/voiceover/conf/decode.conf).
"""



def acoustic_scale_of(lm_weight):
    """The acoustic scale that decodes as LM weight `lm_weight` does (Kaldi's convention: a path costs graph +
    acoustic / LM weight), the one conversion of asrkit's Python code and, through utils/acoustic_scale, of its
    scripts, so that a recipe's decodes and its package use the same number to the last bit."""
    return 1.0 / float(lm_weight)


LM_WEIGHT = 3.0
ACOUSTIC_SCALE = acoustic_scale_of(LM_WEIGHT)
BEAM = 13.0
MAX_ACTIVE = 7000
MIN_ACTIVE = 200
LATTICE_BEAM = 6.0
MIN_LMWT = 0.5
MAX_LMWT = 5.0
LMWT_STEP = 0.5

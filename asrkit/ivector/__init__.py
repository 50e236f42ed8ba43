"""i-vectors: a diagonal-covariance UBM, a total-variability matrix and online extraction.

The model is the one of "Front-End Factor Analysis for Speaker Verification"
(Dehak, Kenny, Dehak, Dumouchel, Ouellet, IEEE TASLP 2011): an utterance's
mean supervector is m + T w with w ~ N(0, I), the frames aligned to a
universal background model (a GMM of all training speech).  T is trained by
the EM algorithm of "Eigenvoice modeling with sparse training data" (Kenny,
Boulianne, Dumouchel, IEEE TSAP 2005).  Online extraction follows Kaldi's
online2 i-vectors (an i-vector every few frames from the frames so far,
optionally carried over within a speaker), so that an acoustic model can be
given them beside its features in training and decoding alike.
"""

"""Kaldi data directories: reading, writing, validating, fixing, splitting, and their audio.

Import from the submodules (asrkit.data.data_dir, .audio, ...); this package
imports nothing itself, so that `import asrkit.data.kaldi_files` stays cheap.
"""

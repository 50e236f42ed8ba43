"""On-disk formats: sharded HDF5 tables, Kaldi ark/scp interchange, atomic writes."""

"""Acoustic networks (stacked LSTM, DNN), their registry and hyperparameters, and the exported model
directory with its loader (`asrkit.nn.model_dir.load_acoustic_model`)."""

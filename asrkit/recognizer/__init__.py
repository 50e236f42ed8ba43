"""Recognition with an exported model package (asrkit-export): NumPy front end and networks, asrkit's decoder."""

"""Recognition with an exported model package (asrkit-export): the inference core (asrkit.inference) and asrkit's
decoder."""

"""TDNN-F's shape without TensorFlow: the time strides' syntax and the span of context they give, and the
renormalisation's floor, shared by the network (asrkit.nn.tdnnf) and the inference core's NumPy forward pass
(asrkit.inference.network)."""

RMS_FLOOR = 1e-8  # of a frame's mean square, in the renormalisation: an all-zero frame stays zero


def parse_time_strides(text):
    """'1,1,0,2' -> (1, 1, 0, 2): the time stride of each TDNN-F layer."""
    try:
        strides = tuple(int(part) for part in str(text).replace(" ", "").split(",") if part != "")
    except ValueError:
        raise ValueError(f"tdnnf: time_strides is comma-separated whole numbers, not {text!r}") from None
    if not strides or min(strides) < 0:
        raise ValueError(f"tdnnf: time_strides needs at least one stride, none negative, not {text!r}")
    return strides


def tdnnf_context(first_context, strides):
    """C, the positions a TDNN-F's output reads around its centre, C/2 either side (also its label delay x 2)."""
    return 2 * first_context + 2 * sum(strides)

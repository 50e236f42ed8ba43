"""[Variani2017-15k]'s model parallelism (section 2.2, Figure 2): each LSTM layer on its own device, pipelined over time.

    devices = layer_devices(num_layers)        # before TensorFlow runs any op
    net.place_layers(devices)                  # asrkit.nn.models.StackedLstm

Step n of layer l needs step n-1 of layer l and step n of layer l-1, nothing else.  The training
window is unrolled step by step (`pipelined_window`), each layer's ops under its device, its input
projection done per step instead of once over the window (which would wait for every step of the layer
below), so TensorFlow's executor runs layer l's step n beside layer l+1's step n-1: with L layers on L
devices, up to L steps are in flight, as in the paper's Figure 2.  The softmax runs on the last
layer's device.  The arithmetic is the single-device window's, in another order of the same sums.

`layer_devices` takes one GPU a layer where there are GPUs (cycling when there are fewer), else it
splits the CPU into one logical device a layer (tf.config.set_logical_device_configuration), which
shares the process's threads: on a CPU the layers then overlap only as far as the thread pools allow.
"""

from asrkit.errors import AsrkitError
from asrkit.nn.precision import matmul
from asrkit.tf_runtime import import_tensorflow

tf = import_tensorflow()


def layer_devices(num_layers):
    """Device names for num_layers layers: the GPUs, else num_layers logical CPU devices (made here)."""
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        return [f"/GPU:{index % len(gpus)}" for index in range(num_layers)]
    cpus = tf.config.list_physical_devices("CPU")
    try:
        tf.config.set_logical_device_configuration(
            cpus[0], [tf.config.LogicalDeviceConfiguration() for _ in range(num_layers)])
    except RuntimeError as error:
        # Too late to split (the runtime has started); enough if an earlier call split it as far.
        if len(tf.config.list_logical_devices("CPU")) < num_layers:
            raise AsrkitError(f"cannot split the CPU into {num_layers} logical devices after TensorFlow has "
                              f"started ({error}); model parallelism must be set up first in the process") from None
    return [f"/CPU:{index}" for index in range(num_layers)]


def pipelined_window(layers, devices, features, states, keep=None):
    """The stacked layers' window (LstmLayer.window, layer after layer) as one step-by-step wavefront with layer l
    on devices[l]: features [u, b, D], states [(c, h)] a layer, keep [u, b] or None -> (top outputs [u, b, P],
    new states)."""
    if len(devices) != len(layers):
        raise ValueError(f"{len(layers)} layers need {len(layers)} devices, got {len(devices)}")
    inputs = tf.unstack(features, axis=0)
    keeps = tf.unstack(keep[:, :, None], axis=0) if keep is not None else [None] * len(inputs)
    states = [list(state) for state in states]
    recurrent = []
    for layer, device in zip(layers, devices):
        with tf.device(device):
            recurrent.append(tf.cast(layer.recurrent_kernel, layer.compute_dtype))
    outputs = []
    for step_input, keep_step in zip(inputs, keeps):
        below = step_input
        for index, (layer, device) in enumerate(zip(layers, devices)):
            with tf.device(device):
                cell, output = states[index]
                if keep_step is not None:
                    cell, output = cell * keep_step, output * keep_step
                projected = tf.nn.bias_add(matmul(below, layer.kernel, layer.compute_dtype), layer.bias)
                states[index] = list(layer._step(projected, cell, output, recurrent[index]))
                below = states[index][1]
        outputs.append(below)
    with tf.device(devices[-1]):
        stacked = tf.stack(outputs, axis=0)
    return stacked, [tuple(state) for state in states]

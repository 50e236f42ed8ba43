// The AudioWorklet processor of the recognition page: each render quantum of the microphone's first channel is
// posted to the page as it comes (a copy: the engine reuses its buffers).
class AsrkitCapture extends AudioWorkletProcessor {
  process(inputs) {
    const channel = inputs[0] && inputs[0][0];
    if (channel && channel.length) {
      this.port.postMessage(channel.slice(0));
    }
    return true;
  }
}

registerProcessor("asrkit-capture", AsrkitCapture);

// The recognition page of asrkit-serve-recognizer: the microphone (an AudioWorklet) or a file, resampled to the
// model's rate, streamed as 16-bit PCM over the server's WebSocket protocol (asrkit/recognizer/server.py); partial
// results as they come, final results with each word's confidence.
"use strict";

const CHUNK_SECONDS = 0.1; // audio per WebSocket message
const FILE_PACE = 5; // a file is streamed at this many times real time, so its partial results show

// What a test (or a curious user) can read: the final texts, the latest partial, and the page's state.
window.asrkit = { finals: [], partial: "", state: "loading", partials: 0 };

const element = (id) => document.getElementById(id);
let modelRate = 16000;
let session = null; // the stream in progress: {socket, closed, pending, pendingLength, resampler, stop}

// A windowed-sinc resampler for audio arriving in pieces: output sample k is the input at time k / outRate,
// interpolated over HALF_WIDTH input samples each side with a Blackman-windowed sinc whose cutoff is 0.95 x the
// lower rate's Nyquist frequency (so downsampling does not fold the band above the model's into it).
class Resampler {
  constructor(inRate, outRate) {
    this.step = inRate / outRate;
    this.cutoff = 0.95 * Math.min(1, outRate / inRate) * 0.5; // cycles per input sample
    this.halfWidth = Math.ceil(16 / Math.min(1, outRate / inRate));
    this.buffer = new Float32Array(0); // input not yet behind every output's window
    this.offset = 0; // input index of buffer[0]
    this.next = 0; // input time (in input samples) of the next output
  }

  kernel(distance) {
    if (Math.abs(distance) >= this.halfWidth) return 0;
    const x = 2 * this.cutoff * distance;
    const sinc = x === 0 ? 1 : Math.sin(Math.PI * x) / (Math.PI * x);
    const w = 0.42 + 0.5 * Math.cos(Math.PI * distance / this.halfWidth) +
      0.08 * Math.cos(2 * Math.PI * distance / this.halfWidth);
    return 2 * this.cutoff * sinc * w;
  }

  process(samples, last = false) {
    const joined = new Float32Array(this.buffer.length + samples.length);
    joined.set(this.buffer);
    joined.set(samples, this.buffer.length);
    const end = this.offset + joined.length; // input samples seen so far
    const out = [];
    while (last ? this.next < end : this.next + this.halfWidth < end) {
      const centre = Math.floor(this.next);
      let sum = 0;
      for (let i = centre - this.halfWidth + 1; i <= centre + this.halfWidth; i++) {
        const index = i - this.offset;
        if (index >= 0 && index < joined.length) sum += joined[index] * this.kernel(this.next - i);
      }
      out.push(sum);
      this.next += this.step;
    }
    const keepFrom = Math.max(0, Math.floor(this.next) - this.halfWidth - this.offset);
    this.buffer = joined.slice(keepFrom);
    this.offset += keepFrom;
    return Float32Array.from(out);
  }
}

function pcm16(samples) {
  const out = new Int16Array(samples.length);
  for (let i = 0; i < samples.length; i++) {
    out[i] = Math.max(-32768, Math.min(32767, Math.round(samples[i] * 32768)));
  }
  return out;
}

function setStatus(text, isError = false) {
  element("status").textContent = text;
  element("status").className = isError ? "error" : "";
}

function showFinal(message) {
  const line = document.createElement("div");
  line.className = "final";
  const words = message.result || [];
  if (words.length) {
    for (const word of words) {
      const span = document.createElement("span");
      span.className = "word";
      span.textContent = word.word;
      span.title = `confidence ${word.conf.toFixed(2)}, ${word.start.toFixed(2)}-${word.end.toFixed(2)} s`;
      span.style.opacity = (0.35 + 0.65 * word.conf).toFixed(2);
      const conf = document.createElement("span");
      conf.className = "conf";
      conf.textContent = word.conf.toFixed(2);
      span.appendChild(conf);
      line.appendChild(span);
    }
  } else {
    line.textContent = message.text;
  }
  if (message.text) element("finals").appendChild(line);
  window.asrkit.finals.push(message.text);
}

function onMessage(event) {
  const message = JSON.parse(event.data);
  if (message.error) {
    setStatus(`The server refused the stream: ${message.error}`, true);
  } else if (message.partial !== undefined) {
    element("partial").textContent = message.partial;
    window.asrkit.partial = message.partial;
    if (message.partial) window.asrkit.partials += 1;
  } else if (message.text !== undefined) {
    element("partial").textContent = "";
    window.asrkit.partial = "";
    showFinal(message);
  }
}

function openSession(resampler) {
  return new Promise((resolve, reject) => {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const socket = new WebSocket(`${scheme}//${location.host}/`);
    socket.binaryType = "arraybuffer";
    const current = { socket, pending: [], pendingLength: 0, resampler, closed: null };
    current.closed = new Promise((done) => {
      socket.onclose = (event) => {
        window.asrkit.state = "done";
        if (event.code !== 1000) setStatus(`The connection closed (code ${event.code}).`, true);
        done();
      };
    });
    socket.onmessage = onMessage;
    socket.onerror = () => reject(new Error("cannot connect to the recognition server"));
    socket.onopen = () => {
      socket.send(JSON.stringify({ config: { sample_rate: modelRate, words: 1 } }));
      window.asrkit.state = "streaming";
      resolve(current);
    };
  });
}

function send(current, samples, last = false) {
  const atModelRate = current.resampler ? current.resampler.process(samples, last) : samples;
  if (atModelRate.length) {
    current.pending.push(atModelRate);
    current.pendingLength += atModelRate.length;
  }
  if (current.pendingLength >= CHUNK_SECONDS * modelRate || (last && current.pendingLength)) {
    const joined = new Float32Array(current.pendingLength);
    let at = 0;
    for (const piece of current.pending) {
      joined.set(piece, at);
      at += piece.length;
    }
    current.pending = [];
    current.pendingLength = 0;
    current.socket.send(pcm16(joined).buffer);
  }
}

async function finish(current) {
  send(current, new Float32Array(0), true);
  current.socket.send(JSON.stringify({ eof: 1 }));
  await current.closed;
}

function setBusy(busy) {
  element("file").disabled = busy;
  element("mic").textContent = busy && session && session.stop ? "Stop" : "Start the microphone";
  element("mic").disabled = busy && !(session && session.stop);
}

async function captureGraph(rate) {
  // The context, its worklet and the WebSocket are ready before the microphone opens, so that its first words
  // are not spoken into a graph still being built.
  const context = rate ? new AudioContext({ sampleRate: rate }) : new AudioContext();
  await context.audioWorklet.addModule("capture.js");
  const node = new AudioWorkletNode(context, "asrkit-capture", { numberOfInputs: 1, numberOfOutputs: 0 });
  return { context, node };
}

async function startMicrophone() {
  // The browser's own resampler where it can run the graph at the model's rate; ours where it cannot (a browser
  // that refuses a microphone in a context of another rate).
  let { context, node } = await captureGraph(modelRate);
  const media = await navigator.mediaDevices.getUserMedia({
    audio: { channelCount: 1, echoCancellation: false, noiseSuppression: false, autoGainControl: false },
  });
  let source;
  try {
    source = context.createMediaStreamSource(media);
  } catch (error) {
    await context.close();
    ({ context, node } = await captureGraph(null));
    source = context.createMediaStreamSource(media);
  }
  const resampler = context.sampleRate === modelRate ? null : new Resampler(context.sampleRate, modelRate);
  session = await openSession(resampler);
  const current = session;
  node.port.onmessage = (event) => send(current, event.data);
  source.connect(node);
  current.stop = async () => {
    source.disconnect();
    node.port.onmessage = null;
    media.getTracks().forEach((track) => track.stop());
    await context.close();
    setStatus("Finishing...");
    await finish(current);
  };
  setStatus(`Listening (${context.sampleRate} Hz${resampler ? `, resampled to ${modelRate} Hz` : ""})...`);
  setBusy(true);
}

async function streamFile(file) {
  // Decoded at the model's rate by the browser (an OfflineAudioContext of that rate resamples what it decodes).
  const decoded = await new OfflineAudioContext(1, 1, modelRate).decodeAudioData(await file.arrayBuffer());
  const samples = decoded.getChannelData(0);
  session = await openSession(null);
  const current = session;
  setBusy(true);
  setStatus(`Streaming ${file.name} (${decoded.duration.toFixed(1)} s)...`);
  const piece = Math.round(CHUNK_SECONDS * modelRate);
  for (let start = 0; start < samples.length; start += piece) {
    send(current, samples.subarray(start, start + piece));
    await new Promise((wait) => setTimeout(wait, (1000 * CHUNK_SECONDS) / FILE_PACE));
  }
  await finish(current);
  session = null;
  setBusy(false);
  setStatus(`Done: ${file.name}.`);
}

async function onMicrophone() {
  if (session && session.stop) {
    const current = session;
    element("mic").disabled = true;
    await current.stop();
    session = null;
    setBusy(false);
    setStatus("Done.");
    return;
  }
  try {
    await startMicrophone();
  } catch (error) {
    session = null;
    setBusy(false);
    setStatus(`The microphone could not start: ${error.message}`, true);
  }
}

async function onFile() {
  const file = element("file").files[0];
  if (!file) return;
  try {
    await streamFile(file);
  } catch (error) {
    session = null;
    setBusy(false);
    setStatus(`${file.name} could not be streamed: ${error.message}`, true);
  }
}

async function main() {
  const info = await (await fetch("info.json")).json();
  modelRate = info.sample_rate;
  element("model").textContent = `Model: ${info.name} (${modelRate} Hz)`;
  element("mic").addEventListener("click", onMicrophone);
  element("file").addEventListener("change", onFile);
  element("mic").disabled = false;
  element("file").disabled = false;
  window.asrkit.state = "ready";
}

main().catch((error) => setStatus(`The page could not start: ${error.message}`, true));

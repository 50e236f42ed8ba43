"""The recognition page that asrkit-serve-recognizer serves at /, in a real headless Chromium: a file picked in it
and Chromium's fake microphone playing a WAV are streamed over the server's WebSocket protocol, and the page's
final text is asrkit-transcribe's for the same audio.  A screenshot of the page mid-utterance is written to the
test's directory (its path is printed) for a person to look at."""

import asyncio
import os
import threading
import time
import urllib.error
import urllib.request

import numpy as np
import pytest
import soundfile
from click.testing import CliRunner

from asrkit.recognizer.endpoint import EndpointConfig
from asrkit.recognizer.recognizer import Recognizer
from asrkit.recognizer.server import RecognitionServer, ServerConfig, Session
from tests.browser import Browser, browser_path
from tests.conftest import speech_like

RATE = 8000  # the toy package's


class ServerThread:
    """A RecognitionServer on a free loopback port, its event loop in a thread (the browser runs beside it)."""

    def __init__(self, recognizer, **config):
        self.recognizer, self.config = recognizer, ServerConfig(port=0, **config)
        self.ready = threading.Event()

    def __enter__(self):
        self.thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)
        self.thread.start()
        assert self.ready.wait(30)
        return self

    async def _main(self):
        self.loop = asyncio.get_running_loop()
        self.stopping = asyncio.Event()
        server = await RecognitionServer(self.recognizer, self.config).start()
        self.url = f"http://127.0.0.1:{server.port}/"
        self.ready.set()
        await self.stopping.wait()
        await server.stop()

    def __exit__(self, *exc):
        self.loop.call_soon_threadsafe(self.stopping.set)
        self.thread.join(30)


@pytest.fixture(scope="module")
def recognizer(package_dir):
    return Recognizer(package_dir)


@pytest.fixture
def received(monkeypatch):
    """The PCM bytes of every binary message the server's sessions take, in order."""
    messages = []
    original = Session.audio

    def recording(self, message):
        messages.append(bytes(message))
        return original(self, message)

    monkeypatch.setattr(Session, "audio", recording)
    return messages


def _wav(path, seconds, seed):
    samples = np.round(speech_like(seconds, RATE, seed=seed) * 32767).astype(np.int16)
    soundfile.write(str(path), samples, RATE, subtype="PCM_16")
    return str(path), samples


def _transcribed(package_dir, path):
    from asrkit.cli.transcribe import main as transcribe_main

    result = CliRunner().invoke(transcribe_main, [package_dir, path], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout.strip()


def _one_segment(recognizer):
    # No endpoint rules: the stream is one segment, whose final result is the whole utterance's (Recognizer.stream's
    # batch final pass), as asrkit-transcribe gives it.
    return ServerThread(recognizer, endpoint=EndpointConfig(rules=()))


def test_the_page_and_its_files_are_served(recognizer):
    with _one_segment(recognizer) as server:
        page = urllib.request.urlopen(server.url).read().decode()
        assert "<script src=\"page.js\"></script>" in page
        with urllib.request.urlopen(server.url + "info.json") as response:
            assert response.headers["Content-Type"] == "application/json"
            assert b'"sample_rate": 8000' in response.read()
        for name in ("page.js", "capture.js", "page.css"):
            with urllib.request.urlopen(server.url + name) as response:
                assert response.status == 200 and response.headers["Content-Security-Policy"] == "default-src 'self'"
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(server.url + "../../etc/passwd")
        assert missing.value.code == 404


needs_chromium = pytest.mark.skipif(browser_path() is None and not os.environ.get("ASRKIT_REQUIRE_BROWSER"),
                                    reason="no Chromium (bin/setup-env --test installs Debian's)")


@needs_chromium
def test_a_file_picked_in_the_page_is_transcribed_as_asrkit_transcribe_does(recognizer, package_dir, received,
                                                                              tmp_path):
    path, samples = _wav(tmp_path / "utterance.wav", 3.0, seed=21)
    with _one_segment(recognizer) as server, Browser() as browser:
        browser.navigate(server.url)
        browser.wait_for("window.asrkit.state === 'ready'")
        browser.set_file("#file", path)
        browser.wait_for("window.asrkit.partials > 0")  # mid-utterance: a partial result on the page
        screenshot = browser.screenshot(str(tmp_path / "page-mid-utterance.png"))
        print(f"screenshot of the page mid-utterance: {screenshot}")
        finals = browser.wait_for("window.asrkit.state === 'done' && window.asrkit.finals")
        words_shown = browser.evaluate("document.querySelectorAll('#finals .word .conf').length")
    sent = np.frombuffer(b"".join(received), "<i2")
    np.testing.assert_array_equal(sent, samples)  # the file's samples, unchanged, in 0.1-s messages
    assert len(received) == -(-len(samples) // (RATE // 10))
    assert " ".join(text for text in finals if text) == _transcribed(package_dir, path)
    assert words_shown == len(_transcribed(package_dir, path).split())
    assert os.path.getsize(screenshot) > 1000


@needs_chromium
def test_the_microphone_streams_what_it_hears(recognizer, package_dir, received, tmp_path):
    path, samples = _wav(tmp_path / "spoken.wav", 2.0, seed=22)
    with _one_segment(recognizer) as server, Browser(fake_audio=path) as browser:
        browser.navigate(server.url)
        browser.wait_for("window.asrkit.state === 'ready'")
        browser.evaluate("document.getElementById('mic').click()")
        browser.wait_for("window.asrkit.state === 'streaming'")
        # the fake microphone plays the file once, then silence: stop once the server has had all of it
        deadline = time.monotonic() + 60
        while sum(len(message) for message in received) // 2 < len(samples) + RATE // 2:
            assert time.monotonic() < deadline, "the page sent too little of the microphone's audio"
            time.sleep(0.1)
        status = browser.evaluate("document.getElementById('status').textContent")
        browser.evaluate("document.getElementById('mic').click()")
        finals = browser.wait_for("window.asrkit.state === 'done' && window.asrkit.finals")
    assert "Listening" in status
    sent = np.frombuffer(b"".join(received), "<i2")
    soundfile.write(str(tmp_path / "sent.wav"), sent, RATE, subtype="PCM_16")
    # What the page sent is the file as the microphone heard it: Chromium's fake device starts playing when it
    # opens, a few milliseconds before or after the page's graph reads it, and resamples it to its own rate and
    # back, so the samples are the file's from about its start, close but not equal.
    correlation = np.correlate(sent.astype(np.float64), samples.astype(np.float64), "full")
    lag = int(np.argmax(correlation)) - (len(samples) - 1)  # where the file's first sample is in what was sent
    assert abs(lag) < 0.1 * RATE
    played = samples[max(-lag, 0):].astype(np.float64)
    heard = sent[max(lag, 0):max(lag, 0) + len(played)].astype(np.float64)
    assert len(heard) == len(played) and np.corrcoef(heard, played)[0, 1] > 0.95
    # and the page's final text is asrkit-transcribe's of that audio
    assert " ".join(text for text in finals if text) == _transcribed(package_dir, str(tmp_path / "sent.wav"))


RESAMPLE = """(() => {
  const [inRate, outRate, frequency, seconds] = %s;
  const resampler = new Resampler(inRate, outRate);
  const input = new Float32Array(Math.round(inRate * seconds));
  for (let i = 0; i < input.length; i++) input[i] = 0.5 * Math.sin(2 * Math.PI * frequency * i / inRate);
  const out = [];
  for (let start = 0; start < input.length; start += 128) out.push(...resampler.process(input.subarray(start, start + 128)));
  out.push(...resampler.process(new Float32Array(0), true));
  return out;
})()"""


@needs_chromium
def test_the_pages_own_resampler_keeps_the_band_and_drops_what_is_above(recognizer):
    """The resampler a browser uses when it cannot run the microphone's graph at the model's rate."""
    with _one_segment(recognizer) as server, Browser() as browser:
        browser.navigate(server.url)
        browser.wait_for("window.asrkit.state === 'ready'")
        for in_rate, out_rate, frequency in ((48000, 8000, 440.0), (44100, 16000, 3000.0), (8000, 16000, 1000.0)):
            out = np.array(browser.evaluate(RESAMPLE % [in_rate, out_rate, frequency, 1.0]))
            assert abs(len(out) - out_rate) <= 1
            expected = 0.5 * np.sin(2 * np.pi * frequency * np.arange(len(out)) / out_rate)
            middle = slice(out_rate // 10, -out_rate // 10)  # away from the edges' half windows
            assert np.abs(out[middle] - expected[middle]).max() < 0.01, (in_rate, out_rate, frequency)
        above = np.array(browser.evaluate(RESAMPLE % [48000, 8000, 6000.0, 1.0]))  # above the model's band
        assert np.sqrt(np.mean(above[800:-800] ** 2)) < 0.01 * 0.5 / np.sqrt(2)

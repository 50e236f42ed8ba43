"""A real headless Chromium driven through its DevTools protocol (CDP) over a WebSocket, for the tests of the
recognition page: navigate, evaluate JavaScript, pick a file in a file input, take a screenshot.

The microphone is Chromium's fake capture device playing a WAV file once (`%noloop`), and the permission prompt
is answered yes by Chromium itself (--use-fake-ui-for-media-stream), as Chromium's own media tests run.
"""

import base64
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request

from websockets.sync.client import connect

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def browser_path():
    """The Chromium executable (Debian's `chromium`: bin/setup-env --test installs it), or None."""
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """`with Browser(fake_audio=WAV) as page:` a page target of a fresh headless Chromium."""

    def __init__(self, fake_audio=None, timeout=30.0):
        self.fake_audio = fake_audio
        self.timeout = timeout
        self.ids = itertools.count(1)

    def __enter__(self):
        self.profile = tempfile.mkdtemp(prefix="asrkit-chromium-")
        # --no-sandbox: CI runs as root; --disable-dev-shm-usage: containers' /dev/shm is often too small for it
        arguments = [browser_path(), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                     "--disable-dev-shm-usage",
                     f"--user-data-dir={self.profile}", "--remote-debugging-port=0",
                     "--use-fake-ui-for-media-stream", "--autoplay-policy=no-user-gesture-required",
                     "--window-size=900,700"]
        if self.fake_audio:
            arguments += ["--use-fake-device-for-media-stream", f"--use-file-for-fake-audio-capture={self.fake_audio}%noloop"]
        self.process = subprocess.Popen(arguments + ["about:blank"], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + self.timeout
        while not os.path.exists(port_file) or not open(port_file).read().strip():
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.__exit__(None, None, None)
                raise RuntimeError("Chromium did not start its DevTools endpoint")
            time.sleep(0.05)
        port = int(open(port_file).read().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list") as response:
            targets = json.load(response)
        page = next(target for target in targets if target["type"] == "page")
        self._connection = connect(page["webSocketDebuggerUrl"], max_size=None)
        self.socket = self._connection.__enter__()
        self.call("Page.enable")
        self.call("Runtime.enable")
        return self

    def __exit__(self, *exc):
        if getattr(self, "socket", None) is not None:
            self._connection.__exit__(None, None, None)
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def call(self, method, **params):
        """The result of one CDP command (events that arrive meanwhile are dropped)."""
        number = next(self.ids)
        self.socket.send(json.dumps({"id": number, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv(timeout=self.timeout))
            if message.get("id") == number:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def evaluate(self, expression):
        """The value of a JavaScript expression in the page (promises awaited)."""
        result = self.call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def navigate(self, url):
        self.call("Page.navigate", url=url)
        self.wait_for("document.readyState === 'complete'")

    def wait_for(self, expression, timeout=None):
        """Polls a JavaScript expression until it is true; returns its value."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"{expression} stayed false")
            time.sleep(0.05)

    def set_file(self, selector, path):
        """Picks `path` in the file input at `selector`, as a user's file dialog would (its change event fires)."""
        document = self.call("DOM.getDocument")
        node = self.call("DOM.querySelector", nodeId=document["root"]["nodeId"], selector=selector)
        self.call("DOM.setFileInputFiles", files=[os.path.abspath(path)], nodeId=node["nodeId"])

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as out:
            out.write(base64.b64decode(data))
        return path

"""asrkit-serve-recognizer as a process: a real client gets the recognizer's results; SIGTERM stops it cleanly;
other interfaces are refused without --allow-remote."""

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import urllib.request

import pytest
from click.testing import CliRunner
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from asrkit.cli.serve_recognizer import main
from asrkit.recognizer.endpoint import EndpointConfig
from asrkit.recognizer.recognizer import Recognizer
from asrkit.recognizer.server import final_message
from tests.conftest import speech_like
from tests.recognizer.conftest import model_dirs, package_dir, toy_task  # noqa: F401 (fixtures)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def listening_port(process):
    """Reads the server's log until it says where it listens."""
    lines = []
    for line in process.stderr:
        lines.append(line)
        found = re.search(r"listening on ws://127\.0\.0\.1:(\d+)", line)
        if found:
            return int(found.group(1))
    raise AssertionError("the server exited before listening:\n" + "".join(lines[-30:]))


async def transcribe(port, audio):
    async with connect(f"ws://127.0.0.1:{port}") as websocket:
        await websocket.send(json.dumps({"config": {"sample_rate": 8000}}))
        for start in range(0, len(audio), 4000):
            await websocket.send(audio[start:start + 4000])
        await websocket.send(json.dumps({"eof": 1}))
        return [json.loads(message) async for message in websocket]


def expected_finals(package_dir, audio, windows, early_endpoints=True):  # noqa: F811
    stream = Recognizer(package_dir).stream(endpoint=EndpointConfig.with_max_length(1.0), final_pass="online",
                                            windows=windows, early_endpoints=early_endpoints)
    expected = [final_message(result) for start in range(0, len(audio), 2000)
                for result in stream.accept(audio[start:start + 2000])]
    return expected + [final_message(result) for result in stream.finish()]


@pytest.mark.parametrize("batch,windows,endpoints", [("--batch", "eager", "--early-endpoints"),
                                                     ("--no-batch", "grid", "--no-early-endpoints"),
                                                     ("--batch", "tentative", "--early-endpoints")])
def test_the_server_process_serves_the_recognizers_results_and_stops_on_sigterm(package_dir, batch,  # noqa: F811
                                                                               windows, endpoints):
    audio = (speech_like(2.5, 8000, seed=7) * 32767).astype("<i2")
    expected = expected_finals(package_dir, audio, windows, endpoints == "--early-endpoints")
    # The two placements of the windows differ here (the messages end inside the toy network's groups).
    other = {"eager": "grid", "grid": "eager", "tentative": "eager"}[windows]
    assert expected != expected_finals(package_dir, audio, other)
    command = [sys.executable, "-m", "asrkit.cli.serve_recognizer", package_dir, "--port", "0",
               "--max-utterance-seconds", "1", "--final-pass", "online", batch, "--windows", windows, endpoints]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                               env={**os.environ, "PYTHONPATH": ROOT})
    try:
        port = listening_port(process)
        received = asyncio.run(transcribe(port, audio.tobytes()))
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/") as page:  # the recognition page, same port
            assert b"page.js" in page.read()
        process.send_signal(signal.SIGTERM)
        _, log = process.communicate(timeout=60)
    finally:
        process.kill()
    assert [message for message in received if "partial" not in message] == expected
    assert process.returncode == 0
    assert "asrkit-serve-recognizer summary: status=ok served=1 errors=0" in log
    # The summary counts the batched network evaluations (one stream here: one stream per call).
    assert bool(re.search(r"network_calls=[1-9]\d* streams_per_call=1\.00", log)) == (batch == "--batch")


def test_other_interfaces_are_refused_without_allow_remote(package_dir):  # noqa: F811
    result = CliRunner().invoke(main, [package_dir, "--host", "0.0.0.0"])
    assert result.exit_code == 1 and "is not a loopback address" in result.output
    assert "needs --allow-remote" in result.output and "summary: status=failed" in result.output


async def close_of(port, messages, pause):
    """Sends messages (pause s apart) until the server closes; its (close code, last error message)."""
    async with connect(f"ws://127.0.0.1:{port}") as websocket:
        try:
            for message in messages:
                await websocket.send(message)
                await asyncio.sleep(pause)
            async for _ in websocket:
                pass
        except ConnectionClosed:
            pass
        return websocket.close_code, websocket.close_reason


def test_config_messages_do_not_hold_a_slot_and_deep_json_is_refused(package_dir):  # noqa: F811
    command = [sys.executable, "-m", "asrkit.cli.serve_recognizer", package_dir, "--port", "0", "--idle-timeout", "0.5"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                               env={**os.environ, "PYTHONPATH": ROOT})
    try:
        port = listening_port(process)
        config = json.dumps({"config": {"sample_rate": 8000}})
        idle = asyncio.run(close_of(port, [config] * 100 + ["EOF"], 0.1))
        nested = asyncio.run(close_of(port, ["[" * 100000], 0.0))
        process.send_signal(signal.SIGTERM)
        _, log = process.communicate(timeout=60)
    finally:
        process.kill()
    assert idle == (1008, "no audio for 0.5 s") and nested[0] == 1003 and "not JSON" in nested[1]
    assert "Traceback" not in log and "errors=2" in log


def test_hotwords_outside_the_package_are_refused_before_serving(package_dir, tmp_path):  # noqa: F811
    hotwords = tmp_path / "hotwords.txt"
    hotwords.write_text("golf :3\nzulu\n")
    result = CliRunner().invoke(main, [package_dir, "--hotwords", str(hotwords)])
    assert result.exit_code == 1 and "1 hotword(s) not in the package's vocabulary (zulu)" in result.output

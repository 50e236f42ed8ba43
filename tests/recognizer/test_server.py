"""The WebSocket server with a real websockets client: results as Recognizer gives them, errors answered with
JSON and a close code, limits, abandoned and slow connections cleaned up."""

import asyncio
import concurrent.futures
import json
import threading

import numpy as np
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from asrkit.errors import AsrkitError
from asrkit.recognizer.endpoint import EndpointConfig
from asrkit.recognizer.recognizer import Recognizer
from asrkit.recognizer.server import (CLOSE_INTERNAL, CLOSE_NORMAL, CLOSE_POLICY, CLOSE_TOO_BIG, CLOSE_TRY_LATER,
                                      CLOSE_UNSUPPORTED, NetworkBatcher, RecognitionServer, ServerConfig,
                                      final_message)
from tests.conftest import speech_like
from tests.recognizer.conftest import assert_same_rows


@pytest.fixture(scope="module")
def recognizer(package_dir):
    return Recognizer(package_dir, cmvn_online=True)


def pcm(seconds, seed):
    return (speech_like(seconds, 8000, seed=seed) * 32767).astype("<i2").tobytes()


def with_server(recognizer, client, **config):
    """Runs client(server) against a server on a free loopback port; returns what it returns."""
    async def main():
        server = await RecognitionServer(recognizer, ServerConfig(port=0, **config)).start()
        try:
            return await client(server)
        finally:
            await server.stop()

    return asyncio.run(main())


async def converse(server, messages, pause=0.0, **options):
    """Sends the messages (stopping early if the server closes) and reads until the close:
    (the JSON messages received, the close code)."""
    received = []
    async with connect(f"ws://127.0.0.1:{server.port}", **options) as websocket:
        try:
            for message in messages:
                await websocket.send(message)
                if pause:
                    await asyncio.sleep(pause)
        except ConnectionClosed:
            pass
        try:
            async for message in websocket:
                received.append(json.loads(message))
        except ConnectionClosed:
            pass
        return received, websocket.close_code


def chunks(data, size=3200):
    return [data[start:start + size] for start in range(0, len(data), size)]


def test_results_are_the_recognizers(recognizer):
    audio = pcm(2.0, 1)
    batch = recognizer.transcribe(np.frombuffer(audio, "<i2"))
    messages = [json.dumps({"config": {"sample_rate": 8000}})] + chunks(audio) + [json.dumps({"eof": 1})]
    received, code = with_server(recognizer, lambda server: converse(server, messages),
                                 endpoint=EndpointConfig(rules=()))
    assert code == CLOSE_NORMAL
    assert all(set(message) == {"partial"} for message in received[:-1]) and len(received) == len(chunks(audio)) + 1
    expected = final_message(batch)
    final = received[-1]
    assert final["text"] == expected["text"] and batch.text
    assert [w["word"] for w in final["result"]] == [w["word"] for w in expected["result"]]
    assert final["end"] == pytest.approx(2.0)


def test_segments_come_out_as_the_endpoints_end_them_and_eof_as_text_works(recognizer):
    audio = pcm(3.0, 2)
    stream = recognizer.stream(endpoint=EndpointConfig.with_max_length(1.0))
    expected = [final_message(result) for piece in chunks(np.frombuffer(audio, "<i2"), 1600)
                for result in stream.accept(piece)] + [final_message(result) for result in stream.finish()]
    received, code = with_server(recognizer, lambda server: converse(server, chunks(audio) + ["EOF"]),
                                 endpoint=EndpointConfig.with_max_length(1.0))
    assert code == CLOSE_NORMAL
    assert [message for message in received if "partial" not in message] == expected
    assert len(expected) >= 3


@pytest.mark.parametrize("messages,code,error", [
    ([b"\x00\x01\x02"], CLOSE_UNSUPPORTED, "even number"),
    (["hello"], CLOSE_UNSUPPORTED, "not JSON"),
    ([json.dumps({"what": 1})], CLOSE_UNSUPPORTED, "unknown message"),
    ([json.dumps({"config": {"sample_rate": 1}})], CLOSE_UNSUPPORTED, "sample_rate 1: a whole number of Hz"),
    ([json.dumps({"config": {"sample_rate": "8000"}})], CLOSE_UNSUPPORTED, "a whole number of Hz"),
    ([json.dumps({"config": {"words": 2}})], CLOSE_UNSUPPORTED, "words 2: 0 or 1"),
    ([json.dumps({"config": {"max_alternatives": -1}})], CLOSE_UNSUPPORTED, "a whole number 0-100"),
    ([json.dumps({"config": {"phrase_list": "golf"}})], CLOSE_UNSUPPORTED, "phrase_list: a list of 1-1000 strings"),
    ([json.dumps({"config": {"phrase_list": ["x" * 201]}})], CLOSE_UNSUPPORTED, "of at most 200 characters"),
    ([json.dumps({"config": {"phrase_list": ["Z9"]}})], CLOSE_UNSUPPORTED, "phrase_list: no pronunciation for Z9"),
    ([json.dumps({"config": {"model": "x"}})], CLOSE_UNSUPPORTED, "unknown config"),
    ([b"\x00\x00" * 10, json.dumps({"config": {"sample_rate": 8000}})], CLOSE_UNSUPPORTED, "after audio"),
    ([b"\x00" * 3000], CLOSE_TOO_BIG, "at most 2000"),
    ([b"\x00\x00" * 900] * 6, CLOSE_POLICY, "longer than 0.5 s"),
])
def test_bad_input_is_answered_with_an_error_and_a_close_code(recognizer, messages, code, error):
    received, closed = with_server(recognizer, lambda server: converse(server, messages), max_message_bytes=2000,
                                   max_stream_seconds=0.5)
    assert closed == code
    assert error in received[-1]["error"]


def test_a_message_over_twice_the_limit_is_refused_by_the_websocket_layer(recognizer):
    received, closed = with_server(recognizer, lambda server: converse(server, [b"\x00" * 5000]),
                                   max_message_bytes=2000)
    assert closed == CLOSE_TOO_BIG and received == []


def test_idle_connections_are_closed(recognizer):
    received, closed = with_server(recognizer, lambda server: converse(server, [b"\x00\x00" * 100], pause=0.6),
                                   idle_timeout=0.3)
    assert closed == CLOSE_POLICY and "no audio for 0.3 s" in received[-1]["error"]


def test_config_messages_alone_do_not_keep_a_connection(recognizer):
    """A client sending a config message every 0.1 s for 10 s, then EOF, is closed 0.5 s after it connected:
    only audio counts as activity (a restarted timer let 32 such clients hold every slot)."""
    config = json.dumps({"config": {"sample_rate": 8000}})
    received, closed = with_server(recognizer, lambda server: converse(server, [config] * 100 + ["EOF"], pause=0.1),
                                   idle_timeout=0.5)
    assert closed == CLOSE_POLICY and "no audio for 0.5 s" in received[-1]["error"]


def test_deeply_nested_json_is_not_the_protocol(recognizer, caplog):
    for message in ("[" * 100000, '{"config": ' * 50000):
        received, closed = with_server(recognizer, lambda server: converse(server, [message]))
        assert closed == CLOSE_UNSUPPORTED and "not JSON" in received[-1]["error"]
    assert "Traceback" not in caplog.text and "recognition failed" not in caplog.text


def test_connections_over_the_limit_are_told_to_try_later(recognizer):
    async def client(server):
        async with connect(f"ws://127.0.0.1:{server.port}") as first:
            await first.send(b"\x00\x00" * 100)
            await first.recv()
            refused = await converse(server, [b"\x00\x00"])
            await first.send("EOF")
            return refused, [json.loads(message) async for message in first], server.refused

    (received, closed), final, refused = with_server(recognizer, client, max_connections=1)
    assert closed == CLOSE_TRY_LATER and "at most 1" in received[-1]["error"] and refused == 1
    assert "text" in final[-1]


def test_abandoned_connections_leave_nothing_behind(recognizer):
    async def abandon(server, count):
        for index in range(count):
            websocket = await connect(f"ws://127.0.0.1:{server.port}")
            await websocket.send(pcm(0.2, index))
            if index % 2:
                websocket.transport.abort()  # gone without a close handshake
            else:
                await websocket.close()  # closed mid-stream, without EOF
        for _ in range(100):
            if server.active == 0 and not server._server.connections:
                break
            await asyncio.sleep(0.05)
        return server.active, len(server._server.connections), threading.active_count()

    async def client(server):
        before = threading.active_count()
        first = await abandon(server, 20)
        second = await abandon(server, 20)
        return before, first, second, server.pool._max_workers

    # The pool starts its threads as work comes (audio after a close is not recognised, so it may start its
    # second one only in the second round): at most `workers` more threads than before, however many connections.
    before, (active, connections, threads), (active_again, connections_again, threads_again), workers = \
        with_server(recognizer, client, workers=2)
    assert active == connections == active_again == connections_again == 0
    assert threads <= threads_again <= before + workers


def test_a_client_that_does_not_read_is_dropped(recognizer):
    async def client(server):
        websocket = await connect(f"ws://127.0.0.1:{server.port}")

        async def never(message):
            await asyncio.Event().wait()

        # The server's connection object for this client: make its sends hang, as a full write buffer does.
        await websocket.send(b"\x00\x00" * 10)
        while not server._server.connections:
            await asyncio.sleep(0.01)
        (connection,) = server._server.connections
        connection.send = never
        await websocket.send(b"\x00\x00" * 10)
        try:
            while True:
                await websocket.recv()
        except ConnectionClosed:
            pass
        return server.errors, server.active

    errors, active = with_server(recognizer, client, send_timeout=0.2)
    assert errors == 1 and active == 0


def test_recognition_failures_are_reported_and_the_server_goes_on(recognizer, monkeypatch):
    from asrkit.recognizer import server as server_module

    def broken(self, output):
        raise ValueError("broken on purpose")

    async def client(server):
        monkeypatch.setattr(server_module.Session, "end", broken)
        failed = await converse(server, [b"\x00\x00" * 10])
        monkeypatch.undo()
        return failed, await converse(server, [b"\x00\x00" * 10, "EOF"])

    (received, closed), (after, after_code) = with_server(recognizer, client)
    assert closed == CLOSE_INTERNAL and "broken on purpose" in received[-1]["error"]
    assert after_code == CLOSE_NORMAL and "text" in after[-1]


def test_other_interfaces_need_allow_remote(recognizer):
    with pytest.raises(AsrkitError, match="allow-remote"):
        RecognitionServer(recognizer, ServerConfig(host="0.0.0.0"))
    RecognitionServer(recognizer, ServerConfig(host="0.0.0.0", allow_remote=True)).pool.shutdown()
    RecognitionServer(recognizer, ServerConfig(host="::1")).pool.shutdown()


def expected_messages(recognizer, audio, endpoint, size=3200):
    """What the server answers a stream of `audio` sent in messages of `size` bytes, then EOF."""
    stream = recognizer.stream(endpoint=endpoint)
    messages = []
    for piece in chunks(np.frombuffer(audio, "<i2"), size // 2):
        finals = stream.accept(piece)
        messages += [final_message(result) for result in finals] or [{"partial": stream.partial().text}]
    return messages + [final_message(result) for result in stream.finish()]


@pytest.mark.parametrize("batch", [True, False])
def test_concurrent_streams_get_what_each_gets_alone(recognizer, batch):
    endpoint = EndpointConfig.with_max_length(0.8)
    audios = [pcm(seconds, seed) for seed, seconds in enumerate((2.4, 1.1, 3.0, 1.7, 0.3), 10)]
    expected = [expected_messages(recognizer, audio, endpoint) for audio in audios]

    async def client(server):
        talks = [converse(server, chunks(audio) + ["EOF"]) for audio in audios]
        return await asyncio.gather(*talks), server.batcher

    talks, batcher = with_server(recognizer, client, endpoint=endpoint, batch=batch, max_queue=64)
    assert [received for received, _ in talks] == expected
    assert all(code == CLOSE_NORMAL for _, code in talks)
    assert sum("text" in message for messages in expected for message in messages) >= 8
    assert (batcher is not None and batcher.calls > 0) == batch


def test_the_batcher_evaluates_the_waiting_streams_together_and_fails_a_broken_one_alone(recognizer):
    """Streams queued while the batcher is busy (here: within one turn of the event loop) go through the network
    in one call, each getting the output it gets alone; a stream whose front end fails gets its error alone."""
    audios = [np.frombuffer(pcm(1.2, seed), "<i2") for seed in range(4)]
    alone = [recognizer.stream().acoustic.accept(audio) for audio in audios]

    class Broken:
        def begin(self, samples):
            raise ValueError("no front end")

    async def main():
        pool = concurrent.futures.ThreadPoolExecutor(2)
        batcher = NetworkBatcher(recognizer.acoustic.network, pool)
        streams = [recognizer.stream() for _ in audios]
        try:
            outputs = await asyncio.gather(*[batcher.evaluate(stream, audio) for stream, audio in zip(streams, audios)],
                                           batcher.evaluate(Broken(), audios[0]), return_exceptions=True)
        finally:
            pool.shutdown()
        return [stream.acoustic.end(output) for stream, output in zip(streams, outputs)], outputs[-1], batcher

    together, error, batcher = asyncio.run(main())
    for one, other in zip(alone, together):
        assert_same_rows(one, other)
    assert isinstance(error, ValueError) and "no front end" in str(error)
    assert (batcher.calls, batcher.inputs, batcher.mean_streams) == (1, 4, 4.0)


def test_the_server_trims_the_heap_when_its_last_stream_closes(recognizer, monkeypatch):
    from asrkit.recognizer import server as server_module

    trims = []
    monkeypatch.setattr(server_module, "trim_freed_memory", lambda: trims.append(1))
    received, code = with_server(recognizer, lambda server: converse(server, [b"\x00\x00" * 800, "EOF"]))
    assert code == CLOSE_NORMAL and trims == [1]


def test_a_vosk_client_s_config_is_honoured(recognizer):
    """What Vosk's test clients send (test_simple.py: the config with the file's sample rate, the audio in 8000-byte
    messages, then {"eof": 1}), at 16 kHz to an 8-kHz package, with words off, and with alternatives: the results
    are those of the audio resampled (as asrkit-transcribe resamples a file) recognised at the package's rate."""
    from asrkit.inference.resample import resample

    audio16 = (speech_like(2.0, 16000, seed=5) * 32767).astype("<i2")
    at_package_rate = resample(audio16.astype(np.float32) / 32768, 16000, 8000)
    expected = recognizer.transcribe(at_package_rate, nbest=3)
    assert expected.text

    def messages(config):
        return ([json.dumps({"config": config})] + chunks(audio16.tobytes(), 8000) + [json.dumps({"eof": 1})])

    plain, code = with_server(recognizer, lambda server: converse(server, messages({"sample_rate": 16000})),
                              endpoint=EndpointConfig(rules=()))
    assert code == CLOSE_NORMAL and plain[-1]["text"] == expected.text
    assert [w["word"] for w in plain[-1]["result"]] == [w.word for w in expected.words]
    assert plain[-1]["end"] == pytest.approx(2.0)
    wordless, _ = with_server(recognizer, lambda server: converse(server, messages(
        {"sample_rate": 16000, "words": 0})), endpoint=EndpointConfig(rules=()))
    assert wordless[-1]["text"] == expected.text and "result" not in wordless[-1]
    several, _ = with_server(recognizer, lambda server: converse(server, messages(
        {"sample_rate": 16000.0, "words": 1, "max_alternatives": 3})), endpoint=EndpointConfig(rules=()))
    alternatives = several[-1]["alternatives"]
    assert [entry["text"] for entry in alternatives] == [entry.text for entry in expected.nbest][:3]
    assert alternatives[0]["text"] == expected.text and len(alternatives) >= 2
    assert alternatives == sorted(alternatives, key=lambda entry: -entry["confidence"])


def test_a_vosk_client_s_phrase_list_makes_the_stream_hear_only_its_phrases(recognizer):
    """Vosk's phrase_list (test_words.py sends it with the sample rate): the stream's results are those of a
    Recognizer with the same phrases, and the phrases keep the config's other choices (max_alternatives)."""
    phrases = ["golf alpha", "echo", "[unk]"]
    audio = pcm(2.0, 3)
    expected = recognizer.with_phrases(phrases).transcribe(np.frombuffer(audio, "<i2"), nbest=2)
    config = {"sample_rate": 8000, "phrase_list": phrases, "max_alternatives": 2}
    messages = [json.dumps({"config": config})] + chunks(audio, 8000) + [json.dumps({"eof": 1})]
    received, code = with_server(recognizer, lambda server: converse(server, messages),
                                 endpoint=EndpointConfig(rules=()))
    assert code == CLOSE_NORMAL
    assert [entry["text"] for entry in received[-1]["alternatives"]] == [entry.text for entry in expected.nbest][:2]
    assert set(expected.text.split()) <= {"GOLF", "ALPHA", "ECHO", "<UNK>"}

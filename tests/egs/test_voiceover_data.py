"""egs/voiceover/local: subtitle normalisation, the character split file, the dev/test sentence filter, and the
speech files no line speaks."""

import io
import os
import random
import struct
import sys
import wave

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOCAL = os.path.join(ROOT, "egs", "voiceover", "local")
if LOCAL not in sys.path:
    sys.path.insert(0, LOCAL)

import prepare_data  # noqa: E402  (egs/voiceover/local)
import transcripts  # noqa: E402
from asrkit.errors import AsrkitError  # noqa: E402


@pytest.mark.parametrize("subtitle, transcript", [
    ("Hi, I'm Joe King.", "HI I'M JOE KING"),
    ('First word sounds like "RING"?', "FIRST WORD SOUNDS LIKE RING"),
    ("Does Mary-Lou help you?", "DOES MARY LOU HELP YOU"),
    ("He discovered the island in 1844.", "HE DISCOVERED THE ISLAND IN EIGHTEEN FORTY FOUR"),
    ("This is the 1940's.", "THIS IS THE NINETEEN FORTIES"),
    ("for the cleanest 24 Hour Store", "FOR THE CLEANEST TWENTY FOUR HOUR STORE"),
    ("It was 1905, or 2000, or 1900.", "IT WAS NINETEEN OH FIVE OR TWO THOUSAND OR NINETEEN HUNDRED"),
    ("Ummm... Hmmmm, errr...", "UM HMM ER"),
    ("ALL THIIINGS GREEEAT", "ALL THINGS GREAT"),
    ("the Super Soldier Treatment^_.", "THE SUPER SOLDIER TREATMENT"),
    ("<gulp> Okay. (sigh)", "OKAY"),
    ("Don't fret Mr. King, Dr. Nazi vs. 'em.", "DON'T FRET MISTER KING DOCTOR NAZI VERSUS EM"),
    ("GRRRRR! WHOOF!", "GRR WHOOF"),
    ("C", "C"),
    ("<gulp>", None),
    ("Mmmmrft, grrblt.", None),
    ("...", None),
])
def test_normalize(subtitle, transcript):
    assert transcripts.normalize(subtitle) == transcript


def test_number_words():
    assert transcripts.number_words(0) == ["ZERO"]
    assert transcripts.number_words(115) == ["ONE", "HUNDRED", "FIFTEEN"]
    assert transcripts.number_words(21_040) == ["TWENTY", "ONE", "THOUSAND", "FORTY"]
    with pytest.raises(ValueError):
        transcripts.number_words(10 ** 6)


def test_split_file(tmp_path):
    path = tmp_path / "split.txt"
    path.write_text("# comment\ndev: SEC LOU\ntest: WITCH  # the witch\n")
    assert prepare_data.read_split(str(path)) == {"SEC": "dev", "LOU": "dev", "WITCH": "test"}
    path.write_text("dev: SEC\ntest: SEC\n")
    with pytest.raises(AsrkitError, match=r"split.txt:2: SEC is already in dev"):
        prepare_data.read_split(str(path))
    path.write_text("train: JOE\n")
    with pytest.raises(AsrkitError, match=r"split.txt:1: expected 'dev: NAME ...'"):
        prepare_data.read_split(str(path))


def test_held_out_characters_and_sentences():
    utterances = [("fotaq-joe-1", "fotaq-joe", "JOE", "NO", "a"), ("fotaq-joe-2", "fotaq-joe", "JOE", "HELLO", "b"),
                  ("fotaq-sec-1", "fotaq-sec", "SEC", "NO", "c"), ("fotaq-sec-2", "fotaq-sec", "SEC", "GO AWAY", "d"),
                  ("fotaq-ape-1", "fotaq-ape", "APE", "OOP", "e")]
    dropped = []
    splits = prepare_data.assign_splits(utterances, {"SEC": "dev", "APE": "test"}, dropped)
    assert [u[0] for u in splits["train"]] == ["fotaq-joe-1", "fotaq-joe-2"]
    assert [u[0] for u in splits["dev"]] == ["fotaq-sec-2"] and [u[0] for u in splits["test"]] == ["fotaq-ape-1"]
    assert dropped == [("fotaq-sec-1", "sentence also in train", "NO")]
    with pytest.raises(AsrkitError, match="characters that say nothing here: WEDGE"):
        prepare_data.assign_splits(utterances, {"WEDGE": "dev"}, [])


@pytest.mark.parametrize("actor, character", [
    ("JOE", "JOE"), ("X10_JOE", "JOE"), ("FAYE-H", "FAYE"), ("ANDSON-E", "AND"), ("ANDERSON", "AND"),
    ("MAN2", "MAN"), ("PRINCESS1", "PRIN"), ("AZURA-H", "PRIN"), ("LOLA_SHOWER", "LOLA"), ("JIMMY", "JIM"),
    ("SPARKY-F", "SPARKY"), ("TMPD", "TMPD")])
def test_scene_actors_are_named_as_the_dialogues_name_characters(actor, character):
    assert prepare_data.character_of_actor(actor) == character


class FakeBundle:
    def read(self, name):
        return b"mp3 of " + name.encode()


def test_scene_lines_train_only_when_no_held_out_character_may_speak_them(tmp_path, monkeypatch):
    segment = prepare_data.amazon_queen_scenes.SceneSegment
    monkeypatch.setattr(prepare_data.amazon_queen_scenes, "scene_segments", lambda bundle: [
        segment("JOE00411.SB", ("JOE",), "It's a lamp", "QUEEN2.JAS description 1"),
        segment("C1___021.SB", ("SPARKY", "SPARKY-F"), "Hi there", "C1.CUT record 2"),
        segment("C1___031.SB", ("FRANK", "ANDERSON"), "Farewell King!", "C1.CUT record 3"),
        segment("C1___041.SB", ("SECRETARY",), "Leave my pencil alone!", "C1.CUT record 4"),
        segment("C1___051.SB", (), "SMASH!", "C1.CUT record 5"),
        segment("C1___061.SB", ("JOE",), "<gulp>", "C1.CUT record 6")])
    dropped = []
    utterances = prepare_data.scene_utterances(FakeBundle(), str(tmp_path), {"FRANK": "test", "SEC": "dev"},
                                               dropped)
    assert [utterance[:4] for utterance in utterances] == [
        ("fotaq-joe-joe00411", "fotaq-joe", "JOE", "IT'S A LAMP"),
        ("fotaq-sparky-c1___021", "fotaq-sparky", "SPARKY", "HI THERE")]
    assert (tmp_path / "joe00411.mp3").read_bytes() == b"mp3 of JOE00411.SB"
    assert dropped == [
        ("fotaq-c1___031", "scene line a held-out character may speak", "AND/FRANK: Farewell King!"),
        ("fotaq-c1___041", "scene line a held-out character may speak", "SEC: Leave my pencil alone!"),
        ("fotaq-c1___051", "scene line of an unknown speaker", "SMASH!"),
        ("fotaq-c1___061", "no usable words", "<gulp>")]


def test_scene_lines_saying_a_dev_or_test_sentence_stay_out_of_train():
    utterances = [("fotaq-joe-1", "fotaq-joe", "JOE", "HELLO", "a"),
                  ("fotaq-sec-1", "fotaq-sec", "SEC", "GO AWAY", "b")]
    scene_lines = [("fotaq-bob-c1", "fotaq-bob", "BOB", "GO AWAY", "c"),
                   ("fotaq-bob-c2", "fotaq-bob", "BOB", "HI", "d")]
    dropped = []
    splits = prepare_data.assign_splits(utterances, {"SEC": "dev"}, dropped, extra_train=scene_lines)
    assert [u[0] for u in splits["train"]] == ["fotaq-joe-1", "fotaq-bob-c2"]
    assert [u[0] for u in splits["dev"]] == ["fotaq-sec-1"]
    assert dropped == [("fotaq-bob-c1", "scene line saying a dev or test sentence", "GO AWAY")]


def test_steel_sky_lines_train_as_their_own_speakers(sky_game, sky_files, tmp_path):
    sections = {section: sky_files.text([b"?"]) for section in range(1, 7)}
    sections[0] = sky_files.text([b"?", b"Hello, DAH-LING!", b"Mmf!", b"Go away."])
    pcm = bytes([128, 140, 116]) * 400
    games, _ = sky_game({**{60600 + section: data for section, data in sections.items()},
                         50001: sky_files.speech(pcm), 50002: sky_files.speech(pcm), 50003: sky_files.speech(pcm)})
    dropped = []
    audio = tmp_path / "audio"
    utterances = prepare_data.steel_sky_utterances(games, str(audio), dropped)
    assert [utterance[:4] for utterance in utterances] == [
        ("bass-50001-0-0001", "bass-50001", "BASS?", "HELLO DAH LING"),
        ("bass-50003-0-0003", "bass-50003", "BASS?", "GO AWAY")]
    assert dropped == [("bass-50002", "no usable words", "Mmf!")]
    # The audio: WAV, the 8-bit unsigned PCM widened to 16 bits, 11,025 Hz, named by file number
    # inside the audio dir.
    assert sorted(os.listdir(audio)) == ["50001.wav", "50003.wav"]
    with wave.open(utterances[0][4], "rb") as reader:
        assert (reader.getsampwidth(), reader.getframerate(), reader.getnchannels()) == (2, 11025, 1)
        assert reader.readframes(10_000) == struct.pack("<1200h", *((x - 128) * 256 for x in pcm))
    sample = prepare_data.steel_sky_utterances(games, str(tmp_path / "sample"), [], (1, random.Random(1)))
    assert len(sample) == 1 and len(os.listdir(tmp_path / "sample")) == 1  # only the sample's audio is written
    # They join train, less the lines that say a dev or test sentence.
    splits = {"train": [("fotaq-joe-1", "fotaq-joe", "JOE", "HI", "a")],
              "dev": [("fotaq-sec-1", "fotaq-sec", "SEC", "GO AWAY", "b")], "test": []}
    dropped = []
    prepare_data.add_held_out_free(splits, utterances, "said in dev", dropped)
    assert [utterance[0] for utterance in splits["train"]] == ["fotaq-joe-1", "bass-50001-0-0001"]
    assert dropped == [("bass-50003-0-0003", "said in dev", "GO AWAY")]


def test_steel_sky_missing_game_is_named(tmp_path):
    with pytest.raises(AsrkitError, match=r"beneath-a-steel-sky/sky.dsk is missing: run local/fetch_games.sh"):
        prepare_data.steel_sky_utterances(str(tmp_path), str(tmp_path / "audio"), [])


def test_audio_paths_stay_in_the_audio_dir(tmp_path):
    assert prepare_data.audio_path(str(tmp_path), "011.mp3") == os.path.join(str(tmp_path), "011.mp3")
    for name in ("/tmp/011.mp3", "../011.mp3", "a/../../011.mp3", ".."):
        with pytest.raises(AsrkitError, match="not a file of"):
            prepare_data.audio_path(str(tmp_path), name)


def test_undecodable_audio_is_dropped_and_counted(tmp_path):
    good = tmp_path / "good.wav"
    with wave.open(str(good), "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(11025)
        writer.writeframes(b"\0\0" * 11025)
    bad = tmp_path / "bad.mp3"
    bad.write_bytes(b"\xff\xfb" + bytes(range(256)) * 4)
    items = [("u-good", "s", "S", "HELLO", str(good)), ("u-bad", "s", "S", "HELLO", str(bad))]
    dropped = []
    assert prepare_data.audio_durations(items, dropped) == {"u-good": 1.0}
    assert [item[0] for item in items] == ["u-good"]
    assert [entry[:2] for entry in dropped] == [("u-bad", "undecodable audio")] and str(bad) in dropped[0][2]


def _wav_bytes(seconds, rate=11025):
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(rate)
        writer.writeframes(b"\0\0" * int(seconds * rate))
    return buffer.getvalue()


class SpeechBundle:
    """Four speech files: a dialogue's, a scene's, and two that no line speaks (one of them damaged)."""

    files = {"APE11.SB": _wav_bytes(1), "C1___021.SB": _wav_bytes(1), "1000SSSS.SB": _wav_bytes(2.5),
             "101SSSSS.SB": b"\xff\xfb" + bytes(range(256)) * 4, "APE.DOG": b""}

    def names(self, extension):
        return sorted(name for name in self.files if name.endswith(extension))

    def read(self, name):
        return self.files[name]


def test_speech_files_no_line_speaks_are_counted_with_their_seconds(monkeypatch):
    monkeypatch.setattr(prepare_data.amazon_queen, "spoken_segments", lambda bundle: [
        prepare_data.amazon_queen.SpokenSegment("APE11.SB", "APE", "Oop", "APE.DOG")])
    monkeypatch.setattr(prepare_data.amazon_queen_scenes, "scene_segments", lambda bundle: [
        prepare_data.amazon_queen_scenes.SceneSegment("C1___021.SB", ("SPARKY",), "Hi there", "C1.CUT record 2")])
    dropped = []
    prepare_data.speech_without_a_line(SpeechBundle(), dropped)
    assert dropped == [("fotaq-1000ssss", "speech file no line speaks", "2.50 s"),
                       ("fotaq-101sssss", "speech file no line speaks", "undecodable")]

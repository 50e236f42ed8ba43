import io

import pytest

from asrkit.errors import TableError
from asrkit.io.text_lines import split_boost, utf8_lines


def test_lines_decode_and_a_bad_one_is_named_with_the_callers_error():
    assert list(utf8_lines(io.BytesIO("a b\nü\n".encode()), "x.scp", TableError)) == ["a b\n", "ü\n"]
    with pytest.raises(TableError, match=r"^x.scp:2: not UTF-8 \(invalid start byte at byte 0\)"):
        list(utf8_lines(io.BytesIO(b"ok\n\xff\n"), "x.scp", TableError))


def test_a_trailing_boost_is_split_off_and_a_bad_one_named():
    assert split_boost("TRADER BOB :4.5", "f:1", ValueError) == ("TRADER BOB", 4.5)
    assert split_boost("TRADER BOB", "f:1", ValueError) == ("TRADER BOB", None)
    assert split_boost("A:1", "f:1", ValueError) == ("A:1", None)  # the marker is " :", after a space
    with pytest.raises(ValueError, match=r"f:2: the boost after ' :' must be a number, not 'x'"):
        split_boost("A :x", "f:2", ValueError)
    with pytest.raises(ValueError, match=r"f:3: the boost must be finite, not inf"):
        split_boost("A :inf", "f:3", ValueError)

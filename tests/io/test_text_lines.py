import io

import pytest

from asrkit.errors import TableError
from asrkit.io.text_lines import utf8_lines


def test_lines_decode_and_a_bad_one_is_named_with_the_callers_error():
    assert list(utf8_lines(io.BytesIO("a b\nü\n".encode()), "x.scp", TableError)) == ["a b\n", "ü\n"]
    with pytest.raises(TableError, match=r"^x.scp:2: not UTF-8 \(invalid start byte at byte 0\)"):
        list(utf8_lines(io.BytesIO(b"ok\n\xff\n"), "x.scp", TableError))

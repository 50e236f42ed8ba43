"""Building and loading asrkit's CPU kernels: the build cache, a failed build, the switches."""

import logging
import os

import pytest

from asrkit.nn import cpu_kernels


def test_build_is_cached_and_leaves_no_partial_file(tmp_path):
    built = cpu_kernels.build(cpu_kernels.source("softmax_cross_entropy"), tmp_path)
    assert built.exists() and built.parent.parent == tmp_path
    stamp = built.stat().st_mtime_ns
    assert cpu_kernels.build(cpu_kernels.source("softmax_cross_entropy"), tmp_path) == built
    assert built.stat().st_mtime_ns == stamp
    assert not list(built.parent.glob("*.tmp"))


def load_logged(kernel, cache, monkeypatch, caplog):
    """cpu_kernels.load of the kernel source `kernel` (its switch ASRKIT_TEST_KERNEL) with the cache `cache`: its
    result, the warnings it logged."""
    monkeypatch.setattr(cpu_kernels, "_loaded", {})
    monkeypatch.setattr(cpu_kernels, "KERNELS", kernel.parent)
    monkeypatch.setitem(cpu_kernels.SWITCHES, kernel.stem, ("ASRKIT_TEST_KERNEL", "the other thing runs"))
    monkeypatch.setenv("ASRKIT_CACHE", str(cache))
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="asrkit.nn.cpu_kernels"):
        return cpu_kernels.load(kernel.stem), caplog.text


def test_a_failed_build_raises_and_loading_falls_back_with_the_reason(tmp_path, monkeypatch, caplog):
    broken = tmp_path / "kernels" / "broken.cc"
    broken.parent.mkdir()
    broken.write_text("this is not C++\n")
    with pytest.raises(RuntimeError, match="failed"):
        cpu_kernels.build(broken, tmp_path / "cache")
    assert not list((tmp_path / "cache").glob("*/broken*"))  # neither a library nor a partial one
    loaded, warnings = load_logged(broken, tmp_path / "cache", monkeypatch, caplog)
    assert loaded is None and "not available, so the other thing runs" in warnings and "failed" in warnings
    assert cpu_kernels.reason("broken").startswith("the kernel is not available: compiling")


def test_a_switch_set_to_0_turns_its_kernel_off_alone(monkeypatch):
    monkeypatch.setattr(cpu_kernels, "_loaded", {})
    monkeypatch.setenv("ASRKIT_FUSED_LOSS", "0")
    loaded = cpu_kernels.load_all()
    assert loaded["softmax_cross_entropy"] is None and loaded["lstm_cell"] is not None
    assert cpu_kernels.reason("softmax_cross_entropy") == "ASRKIT_FUSED_LOSS=0"
    assert cpu_kernels.reason("lstm_cell") is None


def test_the_cache_key_changes_with_a_header_the_kernels_include(tmp_path):
    for path in cpu_kernels.KERNELS.iterdir():
        (tmp_path / path.name).write_bytes(path.read_bytes())
    kernel = tmp_path / "lstm_cell.cc"
    before = cpu_kernels._key(kernel)
    assert before == cpu_kernels._key(cpu_kernels.source("lstm_cell"))
    with open(tmp_path / "rows.h", "a") as header:
        header.write("// changed\n")
    assert cpu_kernels._key(kernel) != before


def test_a_visible_gpu_rules_every_kernel_out_for_its_users(monkeypatch):
    from asrkit.nn import fused_lstm
    from asrkit.train import cross_entropy

    monkeypatch.setattr(cpu_kernels, "gpu_visible", lambda: True)
    for name in cpu_kernels.SWITCHES:
        assert cpu_kernels.reason(name) == "the kernel is CPU-only and a GPU is visible"
    assert not fused_lstm.usable() and not cross_entropy.fused_usable()
    assert cross_entropy.describe() == "TensorFlow ops (the kernel is CPU-only and a GPU is visible)"



def test_a_cached_library_that_is_not_the_one_built_is_built_again_not_loaded(tmp_path, monkeypatch, caplog):
    # A stand-in compiler (a copy) keeps the test fast; the real build and load are tested above.
    kernel = tmp_path / "kernels" / "fake.cc"
    kernel.parent.mkdir()
    kernel.write_bytes(bytes(range(256)) * 8)
    monkeypatch.setattr(cpu_kernels, "_compiler_command", lambda source, target: ["cp", str(source), str(target)])
    built = cpu_kernels.build(kernel, tmp_path / "cache")
    good = built.read_bytes()
    record = built.with_name(built.name + ".sha256")
    assert good == kernel.read_bytes()
    assert record.read_text().split() == [cpu_kernels.hashlib.sha256(good).hexdigest()]
    # A flipped byte, another library put in its place, and a library whose digest is missing.
    damages = [lambda: built.write_bytes(good[:1000] + bytes([good[1000] ^ 1]) + good[1001:]),
               lambda: built.write_bytes(b"\x7fELF not the kernel"),
               lambda: record.unlink()]
    for damage in damages:
        damage()
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="asrkit.nn.cpu_kernels"):
            assert cpu_kernels.build(kernel, tmp_path / "cache") == built
        assert "is not the library that was built" in caplog.text
        assert built.read_bytes() == good
        assert record.read_text().split() == [cpu_kernels.hashlib.sha256(good).hexdigest()]
    caplog.clear()
    stamp = built.stat().st_mtime_ns
    assert cpu_kernels.build(kernel, tmp_path / "cache") == built and built.stat().st_mtime_ns == stamp
    assert not caplog.text and not list(built.parent.glob("*.tmp"))


def _fake_build(tmp_path, monkeypatch, cache):
    kernel = tmp_path / "kernels" / "fake.cc"
    kernel.parent.mkdir(exist_ok=True)
    kernel.write_bytes(b"the kernel\n" * 100)
    monkeypatch.setattr(cpu_kernels, "_compiler_command", lambda source, target: ["cp", str(source), str(target)])
    return kernel, cpu_kernels.build(kernel, cache)


def test_the_cache_is_private_to_its_user(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    _kernel, built = _fake_build(tmp_path, monkeypatch, cache)
    assert (cache.stat().st_mode & 0o777, built.parent.stat().st_mode & 0o777) == (0o700, 0o700)
    cache.chmod(0o755)  # an earlier cache others may read: made private, not refused
    _fake_build(tmp_path, monkeypatch, cache)
    assert cache.stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("shared", ["cache", "key"])
def test_a_library_and_digest_swapped_in_a_shared_cache_are_refused_not_loaded(tmp_path, monkeypatch, shared):
    cache = tmp_path / "cache"
    kernel, built = _fake_build(tmp_path, monkeypatch, cache)
    (cache if shared == "cache" else built.parent).chmod(0o777)
    # Anyone may now put another library there, with its own digest beside it.
    built.write_bytes(b"\x7fELF someone else's library")
    built.with_name(built.name + ".sha256").write_text(cpu_kernels._digest(built) + "\n")
    with pytest.raises(cpu_kernels.KernelCacheError, match=r"may be written by its group or others \(mode 0777\)"):
        cpu_kernels.build(kernel, cache)
    assert built.read_bytes() == b"\x7fELF someone else's library"  # left as found, never loaded


def test_a_cache_of_another_user_is_refused_and_loading_falls_back(tmp_path, monkeypatch, caplog):
    cache = tmp_path / "cache"
    kernel, _built = _fake_build(tmp_path, monkeypatch, cache)
    monkeypatch.setattr(cpu_kernels.os, "geteuid", lambda: os.getuid() + 1)
    with pytest.raises(cpu_kernels.KernelCacheError, match=f"{cache} belongs to user {os.getuid()}, not to this"):
        cpu_kernels.build(kernel, cache)
    loaded, warnings = load_logged(kernel, tmp_path / "home_cache", monkeypatch, caplog)
    assert loaded is None and "not available, so the other thing runs" in warnings and "belongs to user" in warnings

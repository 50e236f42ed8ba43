#!/usr/bin/env python3
"""Download a file, check its MD5 and, for a .tar.gz, unpack it; a completion marker makes a rerun skip it.

  local/download.py [--md5 HEX | --md5-list URL] [--extract] <url> <dir>

The file goes to <dir>/<name> under a temporary name and is renamed once whole; its checksum is
compared with --md5 (pinned in run.sh) or with its line of --md5-list (a server's md5sum.txt,
`HEX  NAME` lines).  A mismatch removes the file and fails, naming both sums.  With --extract the
archive is unpacked into <dir>, then <dir>/.<name>.done records the checksum: a rerun with that marker
does nothing.  The archive may hold only files and directories within <dir>: a link, a device node, a FIFO or
a path outside is refused by name before anything is unpacked.  What is unpacked belongs to whoever runs this
(not to the owners the archive names, even for root), without setuid, setgid or sticky bits and not writable
by group or others (tarfile's "data" filter, or the same by hand on a Python without it).  An archive that
is truncated or not a tar (with the right MD5: damaged at its source) is an error naming it.
"""

import argparse
import hashlib
import os
import shutil
import sys
import tarfile
import urllib.request
import zlib

CHUNK = 1 << 20


def fail(message):
    print(f"download.py: error: {message}", file=sys.stderr)
    sys.exit(1)


def fetch(url, path):
    """url -> path, through a temporary name; returns the MD5 of what was written."""
    digest = hashlib.md5()
    partial = f"{path}.partial"
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(partial, "wb") as out:
            while True:
                block = response.read(CHUNK)
                if not block:
                    break
                digest.update(block)
                out.write(block)
    except OSError as error:
        if os.path.exists(partial):
            os.remove(partial)
        fail(f"cannot download {url}: {error}")
    os.replace(partial, path)
    return digest.hexdigest()


def listed_md5(list_url, name):
    try:
        with urllib.request.urlopen(list_url, timeout=60) as response:
            lines = response.read().decode("utf-8", "replace").splitlines()
    except OSError as error:
        fail(f"cannot download the checksum list {list_url}: {error}")
    for line in lines:
        fields = line.split()
        if len(fields) == 2 and fields[1].lstrip("*") == name:
            return fields[0].lower()
    fail(f"{list_url} lists no checksum for {name}")


def _kind(member):
    for test, name in ((member.issym, "symbolic link"), (member.islnk, "hard link"), (member.ischr, "character device"),
                       (member.isblk, "block device"), (member.isfifo, "FIFO")):
        if test():
            return name
    return "special file"


def checked_members(tar, archive, directory):
    """The archive's members, each a file or directory within `directory`; anything else fails by name.
    Reading them all reads the whole archive, so a truncated one fails here, before anything is unpacked."""
    root = os.path.realpath(directory)
    members = []
    for member in tar:
        target = os.path.realpath(os.path.join(directory, member.name))
        if os.path.isabs(member.name) or not (target == root or target.startswith(root + os.sep)):
            fail(f"{archive}: member {member.name!r} would be written outside {directory}; not unpacking")
        if not (member.isfile() or member.isdir()):
            fail(f"{archive}: member {member.name!r} is a {_kind(member)}, not a file or directory; not unpacking")
        members.append(member)
    return members


def as_plain_data(member):
    """What tarfile's "data" filter makes of a file or directory, for a Python without it (before 3.11.4):
    owned by whoever unpacks, no setuid, setgid or sticky bit, not writable by group or others."""
    member.uid, member.gid, member.uname, member.gname = os.getuid(), os.getgid(), "", ""
    member.mode = 0o755 if member.isdir() else (member.mode & 0o755) | 0o600
    return member


def extract(archive, directory):
    try:
        with tarfile.open(archive) as tar:
            members = checked_members(tar, archive, directory)
            if hasattr(tarfile, "data_filter"):
                tar.extractall(directory, members=members, filter="data")
            else:
                tar.extractall(directory, members=[as_plain_data(member) for member in members])
    except (tarfile.TarError, EOFError, zlib.error) as error:
        fail(f"{archive}: cannot be unpacked ({error or type(error).__name__}): it is truncated or not a .tar.gz "
             "although its MD5 is the one expected (damaged where it was published?); not marking it done")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--md5", help="the file's MD5 (hex)")
    parser.add_argument("--md5-list", help="URL of a md5sum.txt that lists the file")
    parser.add_argument("--extract", action="store_true", help="unpack the .tar.gz into <dir>")
    parser.add_argument("url")
    parser.add_argument("dir")
    args = parser.parse_args()
    if bool(args.md5) == bool(args.md5_list):
        parser.error("give --md5 or --md5-list (one of them)")
    name = os.path.basename(args.url.rstrip("/"))
    os.makedirs(args.dir, exist_ok=True)
    marker = os.path.join(args.dir, f".{name}.done")
    if os.path.exists(marker):
        print(f"download.py: {name} is done ({marker}); skipping", file=sys.stderr)
        return
    expected = (args.md5 or listed_md5(args.md5_list, name)).lower()
    path = os.path.join(args.dir, name)
    print(f"download.py: {args.url} -> {path}", file=sys.stderr)
    actual = fetch(args.url, path)
    if actual != expected:
        os.remove(path)
        fail(f"{args.url}: MD5 {actual}, expected {expected}: the download is damaged or not the file named "
             "(removed; run again)")
    if args.extract:
        extract(path, args.dir)
        os.remove(path)  # unpacked; the marker records its checksum
    with open(f"{marker}.tmp", "w") as out:
        out.write(f"{actual}  {name}\n")
    os.replace(f"{marker}.tmp", marker)
    print(f"download.py: {name} done (MD5 {actual})", file=sys.stderr)


if __name__ == "__main__":
    main()

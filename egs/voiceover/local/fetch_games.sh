#!/usr/bin/env bash
# Download the voice-over games from Debian main and unpack them (no install; their scummvm
# dependency is not needed):
#   local/fetch_games.sh <games-dir> [package ...]
# The packages default to both games: flight-of-the-amazon-queen (queen.1c, 35 MB) and
# beneath-a-steel-sky (the CD version 0.0372: sky.dsk, sky.dnr, 66 MB).  Leaves
# <games-dir>/usr/share/scummvm/<game>/ and the .deb files in <games-dir>/debs.  A second call with
# the same packages returns at once.  The audio is the games' (freeware, see their copyright files); never commit it.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 <games-dir> [package ...]" >&2; exit 2; }
games="$1"
shift
packages="${*:-flight-of-the-amazon-queen beneath-a-steel-sky}"
marker="$games/.unpacked"
if [ -f "$marker" ] && [ "$(cat "$marker")" = "$packages" ]; then
  echo "$0: $packages already unpacked in $games" >&2
  exit 0
fi
mkdir -p "$games/debs"
cd "$games/debs"
for package in $packages; do
  if ! ls "${package}"_*.deb >/dev/null 2>&1; then
    # apt-get download needs the package lists; refresh them once if it cannot find the package.
    apt-get download "$package" 2>/dev/null || { apt-get update -qq && apt-get download "$package"; } \
      || { echo "$0: cannot download $package from the Debian archive (apt-get download $package)" >&2; exit 1; }
  fi
done
cd - >/dev/null
for package in $packages; do
  dpkg-deb -x "$(ls "$games"/debs/"${package}"_*.deb | tail -1)" "$games"
done
echo "$packages" > "$marker.tmp" && mv "$marker.tmp" "$marker"
echo "$0: unpacked $packages into $games" >&2

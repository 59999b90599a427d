#!/usr/bin/env bash
# luacheck for `make lint`: Debian's lua-check and what it runs on (lua5.1, argparse, lfs), fetched
# with apt-get download and unpacked here with dpkg -x; nothing is installed system-wide.
set -euo pipefail
cd "$(dirname "$0")"
DIR=luacheck
PACKAGES="lua-check lua-argparse lua-filesystem lua5.1 liblua5.1-0"
command -v apt-get >/dev/null && command -v dpkg >/dev/null ||
  { echo "luacheck: apt-get and dpkg are needed to fetch Debian's lua-check" >&2; exit 1; }
rm -rf "$DIR" && mkdir -p "$DIR/debs" "$DIR/root"
fetch() { (cd "$DIR/debs" && apt-get download $PACKAGES >/dev/null 2>&1); }
if ! fetch; then
  [[ $(id -u) == 0 ]] && apt-get update -qq >/dev/null && fetch ||
    { echo "luacheck: apt-get download $PACKAGES failed" >&2; exit 1; }
fi
for deb in "$DIR"/debs/*.deb; do dpkg -x "$deb" "$DIR/root"; done
R=$PWD/$DIR/root
LIB=$(dirname "$(find "$R/usr/lib" -name 'liblua5.1.so.0' | head -1)")  # (the machine's multiarch folder)
LFS=$(dirname "$(find "$R/usr/lib" -path '*/lua/5.1/lfs.so' | head -1)")
cat > "$DIR/luacheck" <<SH
#!/bin/sh
LD_LIBRARY_PATH=$LIB\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH} \\
LUA_PATH="$R/usr/share/lua/5.1/?.lua;$R/usr/share/lua/5.1/?/init.lua" \\
LUA_CPATH="$LFS/?.so" \\
exec $R/usr/bin/lua5.1 $R/usr/bin/luacheck "\$@"
SH
chmod +x "$DIR/luacheck"
"$DIR/luacheck" --version >/dev/null

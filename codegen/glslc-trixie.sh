#!/bin/sh
# glslc-trixie.sh runs Debian trixie's glslc (shaderc 2025.2, glslang 15)
# on any x86-64 Linux, under trixie's own loader and libraries: the
# shaders on cooperative matrix 2 (GL_NV_cooperative_matrix2) need a newer
# glslang than Debian bookworm's glslc 2023.2, which compiles the others.
# On first use it downloads the pinned packages from Debian (the archive,
# then snapshot.debian.org), checks their SHA-256 and unpacks them into
# $WEFT_GLSLC_CACHE (default ~/.cache/weft/glslc-trixie).
# docs/decisions.md: "Shaders on cooperative matrix 2".
set -eu
cache=${WEFT_GLSLC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/weft/glslc-trixie}
# pool path, file, SHA-256
pkgs='s/shaderc glslc_2025.2-1_amd64.deb e05374965709159303041b104d4a26022d6ac5eb8296450364d66ae864a20367
s/shaderc libshaderc1_2025.2-1_amd64.deb 2a67c8f784c65e1aa0d251819c020917405b490fbb543c6a73a52a631e476463
s/spirv-tools spirv-tools_2025.1~rc1-1_amd64.deb 2cc272ef1340cf0b47de6c5fcccaf91574d7a8f4061abb718d6c639463e85aab
g/glibc libc6_2.41-12+deb13u5_amd64.deb b59b0625cd1a791375d40dab23a4d5d3d0641e3d0a773501becdc3725b7f99cf
g/gcc-14 libstdc++6_14.2.0-19_amd64.deb ab1fa05837aa7a92aae748fd07a18a35f7d18bb4a71c4724fe2bbf0e32089de0
g/gcc-14 libgcc-s1_14.2.0-19_amd64.deb 3c71917b490d1a17aed43196a2787a256ecf060526cdb20216a74bedc061b150'
root=$cache/root
if [ ! -x "$root/usr/bin/glslc" ]; then
  if [ "$(uname -m)" != x86_64 ]; then
    echo "glslc-trixie.sh: needs x86-64 Linux (Debian's amd64 packages)" >&2
    exit 1
  fi
  for t in curl dpkg-deb sha256sum; do
    command -v $t >/dev/null || { echo "glslc-trixie.sh: needs $t" >&2; exit 1; }
  done
  mkdir -p "$cache/debs"
  tmp=$(mktemp -d "$cache/root.XXXXXX")
  echo "$pkgs" | while read -r pool file sum; do
    deb=$cache/debs/$file
    if ! echo "$sum  $deb" | sha256sum -c --status 2>/dev/null; then
      echo "glslc-trixie.sh: fetching $file" >&2
      curl -fsSL -o "$deb" "https://deb.debian.org/debian/pool/main/$pool/$file" ||
        curl -fsSL -o "$deb" "https://snapshot.debian.org/archive/debian/20261128T000000Z/pool/main/$pool/$file" ||
        { echo "glslc-trixie.sh: cannot download $file from Debian" >&2; exit 1; }
      echo "$sum  $deb" | sha256sum -c --status || { echo "glslc-trixie.sh: $file: checksum mismatch" >&2; exit 1; }
    fi
    dpkg-deb -x "$deb" "$tmp"
  done || { rm -rf "$tmp"; exit 1; }
  rm -rf "$root"
  mv "$tmp" "$root"
fi
lib=$root/usr/lib/x86_64-linux-gnu
exec "$lib/ld-linux-x86-64.so.2" --library-path "$lib:$root/lib/x86_64-linux-gnu" "$root/usr/bin/glslc" "$@"

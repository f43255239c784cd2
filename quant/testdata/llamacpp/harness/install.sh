#!/bin/sh
# install.sh DIR PREFIX TYPES...: copy harness outputs into weft's testdata
set -e
dir=$1; pre=$2; shift 2
for T in "$@"; do
  cp ${pre}_$T.q $dir/$T.q; cp ${pre}_$T.act $dir/$T.act; cp ${pre}_$T.dot $dir/$T.dot
  sha256sum < ${pre}_$T.deq | cut -d' ' -f1 > $dir/$T.deq.sha
done

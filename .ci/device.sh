#!/bin/bash
# At most 8 files come back from $OUT: 4 bench JSONs, tests, cache, vulkaninfo,
# the GPU profile.
# Vulkan on the GPU machine (../shared/DEVICE.md): loader, validation layer,
# the Vulkan tests, the pipeline cache across two starts, and graphrun bench
# --backend vulkan on TinyLlama-shaped models made there. Prepare with
# `make device-build` here, then run `bash .ci/device.sh` through the device
# tool with carry [".gl", ".vk", "out/dev", "out/shared"]; results land in $OUT.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
mkdir -p /tmp/vk; for f in .vk/*.deb; do dpkg -x $f /tmp/vk; done
export VK_ADD_LAYER_PATH=/tmp/vk/usr/share/vulkan/explicit_layer.d LD_LIBRARY_PATH=/tmp/vk/usr/lib/x86_64-linux-gnu PATH=$PATH:/tmp/vk/usr/bin
vulkaninfo --summary > $OUT/vulkaninfo.txt 2>&1 || true
grep -q NVIDIA $OUT/vulkaninfo.txt || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
ln -sfn $PWD/out/shared ../shared
B=$PWD/out/dev
{
$B/graphrun --list-devices
echo "== vk tests"; (cd backends/vulkan/internal/vk && $B/vk.test 2>&1 | tail -3)
echo "== shader tests"; (cd shaders && $B/shaders.test 2>&1 | tail -15)
echo "== vulkan backend tests"; (cd backends/vulkan && timeout 200 $B/vulkan.test -test.v 2>&1 | grep -E "^(--- |ok|FAIL|PASS)|Error|got" | head -60)
} > $OUT/tests.txt 2>&1
for t in q4_0 q4_k_m q8_0 f16; do
  $B/graphc synth -o /tmp/m_$t.gguf --shape tinyllama-1.1b --type $t 2>&1 | tail -1
done
{
echo "== pipeline cache: two starts of one plan"
$B/graphc compile /tmp/m_q4_0.gguf -o /tmp/q.plan --backend vulkan 2>&1 | tail -1
for i in 1 2; do $B/graphrun /tmp/q.plan --backend vulkan --prompt "Once upon a time" -n 16 --temp 0 --ignore-eos 2>&1 >/dev/null | tail -1; ls -la /tmp/q.plan.vulkan.cache; done
} > $OUT/cache.txt 2>&1
for t in q4_0 q4_k_m q8_0 f16; do
  timeout 120 $B/graphrun bench /tmp/m_$t.gguf --backend vulkan -p 512 -n 128 -r 5 --bandwidth --json > $OUT/bench_$t.json 2> /tmp/bench_$t.err
  tail -c 300 /tmp/bench_$t.err | tr '\r' '\n' | tail -2
done
for t in q4_0 q8_0; do
  WEFT_VULKAN_PROFILE=1 timeout 120 $B/graphrun bench /tmp/m_$t.gguf --backend vulkan -p 512 -n 128 -r 1 2>&1 | grep -A40 "^model\|vulkan profile" | grep -v "^  .*  0\.[0-9]%"
done > $OUT/profile.txt
cat $OUT/cache.txt; cat $OUT/tests.txt | tail -60

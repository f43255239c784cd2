// A quantized block's bytes as whole words, each loaded once: reading a
// block of 18, 22 or 34 bytes as unaligned halves and words (wu16, wu32)
// loads most words twice. The including shader defines wword(s, i).
//
// BW_LOAD(x, n, s, wb) loads the n words of weight s from word wb/4 into
// x (wb: the block's first byte, even). A block that starts 2 bytes into
// its first word is odd: its bytes 2 + 4k .. 5 + 4k are then word k + 1,
// otherwise the high half of word k and the low half of word k + 1
// (BW_AT2), and its first two bytes (a binary16 scale) the high or low
// half of word 0 (BW_D). For a run of bytes that starts at the block's
// parity (BW_LOAD from its first byte), BW_AT0 is its bytes 4k .. 4k+3.
#define BW_LOAD(x, n, s, wb)                            \
    for (uint k_ = 0u; k_ < (n); k_++) {                \
        x[k_] = wword((s), ((wb) >> 2) + k_);           \
    }
#define BW_AT2(x, odd, k) ((odd) ? x[(k) + 1u] : ((x[(k)] >> 16) | (x[(k) + 1u] << 16)))
#define BW_D(x, odd) ((odd) ? (x[0] >> 16) : (x[0] & 0xffffu))
#define BW_AT0(x, odd, k) ((odd) ? ((x[(k)] >> 16) | (x[(k) + 1u] << 16)) : x[(k)])

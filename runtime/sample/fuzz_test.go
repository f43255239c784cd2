package sample

import (
	"encoding/binary"
	"math"
	"testing"
)

// FuzzSample feeds arbitrary logits and parameters: New must reject or
// accept without panicking, and Sample must return an id in range.
func FuzzSample(f *testing.F) {
	f.Add([]byte{0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 192, 127}, uint8(3), float32(0.8), float32(0.9), float32(0.05), float32(1.2))
	f.Fuzz(func(t *testing.T, raw []byte, topK uint8, temp, topP, minP, repeat float32) {
		logits := make([]float32, len(raw)/4)
		for i := range logits {
			logits[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		p := Params{Temp: temp, TopK: int(topK), TopP: topP, MinP: minP,
			RepeatPenalty: repeat, RepeatLastN: 4, PresencePenalty: 0.5, Seed: uint64(len(raw))}
		s, err := New(p, max(1, len(logits)))
		if err != nil {
			return
		}
		for i := range 3 {
			id := s.Sample(logits)
			if len(logits) == 0 {
				if id != -1 {
					t.Fatalf("empty logits gave %d", id)
				}
				return
			}
			if id < 0 || int(id) >= len(logits) {
				t.Fatalf("step %d: id %d outside [0, %d)", i, id, len(logits))
			}
			s.Accept(id)
		}
	})
}

package local

// Feature kinds salt the hash so that, say, the word "ing" and the character
// trigram "ing" are different features.
const (
	kindWord     byte = 'w'
	kindBigram   byte = 'b'
	kindCompound byte = 'c'
	kindCharGram byte = 'g'
	kindClass    byte = 't'
)

const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// featureHash is a fixed, seedless 64-bit hash of (kind, parts...): FNV-1a
// over the bytes with a separator between parts, then a 64-bit finaliser
// (from MurmurHash3) so the low bits used for the bucket are well mixed.
// Being fixed makes vectors identical across processes and releases, which
// stored vectors depend on: changing it is a new model, not a fix.
func featureHash(kind byte, parts ...string) uint64 {
	h := uint64(fnvOffset64)
	h = (h ^ uint64(kind)) * fnvPrime64
	for i, p := range parts {
		if i > 0 {
			h = (h ^ 0x1f) * fnvPrime64 // unit separator, not in any word
		}
		for j := 0; j < len(p); j++ {
			h = (h ^ uint64(p[j])) * fnvPrime64
		}
	}
	return mix64(h)
}

func mix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

package limiter

import "strings"

// clusterSlots is the number of Redis Cluster hash slots.
const clusterSlots = 16384

// KeySlot returns the Redis Cluster hash slot of key: CRC16 (XMODEM) of the
// key, or of its hash tag — the text between the first '{' and the next
// '}', when not empty — modulo 16384, as CLUSTER KEYSLOT computes it.
func KeySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key)) % clusterSlots
}

// groupBySlot splits items by the Redis Cluster slot of key(item), groups
// in order of first appearance and items in order within each.
func groupBySlot[T any](items []T, key func(T) string) [][]T {
	var groups [][]T
	var slots []int
	for _, it := range items {
		slot := KeySlot(key(it))
		g := 0
		for g < len(slots) && slots[g] != slot {
			g++
		}
		if g == len(slots) {
			slots = append(slots, slot)
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], it)
	}
	return groups
}

// crc16 is CRC-16/XMODEM: polynomial 0x1021, initial value 0, no
// reflection, no final xor.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

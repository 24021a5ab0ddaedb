package replica

// highWatermark is the largest offset every ISR member has: the minimum log
// end offset over the ISR. ISR members with no known log end offset count
// as having nothing beyond the current HW, so the HW never jumps ahead of a
// replica it has not heard from; and the HW never moves backwards.
func highWatermark(current, leaderLEO int64, self int32, isr []int32, followerLEO map[int32]int64) int64 {
	hw := leaderLEO
	for _, id := range isr {
		if id == self {
			continue
		}
		leo, ok := followerLEO[id]
		if !ok {
			leo = current
		}
		hw = min(hw, leo)
	}
	return max(hw, current)
}

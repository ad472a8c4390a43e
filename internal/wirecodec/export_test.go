package wirecodec

// Undecodable counts the decoding errors the codec holds for DecodeError.
func Undecodable() int {
	n := 0
	undecodable.Range(func(any, any) bool { n++; return true })
	return n
}

// Lent counts the requests whose recycled messages the codec lent and Release has not taken
// back.
func Lent() int {
	n := 0
	lent.Range(func(any, any) bool { n++; return true })
	return n
}

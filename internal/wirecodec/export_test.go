package wirecodec

// Undecodable counts the decoding errors the codec holds for DecodeError.
func Undecodable() int {
	n := 0
	undecodable.Range(func(any, any) bool { n++; return true })
	return n
}

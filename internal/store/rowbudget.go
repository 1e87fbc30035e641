package store

// rowSize is what a row costs against a read's take (readOpts) when it is
// read whole: its raw values' length.
func rowSize(raw [][]byte) int {
	n := 0
	for _, v := range raw {
		n += len(v)
	}
	return n
}

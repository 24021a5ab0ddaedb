package kafkatools

import (
	"fmt"
	"strconv"
)

func itoa(i int) string { return strconv.Itoa(i) }

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

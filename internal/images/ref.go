package images

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// MaxNameLen is the longest name (registry and repository, without the tag or digest) an image
// reference may have: the distribution specification's bound.
const MaxNameLen = 255

// CheckRef reports whether ref is an image reference pods can name: [registry/]repository with
// an optional :tag and/or @digest, by go-containerregistry's parser (as brakebench names the
// images it builds). A tab, a newline, capitals in the repository or a 100000-character value are
// errors saying what is wrong, not a pod that never pulls.
func CheckRef(ref string) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		// ParseReference says only "could not parse reference"; the tag or digest parser says why.
		why := err
		if strings.Contains(ref, "@") {
			_, why = name.NewDigest(ref)
		} else {
			_, why = name.NewTag(ref)
		}
		if why == nil {
			why = err
		}
		return errors.New(reason(why.Error(), ref))
	}
	if n := len(r.Context().Name()); n > MaxNameLen {
		return fmt.Errorf("the name before the tag or digest is %d characters long; at most %d", n, MaxNameLen)
	}
	return nil
}

// reason is a parser's message without the part of the input it repeats at its end (the caller
// shows the value, cut to a readable length), with control characters escaped: one line.
func reason(msg, ref string) string {
	if i := strings.LastIndex(msg, ": "); i > 0 && strings.Contains(ref, msg[i+2:]) {
		msg = msg[:i]
	}
	q := strconv.Quote(msg)
	return q[1 : len(q)-1]
}

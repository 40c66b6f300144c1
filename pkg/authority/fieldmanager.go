package authority

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultFieldManager is metawatch's write identity unless --field-manager
// names another: the server-side apply field manager every write of the
// rules names, and whose managedFields entry says which keys the rules own.
// The wire and the cache keep that entry alone (wire.StripManagedFields,
// metacache.Options). Each installation writes as a name of its own: two
// installations applying as one manager replace each other's owned set on
// every apply.
const DefaultFieldManager = "metawatch"

// ValidFieldManager checks a field manager name as the API server does
// (at most 128 printable characters), for flag.
func ValidFieldManager(flag, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s is empty: name the field manager this installation writes as, e.g. %s-team-a", flag, DefaultFieldManager)
	case utf8.RuneCountInString(name) > 128:
		return fmt.Errorf("%s %q is %d characters long: the API server takes at most 128", flag, name, utf8.RuneCountInString(name))
	case strings.IndexFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		return fmt.Errorf("%s %q holds a character that is not printable: the API server refuses it", flag, name)
	}
	return nil
}

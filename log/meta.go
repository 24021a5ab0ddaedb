package log

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// StoredBrokerID returns the broker.id recorded in the meta.properties of
// the given log dirs, for a broker configured with broker.id=-1, which keeps
// the id it was first given. found is false when no dir has one yet; dirs
// that disagree are an error, as in Kafka. It reads through fsys (nil: the
// operating system's), the file system the log manager will open the dirs
// on, since the broker asks before the manager exists.
func StoredBrokerID(fsys FS, dirs []string) (id int32, found bool, err error) {
	fsys = fsOrOS(fsys)
	for _, dir := range dirs {
		name := filepath.Join(dir, metaPropertiesFile)
		data, err := fsys.ReadFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return -1, false, fmt.Errorf("read %s: %w", name, err)
		}
		m, err := decodeMetaProperties(data)
		if err != nil {
			return -1, false, fmt.Errorf("%s: %w", name, err)
		}
		if found && m.BrokerID != id {
			return -1, false, fmt.Errorf("%w: log dirs name broker ids %d and %d", ErrInconsistentMeta, id, m.BrokerID)
		}
		id, found = m.BrokerID, true
	}
	return id, found, nil
}

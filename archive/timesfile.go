package archive

import (
	"errors"
	"fmt"
	"os"

	"github.com/joulebench/joulebench/archive/record"
)

// timesFile is the temporary file a run's packed token times are kept in
// while it is evaluated (record.TimesStore): removed at once where the
// system allows an open file to be, else at Close.
type timesFile struct {
	*os.File
	name string // the file's name while it could not be removed
}

// newTimesStore creates a token-times store in a new temporary file in
// dir (the system's temporary directory when empty).
func newTimesStore(dir string) (*record.TimesStore, error) {
	f, err := os.CreateTemp(dir, "joulebench-token-times-*")
	if err != nil {
		return nil, fmt.Errorf("token times: %w", err)
	}
	tf := &timesFile{File: f}
	if os.Remove(f.Name()) != nil {
		tf.name = f.Name()
	}
	return record.NewTimesStore(tf), nil
}

// Size is the file's size.
func (f *timesFile) Size() (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// Close closes the file and removes it if it could not be removed at
// creation.
func (f *timesFile) Close() error {
	err := f.File.Close()
	if f.name != "" {
		err = errors.Join(err, os.Remove(f.name))
	}
	return err
}

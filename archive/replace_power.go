package archive

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/joulebench/joulebench/archive/record"
)

// RePlacePower rewrites the times of power.csv's rows written so far:
// place gives a row's new time from its device and time, or false to keep
// it. A power source on another node's clock streams its samples placed
// with the offset measured at the start; once the offset at the end is
// known, its samples are placed again with the offset interpolated
// between the two (internal/clocksync).
//
// The file is rewritten whole through a temporary file (write, fsync,
// rename): a failure leaves power.csv as it was. A new time that is not
// finite, or that puts a device's sample before its previous one, is an
// error and nothing changes. Rows appended afterwards follow the
// rewritten ones.
func (w *Writer) RePlacePower(place func(device string, t float64) (float64, bool)) error {
	df := w.power
	df.mu.Lock()
	defer df.mu.Unlock()
	if df.closed {
		return fmt.Errorf("%w (%s)", ErrClosed, df.name)
	}
	if err := df.flush(false); err != nil {
		return err
	}
	path := filepath.Join(w.dir, PowerFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("archive: re-place %s: %w", PowerFile, err)
	}
	d := decodePowerCSV(bytes.NewReader(data), PowerFile)
	if d.err != nil {
		return fmt.Errorf("archive: re-place %s: %w", PowerFile, d.err)
	}
	out, changed, err := rePlacedRows(d.rows, place)
	if err != nil || !changed {
		return err
	}
	return df.replace(w.dir, out)
}

// rePlacedRows is power.csv with each row's time given by place; changed
// says whether a time moved.
func rePlacedRows(rows []record.PowerSample, place func(device string, t float64) (float64, bool)) ([]byte, bool, error) {
	out := append(make([]byte, 0, 64*(len(rows)+1)), powerHeader+"\n"...)
	prev := map[string]float64{}
	changed := false
	for i := range rows {
		s := rows[i]
		if t, ok := place(s.Device, s.T); ok && t != s.T {
			if !finite(t) || t < 0 {
				return nil, false, fmt.Errorf("archive: re-place %s: device %s at t=%v: new time %v is not a time", PowerFile, s.Device, s.T, t)
			}
			s.T, changed = t, true
		}
		if p, seen := prev[s.Device]; seen && s.T < p {
			return nil, false, fmt.Errorf("archive: re-place %s: device %s: new time %v is before its previous sample's %v", PowerFile, s.Device, s.T, p)
		}
		prev[s.Device] = s.T
		out = appendPowerRow(out, &s)
	}
	return out, changed, nil
}

// replace makes data the file's content through a temporary file in dir
// and reopens the file for appending. The caller holds df.mu and has
// flushed the buffer.
func (df *dataFile) replace(dir string, data []byte) (err error) {
	tmp, err := os.CreateTemp(dir, "."+df.name+".tmp-*")
	if err != nil {
		return fmt.Errorf("archive: re-place %s: %w", df.name, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("archive: re-place %s: %w", df.name, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("archive: re-place %s: %w", df.name, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("archive: re-place %s: %w", df.name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("archive: re-place %s: %w", df.name, err)
	}
	path := filepath.Join(dir, df.name)
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("archive: re-place %s: %w", df.name, err)
	}
	_ = syncDir(dir)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		// The new content is in place; nothing more can be appended.
		df.f.Close()
		df.closed = true
		return fmt.Errorf("archive: reopen %s: %w", df.name, err)
	}
	df.f.Close()
	df.f = f
	df.bw = bufio.NewWriterSize(f, 64<<10)
	return nil
}

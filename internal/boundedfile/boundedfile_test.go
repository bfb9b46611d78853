package boundedfile

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestReadFileKinds reads every kind of file a path can name. Only a
// regular file within the cap is read; the others are refused by kind or
// size without reading them (a read of /dev/zero or a 1 TiB sparse file
// would exhaust memory, a FIFO without a writer would block for ever).
func TestReadFileKinds(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("devices, FIFOs and sockets are unix files")
	}
	dir := t.TempDir()
	small := filepath.Join(dir, "small.yaml")
	if err := os.WriteFile(small, []byte("name: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	atCap := filepath.Join(dir, "atcap.yaml")
	if err := os.WriteFile(atCap, make([]byte, 64), 0o644); err != nil {
		t.Fatal(err)
	}
	overCap := filepath.Join(dir, "overcap.yaml")
	if err := os.WriteFile(overCap, make([]byte, 65), 0o644); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.yaml")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 40); err != nil { // sparse: takes no disk
		t.Skipf("sparse file: %v", err)
	}
	f.Close()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	devLink := filepath.Join(dir, "zero.yaml")
	if err := os.Symlink("/dev/zero", devLink); err != nil {
		t.Fatal(err)
	}
	smallLink := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(small, smallLink); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling.yaml")
	if err := os.Symlink(filepath.Join(dir, "nothing"), dangling); err != nil {
		t.Fatal(err)
	}
	const limit = 64
	cases := []struct {
		name, path string
		want       error  // errors.Is target; nil: read
		wantText   string // in the message
		wantLen    int
	}{
		{"regular", small, nil, "", 8},
		{"exactly the cap", atCap, nil, "", 64},
		{"symlink to a regular file", smallLink, nil, "", 8},
		{"one byte over the cap", overCap, ErrTooLarge, "65 bytes", 0},
		{"huge sparse file", huge, ErrTooLarge, "1099511627776 bytes", 0},
		{"/dev/zero", "/dev/zero", ErrNotRegular, "a character device", 0},
		{"/dev/null", "/dev/null", ErrNotRegular, "a character device", 0},
		{"symlink to a device", devLink, ErrNotRegular, "a character device", 0},
		{"FIFO", fifo, ErrNotRegular, "a named pipe", 0},
		{"socket", sock, ErrNotRegular, "a socket", 0},
		{"directory", dir, ErrNotRegular, "a directory", 0},
		{"missing", filepath.Join(dir, "none.yaml"), os.ErrNotExist, "none.yaml", 0},
		{"dangling symlink", dangling, os.ErrNotExist, "dangling.yaml", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := Read(c.path, "profile", limit)
			if c.want == nil {
				if err != nil || len(b) != c.wantLen {
					t.Fatalf("Read = %d bytes, %v; want %d bytes", len(b), err, c.wantLen)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("Read error = %v; want %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.wantText) || !strings.Contains(err.Error(), "profile") {
				t.Errorf("error %q does not say %q and the file's role", err, c.wantText)
			}
		})
	}
}

// Open streams the file: it reads again after Rewind, and a file that
// grows past the cap after the checks gives ErrTooLarge, not more bytes.
func TestOpenRewindAndGrowth(t *testing.T) {
	p := filepath.Join(t.TempDir(), "spl.txt")
	if err := os.WriteFile(p, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p, "power file", 16)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for range 2 {
		b, err := io.ReadAll(f)
		if err != nil || string(b) != "0123456789" {
			t.Fatalf("read %q, %v", b, err)
		}
		if err := f.Rewind(); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(p, []byte("0123456789abcdefXYZ"), 0o644); err != nil { // 19 bytes > 16
		t.Fatal(err)
	}
	if _, err := io.ReadAll(f); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "power file") {
		t.Errorf("grown file: %v, want ErrTooLarge naming the file's role", err)
	}
	if _, err := Open("/dev/zero", "power file", 16); !errors.Is(err, ErrNotRegular) {
		t.Errorf("/dev/zero: %v", err)
	}
}

// ReadNoFollow reads a regular file; it refuses a symbolic link even to a
// regular file, and a file over the cap.
func TestReadNoFollow(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need privileges on windows")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "j.json")
	if err := os.WriteFile(file, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadNoFollow(file, "journal", 16); err != nil || string(b) != "{}\n" {
		t.Errorf("regular file: %q, %v", b, err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadNoFollow(link, "journal", 16); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "a symbolic link") {
		t.Errorf("link: %v", err)
	}
	if _, err := ReadNoFollow(file, "journal", 2); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the cap: %v", err)
	}
	if _, err := ReadNoFollow(filepath.Join(dir, "none"), "journal", 2); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

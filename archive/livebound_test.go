package archive_test

import (
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/engines/openai"
)

// The reader's bound on a request's output tokens is the live path's: a
// count the client would have refused as implausible is refused on read,
// and one it accepted is read.
func TestMaxOutputTokensIsTheLivePathsBound(t *testing.T) {
	if archive.MaxOutputTokens != openai.MaxPlausibleTokens {
		t.Errorf("archive.MaxOutputTokens = %d, openai.MaxPlausibleTokens = %d: the reader and the live path must agree", archive.MaxOutputTokens, openai.MaxPlausibleTokens)
	}
}

package workload

import (
	"fmt"
	"strings"
)

// FillCharsPerToken is how FillContext estimates tokens from characters:
// 3 characters a token, conservatively dense (BPE tokenizers give about 4
// for English text), so that a filled prompt holds no more tokens than
// asked for and fits the context it was capped to.
const FillCharsPerToken = 3

// fillInstruction opens every filled prompt: the request is to read a long
// context and answer briefly about it.
const fillInstruction = "Read the following notes, then summarise them in three sentences.\n\n"

// fillWords are the words filled prompts are made of: common, short
// English words, so that tokenizers split them about alike.
var fillWords = strings.Fields(`the river runs past the old mill where a miller kept
bread and grain for the town each spring the water rose and the people
moved their goods to the hill until the flood went down again children
played by the bank and watched boats carry wood stone and wool to the
market in the next valley where traders met every week to sell and buy`)

// CapContextTokens returns the prompt size in tokens that fits a model
// with contextLength tokens of context and maxTokens of output: tokens, or
// contextLength − maxTokens − 16 (room for the chat template) when that is
// smaller. contextLength 0 (unknown) caps nothing. The result is at least
// 1 when tokens is.
func CapContextTokens(tokens, contextLength, maxTokens int) int {
	if contextLength <= 0 || tokens <= 0 {
		return tokens
	}
	room := contextLength - maxTokens - 16
	return max(1, min(tokens, room))
}

// FillText returns about tokens tokens of text (tokens × FillCharsPerToken
// characters, estimated conservatively): the instruction, then words of
// fillWords from position seed on, each note numbered so that prompts of
// the same size differ and a prefix cache cannot serve one from another.
func FillText(tokens int, seed int) string {
	n := tokens * FillCharsPerToken
	var b strings.Builder
	b.Grow(n + 16)
	b.WriteString(fillInstruction)
	for i, note := seed, 1; b.Len() < n; i++ {
		if i%len(fillWords) == 0 || b.Len() == len(fillInstruction) {
			fmt.Fprintf(&b, "Note %d-%d:", seed+1, note)
			note++
		}
		b.WriteByte(' ')
		b.WriteString(fillWords[i%len(fillWords)])
	}
	s := b.String()
	if len(s) > n && n >= len(fillInstruction) {
		s = s[:n] // ASCII only: a byte is a character
	}
	return s
}

// FillContext returns a copy of set whose prompts are replaced by
// generated ones of about tokens tokens each (FillText, one per prompt,
// same ids and max_tokens); the hash covers the new prompts and the size,
// and Source says "<source> filled to N tokens".
func FillContext(set *RequestSet, tokens int) (*RequestSet, error) {
	if tokens < 1 {
		return nil, fmt.Errorf("fill context: %d tokens: want at least 1", tokens)
	}
	out := *set
	out.Prompts = make([]Prompt, len(set.Prompts))
	for i, p := range set.Prompts {
		out.Prompts[i] = Prompt{ID: p.ID, Prompt: FillText(tokens, i), MaxTokens: p.MaxTokens}
	}
	out.Source = fmt.Sprintf("%s filled to %d tokens", set.Source, tokens)
	// The filled lengths are estimated from characters, whatever the set
	// was.
	out.LengthMethod = LengthEstimate
	out.SHA256 = out.canonicalSum(fmt.Sprintf("fill:%d", tokens))
	return &out, nil
}

// EstimateTokens is FillContext's conservative token estimate of a text:
// its characters / FillCharsPerToken, rounded up.
func EstimateTokens(s string) int {
	n := len([]rune(s))
	return (n + FillCharsPerToken - 1) / FillCharsPerToken
}

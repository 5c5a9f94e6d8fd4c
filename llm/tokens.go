package llm

import "unicode/utf8"

// EstimateTokens returns a quick, slightly generous estimate of the tokens
// in s: one per four bytes of ASCII and one per other rune (CJK text runs
// close to a token a character).
func EstimateTokens(s string) int {
	ascii, other := 0, 0
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			ascii++
			i++
			continue
		}
		_, n := utf8.DecodeRuneInString(s[i:])
		i += n
		other++
	}
	return (ascii+3)/4 + other
}

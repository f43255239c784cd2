package chat

import "errors"

// Parse compiles a Jinja chat template. bos and eos are the values of the
// template's bos_token and eos_token.
func Parse(source string, bos, eos string) (*Template, error) {
	return nil, errors.New("jinja templates are not supported yet")
}

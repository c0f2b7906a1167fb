package main

import (
	"io"
	"testing"
)

func TestAuthTokenFlagMirrorsEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{"STUDIO_AUTH_TOKEN": "from-env"}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct {
		name string
		args []string
		env  func(string) string
		want string
	}{
		{"env", nil, getenv, "from-env"},
		{"flag wins", []string{"-auth-token", "from-flag"}, getenv, "from-flag"},
		{"unset", nil, func(string) string { return "" }, ""},
	} {
		cfg, err := parseConfig(tc.args, tc.env, io.Discard)
		if err != nil || cfg.AuthToken != tc.want {
			t.Errorf("%s: AuthToken %q, %v; want %q", tc.name, cfg.AuthToken, err, tc.want)
		}
	}
}
